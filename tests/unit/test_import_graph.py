"""Facts about reprokit's import graph, read from the source (every import statement, at module
level or inside a function):

- no circle among modules;
- no function-local import of a reprokit module unless a comment on its line, or on the line
  above, says why (an optional dependency, a process of its own, a verb loaded only when run);
- the bundle writer, and its atomic publish, are imported only by the spine (reprokit/run/);
- reprokit/common/ imports only the standard library and itself, in Python 3.9's grammar, and the
  in-stack harness imports nothing of reprokit but itself and common/.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "reprokit"


def _modules() -> dict[str, Path]:
    mods = {}
    for p in sorted(PACKAGE.rglob("*.py")):
        name = ".".join(("reprokit", *p.relative_to(PACKAGE).with_suffix("").parts))
        mods[name.removesuffix(".__init__")] = p
    return mods


MODULES = _modules()


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path):
    """(target module, line, inside a function) for each import of a reprokit module."""
    tree = ast.parse(path.read_text())
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]

    def walk(node, inside):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import):
                for alias in child.names:
                    yield _resolve(alias.name), child.lineno, inside
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - child.level + 1] + ([base] if base else []))
                for alias in child.names:
                    yield _resolve(f"{base}.{alias.name}") or _resolve(base), child.lineno, inside
            else:
                yield from walk(child, inside or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)))

    for target, line, inside in walk(tree, False):
        if target and target.startswith("reprokit") and target != module:
            yield target, line, inside


GRAPH = {m: list(_imports(m, p)) for m, p in MODULES.items()}


def test_no_module_imports_itself_back_through_others():
    edges = {m: {t for t, _, _ in imps} for m, imps in GRAPH.items()}
    circles, state = [], {}

    def visit(m, path):
        state[m] = "open"
        for t in sorted(edges.get(m, ())):
            if state.get(t) == "open":
                circles.append(" -> ".join(path[path.index(t):] + [t]))
            elif t not in state:
                visit(t, path + [t])
        state[m] = "done"

    for m in sorted(edges):
        if m not in state:
            visit(m, [m])
    assert circles == []


def test_a_function_local_import_says_why():
    silent = []
    for m, imps in GRAPH.items():
        lines = MODULES[m].read_text().splitlines()
        for target, line, inside in imps:
            said = "#" in lines[line - 1] or lines[line - 2].strip().startswith("#")
            if inside and not said:
                silent.append(f"{MODULES[m].relative_to(PACKAGE.parent)}:{line}: {target}")
    assert silent == []


def test_only_the_spine_reaches_the_bundle_writer():
    writers = sorted(m for m, imps in GRAPH.items() for t, _, _ in imps
                     if t == "reprokit.bundle.writer" and not m.startswith(("reprokit.run.", "reprokit.bundle.")))
    assert writers == []
    # The atomic put-in-place of a capture folder is the spine's own.
    defined = [m for m, p in MODULES.items() if "def _put_in_place" in p.read_text() or "RENAME_EXCHANGE" in p.read_text()]
    assert defined == ["reprokit.run.capture"]


def _all_imports(path: Path) -> set[str]:
    """Every module an import statement names (top-level package for absolute imports)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add(node.module or "")
    return names


def test_common_is_standard_library_only_and_the_harness_imports_nothing_of_the_host():
    common = {m: p for m, p in MODULES.items() if m.startswith("reprokit.common")}
    assert {"reprokit.common.files", "reprokit.common.oracle", "reprokit.common.redact"} <= set(common)
    outside = []
    for m, p in common.items():
        ast.parse(p.read_text(), feature_version=(3, 9))  # the harness runs them on Python 3.9
        for name in _all_imports(p):
            top = name.split(".")[0]
            if not (name.startswith("reprokit.common") or top in sys.stdlib_module_names or name == "__future__"):
                outside.append(f"{m}: {name}")
    assert outside == []
    host = sorted(f"{m} -> {t}" for m, imps in GRAPH.items() if m.startswith("reprokit.harness")
                  for t, _, _ in imps if t != "reprokit" and not t.startswith(("reprokit.harness", "reprokit.common")))
    assert host == []  # (the package itself, reprokit/__init__.py, is its version string alone)


def test_the_graph_is_read_at_all():
    """The facts above hold on a graph that has edges, function-local ones included."""
    assert ("reprokit.run.publish", "reprokit.bundle.writer") in {(m, t) for m in GRAPH for t, _, _ in GRAPH[m]}
    assert any(inside for imps in GRAPH.values() for _, _, inside in imps)
