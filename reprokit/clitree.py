"""The command line as data: every verb (and sub-verb) with its options, read from the argparse
tree that `cli.build_parser()` makes. One walker serves the CLI reference (docs/cli.md), the
bad-argument suite and the user-data suite, so a new verb or option is covered by all three
without editing any of them."""

from __future__ import annotations

import argparse
import inspect
from dataclasses import dataclass

from reprokit.parser import build_parser, takes_list


@dataclass(frozen=True)
class Option:
    """One argument of a verb: its flags (empty for a positional), dest, and what argparse knows
    of its value."""

    flags: tuple[str, ...]
    dest: str
    help: str
    metavar: str | None
    required: bool
    choices: tuple[str, ...] | None
    type_name: str | None  # the `type=` callable's name (Path, int, positive_seconds...), None for str
    takes_value: bool  # False for store_true/store_false/count/help/version
    default: object
    nargs: object
    multiple: bool = False  # takes a list: nargs '+' or '*', or repeatable (action 'append'/'extend')
    type_doc: str = ""  # the first paragraph of the `type=` callable's docstring, if it has one

    @property
    def positional(self) -> bool:
        return not self.flags

    @property
    def name(self) -> str:
        """The longest flag, or the dest of a positional."""
        return max(self.flags, key=len) if self.flags else self.dest


@dataclass(frozen=True)
class Verb:
    """One leaf command, e.g. ("run",) or ("fleet", "submit")."""

    path: tuple[str, ...]
    help: str
    description: str
    epilog: str
    options: tuple[Option, ...]
    parser: argparse.ArgumentParser

    @property
    def name(self) -> str:
        return " ".join(self.path)

    def option(self, flag_or_dest: str) -> Option:
        for o in self.options:
            if flag_or_dest in o.flags or flag_or_dest == o.dest:
                return o
        raise KeyError(f"{self.name}: no option {flag_or_dest}")


_NO_VALUE = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._CountAction,
             argparse._HelpAction, argparse._VersionAction, argparse._StoreConstAction)


def _option(action: argparse.Action) -> Option:
    t = action.type
    type_name = None if t is None or t is str else getattr(t, "__name__", type(t).__name__)
    return Option(
        flags=tuple(action.option_strings), dest=action.dest, help=action.help or "",
        metavar=action.metavar if isinstance(action.metavar, str) else None,
        required=bool(action.required) or not action.option_strings,
        choices=tuple(str(c) for c in action.choices) if action.choices is not None else None,
        type_name=type_name, takes_value=not isinstance(action, _NO_VALUE),
        default=action.default, nargs=action.nargs,
        multiple=takes_list(action),
        type_doc=_first_paragraph(getattr(t, "__doc__", None)) if type_name else "",
    )


def _first_paragraph(doc: str | None) -> str:
    return (inspect.cleandoc(doc).split("\n\n")[0] if doc else "").replace("\n", " ")


def _subparsers(parser: argparse.ArgumentParser) -> argparse._SubParsersAction | None:
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            return a
    return None


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = (), help: str = "") -> list[Verb]:
    """Every leaf verb under `parser`, in the order the parser lists them."""
    sub = _subparsers(parser)
    if sub is None:
        options = tuple(_option(a) for a in parser._actions
                        if not isinstance(a, (argparse._HelpAction, argparse._SubParsersAction)))
        return [Verb(path, help, parser.description or "", parser.epilog or "", options, parser)]
    helps = {c.dest: c.help or "" for c in sub._choices_actions}
    verbs: list[Verb] = []
    for name, child in sub.choices.items():
        verbs.extend(walk(child, (*path, name), helps.get(name, "")))
    return verbs


def verbs() -> list[Verb]:
    """The reprokit command line's leaf verbs."""
    return walk(build_parser())
