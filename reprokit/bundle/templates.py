"""The digest of the templates that write a bundle's text: manifest.json's `templates_sha256`,
beside the `reprokit` version (which stays 0.1.0 while the code moves on).

A bundle is stale when the code that writes it has changed since: its reproducers
(reprokit.harness.reproducer, minimal and reprolaunch, with everything they inline) and its
README (reprokit.bundle.readme). The digest is taken over what those templates *write* for a
fixed input (every case of the built-in suite for an H100, and a fixed README), not over their
source files: a refactoring that writes the same text keeps it, a changed template changes it.
`make examples` remakes the committed examples whose digest is not the code's
(tests/unit/test_examples_current.py says which).
"""

from __future__ import annotations

import ast
import functools
import hashlib

from reprokit.bundle import readme
from reprokit.config import builtin_root, load_config
from reprokit.harness.reproducer import Reproducers
from reprokit.suite import build_plan, load_suite

# The fixed input the digest renders: the suite as an H100 plan for one stack.
STACK = {"name": "triton-3.6-cu130", "triton": "3.6.0"}
_README_MANIFEST = {
    "stack": STACK, "profile": {"key": "h100", "name": "NVIDIA H100 80GB HBM3", "arch": "sm_90"},
    "suite": "tma-controls", "mode": "compile-only", "executor": {"name": "venv"}, "created": "1970-01-01T00:00:00Z",
    "reprokit": "-", "parent": None, "share": {"applied": False}, "redaction": {},
}


@functools.lru_cache(maxsize=1)
def _rendered() -> tuple:
    """((case id, full reproducer or None, minimal or None), ...) for the fixed input, and the README."""
    root = builtin_root()
    plan = build_plan(load_config(root / "stacks.toml").gpu("h100"), dict(STACK),
                      suite=load_suite(root / "kernels" / "suite.toml")).to_json()
    scripts = Reproducers.from_dir(plan, str(root / "kernels"))
    out = []
    for case in plan["cases"]:
        full = _text(scripts, case["id"])
        out.append((case["id"], full, scripts.minimal(case["id"]) if full else None))
    return tuple(out), readme.render("bundle", manifest=_README_MANIFEST, results={"cases": []}, env={})


@functools.lru_cache(maxsize=1)
def templates_sha256() -> str:
    """sha256 over the suite's reproducers (full and minimal) and a fixed README, in case order.
    The suite is the one this package came with, never REPROKIT_ROOT's: it is the fixed input."""
    scripts, text_of_readme = _rendered()
    h = hashlib.sha256()
    for cid, full, minimal in scripts:
        for text in (full, minimal):
            h.update(f"{cid}\0{len(text or '')}\0".encode() + (text or "").encode())
    h.update(text_of_readme.encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def template_words() -> frozenset:
    """The names the code of reprokit's own reproducers uses for the fixed input (modules,
    attributes, functions, arguments: `triton`, `torch`, `cuda`, `float16`), not their prose: a
    host or user name among them is also a word of every bundle's code (bundle.redact.content_words)."""
    words: set = set()
    for _, full, minimal in _rendered()[0]:
        for text in (full, minimal):
            if not text:
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Name):
                    words.add(node.id)
                elif isinstance(node, ast.Attribute):
                    words.add(node.attr)
                elif isinstance(node, ast.alias):
                    words.update(node.name.split("."))
                elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                    words.add(node.name)
                elif isinstance(node, ast.arg):
                    words.add(node.arg)
                elif isinstance(node, ast.keyword) and node.arg:
                    words.add(node.arg)
    return frozenset(words)


def _text(scripts, case_id: str) -> str | None:
    try:
        return scripts.text(case_id)
    except (ValueError, SyntaxError):  # a case with no reproducer (as reproducer.write_all skips it)
        return None
