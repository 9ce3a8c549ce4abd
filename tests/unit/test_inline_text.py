"""The reproducer's inlined harness code (harness.reprolaunch.inline) is the source's own text,
edited where the syntax tree says: the same bytes whichever Python renders it, and text that
Python 3.9 parses (3.12's ast.unparse writes f-strings with nested quotes that 3.9-3.11 reject)."""

from __future__ import annotations

import ast
import inspect
import sys

from reprokit.harness import reprolaunch, toolbox

_MODULE_SRC = '''
from dataclasses import dataclass
import helpers


@dataclass
class Bound:
    """A bound call: é, non-ASCII before the edits."""
    jf: "Any"   # a comment after a field
    kwargs: dict
    grid: tuple = ()


def use(x: int, *rest: str, scale: float = 2.0, **kw: "dict[str, int]") -> "Bound":
    # a comment on its own line
    name = f"{x!r}: {'é'}"  # trailing comment
    return Bound(helpers.wrap(x), {"s": scale, "n": name}, helpers.grid(
        x,  # inside a call
        scale))
'''


def _module(tmp_path, monkeypatch):
    """The subject as a real module file (inspect reads a class's source from its module's file)."""
    import importlib.util

    (tmp_path / "helpers.py").write_text("def wrap(*a):\n    return a\n\n\ngrid = wrap\n")
    (tmp_path / "inline_subject.py").write_text(_MODULE_SRC, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    spec = importlib.util.spec_from_file_location("inline_subject", tmp_path / "inline_subject.py")
    mod = importlib.util.module_from_spec(spec)
    # dataclass and inspect look the module up; helpers is imported by it
    monkeypatch.setitem(sys.modules, "inline_subject", mod)
    monkeypatch.delitem(sys.modules, "helpers", raising=False)
    spec.loader.exec_module(mod)
    return mod, sys.modules["helpers"]


def test_annotations_go_modules_unqualify_renames_apply_and_comments_go(tmp_path, monkeypatch):
    mod, helpers = _module(tmp_path, monkeypatch)
    text = reprolaunch.inline(mod.Bound, mod.use, modules=(helpers,), rename={"Bound": "CallBound"})
    tree = ast.parse(text)
    cls, fn = tree.body
    assert cls.name == "CallBound"
    assert [ast.unparse(s.annotation) for s in cls.body if isinstance(s, ast.AnnAssign)] == ["object"] * 3
    assert fn.returns is None
    a = fn.args
    assert all(x.annotation is None for x in [*a.args, *a.kwonlyargs, a.vararg, a.kwarg])
    assert "helpers." not in text and "wrap(x)" in text and "grid(" in text
    assert "return CallBound(" in text
    assert "#" not in text
    # the source's own text where nothing was edited: its quotes, its line breaks, its non-ASCII
    assert '''name = f"{x!r}: {'é'}"''' in text
    assert "def use(x, *rest, scale=2.0, **kw):" in text
    assert "grid(\n        x,\n        scale))" in text  # its line breaks (a printed tree has none)
    assert '"""A bound call: é, non-ASCII before the edits."""' in text


def test_a_real_harness_function_keeps_its_own_f_string_quotes():
    """toolbox.one_line has f"{lines[0].rstrip(':')}: {fatal}": printed back from the tree by
    Python 3.12 it became f'{lines[0].rstrip(':')}: {fatal}', a syntax error before 3.12, and the
    templates digest of a bundle made on a 3.12 host was another one."""
    text = reprolaunch.inline(toolbox.one_line)
    source = inspect.getsource(toolbox.one_line)
    line = next(ln.strip() for ln in source.splitlines() if "rstrip(':')" in ln)
    assert line in text
    ast.parse(text, feature_version=(3, 9))


def test_every_launch_script_parses_with_python_3_9_grammar():
    for kind in ("suite", "call", "none"):
        ast.parse(reprolaunch.script(kind), feature_version=(3, 9))
