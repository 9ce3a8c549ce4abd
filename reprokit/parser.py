"""The command line's shape: every verb's parser (a module of reprokit.commands with
`add_parser(subparsers)`), gathered into one argparse tree whose errors are UsageErrors.
cli.main parses with it; clitree walks it (the CLI reference, the argument suites).
"""

from __future__ import annotations

import argparse
import importlib
import os

from reprokit import __version__
from reprokit.errors import UsageError

VERBS = ("capture", "run", "replay", "diff", "bisect", "bundle", "verify", "sign", "show", "prepare", "stacks",
         "report", "wheelhouse", "fleet",
         "sweep", "trace", "init", "check", "reduce")


def takes_list(action: argparse.Action) -> bool:
    """The argument gathers a list: nargs '+' or '*', or a repeatable option ('append', 'extend')."""
    return action.nargs in ("+", "*") or isinstance(action, (argparse._AppendAction, argparse._ExtendAction))


class _Parser(argparse.ArgumentParser):
    """argparse, but a bad argument is a UsageError like any other: one line, or JSON under --json."""

    def error(self, message: str):
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")

    def parse_known_args(self, args=None, namespace=None):
        # A value given twice to a list-valued argument (nargs '+' or '*', action 'append') is
        # refused by name here, for every verb at once, rather than silently run twice.
        namespace, extras = super().parse_known_args(args, namespace)
        for action in self._actions:
            if takes_list(action):
                seen: set[str] = set()
                for value in getattr(namespace, action.dest, None) or ():
                    key = os.path.normpath(value) if isinstance(value, os.PathLike) else str(value)
                    if key in seen:
                        name = "/".join(action.option_strings) or action.metavar or action.dest
                        self.error(f"argument {name}: {value} is given twice")
                    seen.add(key)
        return namespace, extras


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="reprokit",
        description="Reproducibility bundles for GPU compiler investigations: does this stack emit TMA?",
        epilog="example: reprokit capture --gpu h100 --out /tmp/cap --executor local",
    )
    parser.add_argument("--version", action="version", version=f"reprokit {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for verb in VERBS:
        importlib.import_module(f"reprokit.commands.{verb}").add_parser(sub)
    return parser
