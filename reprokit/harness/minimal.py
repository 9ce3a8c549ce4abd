"""Minimal reproducers: a case as a maintainer wants it in an issue, in the fewest lines.

`minimal_source(case, plan, kernel_source)` keeps only the case's kernel, the `@jit` functions
and module-level names it uses, the imports those need, and its compile written out literally
in the ASTSource form of the release that made the bundle. No options, no oracle (the full
`reproducer.py` beside it judges), no reprokit import: `python minimal.py` prints what the
compiler emitted for TMA at each level. Pure stdlib, free of Triton at import.
"""

from __future__ import annotations

import ast

FILE_NAME = "minimal.py"
ARTIFACT = "minimal_py"

# What the script counts per level: the TMA data movement a maintainer looks for first.
_MARKS = (("ttgir", "async_tma"), ("ptx", "cp.async.bulk.tensor"))


def minimal_source(case: dict, plan: dict, kernel_source: str, *, form: str) -> str:
    """The minimal script of one Triton case (`form`: "index", "hints" or "constexprs", the
    release's ASTSource form). Deterministic: the same arguments give the same text."""
    tree = ast.parse(kernel_source)
    fn = case["kernel"]["function"]
    kept = _needed(tree, fn)
    profile = plan["profile"]
    version = (plan.get("stack") or {}).get("triton") or ""
    lines = [f'"""{case["id"]} on Triton {version or "(unknown)"}, compiled for {profile["key"]} '
             f'({profile.get("arch") or "sm_%d" % profile["capability"]}): expected {case.get("expect", "tma")}."""',
             "import triton", "import triton.language as tl"]
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and node in kept:
            text = ast.get_source_segment(kernel_source, node)
            if text is not None and text not in lines:
                lines.append(text)
    lines += _compile_imports(form)
    for node in tree.body:
        if node in kept and not isinstance(node, (ast.Import, ast.ImportFrom)):
            start = min([node.lineno, *[d.lineno for d in getattr(node, "decorator_list", [])]])
            src = kernel_source.splitlines()[start - 1:node.end_lineno]
            lines += ["", "", *src] if isinstance(node, ast.FunctionDef) else ["", *src]
    lines += ["", "", *_compile_lines(case, fn, _params(tree, fn), form, profile["capability"])]
    return "\n".join(lines) + "\n"


def _params(tree: ast.Module, fn: str) -> list[str]:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == fn:
            a = node.args
            return [p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]]
    raise ValueError(f"the kernel source defines no function {fn!r}")


def _bound(node: ast.stmt) -> set[str]:
    if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
        return {node.name}
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in node.names}
    if isinstance(node, (ast.Assign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return set()


def _needed(tree: ast.Module, fn: str) -> set[ast.stmt]:
    """The top-level statements `fn` needs: itself, what it names, and so on."""
    binders: dict[str, ast.stmt] = {}
    for node in tree.body:
        for name in _bound(node):
            binders.setdefault(name, node)
    if fn not in binders:
        raise ValueError(f"the kernel source defines no function {fn!r}")
    kept, todo = set(), [binders[fn]]
    while todo:
        node = todo.pop()
        if node in kept:
            continue
        kept.add(node)
        for n in ast.walk(node):
            if isinstance(n, ast.Name) and n.id in binders and binders[n.id] not in kept:
                todo.append(binders[n.id])
    return kept


def _compile_imports(form: str) -> list[str]:
    out = ["from triton.backends.compiler import GPUTarget", "from triton.compiler import ASTSource"]
    if form != "constexprs":
        out.append("from triton.compiler.compiler import AttrsDescriptor")
    return out


def _compile_lines(case: dict, fn: str, names: list[str], form: str, capability: int) -> list[str]:
    """The ASTSource call of the case, written out literally in the release's form."""
    sig, consts, div = case["signature"], case.get("constexprs", {}), case.get("divisible_by_16", [])
    idx = {a: names.index(a) for a in names}
    if form == "constexprs":
        args = [repr({a: "constexpr" if a in consts else sig[a] for a in names}), f"constexprs={consts!r}",
                "attrs={" + ", ".join(f"({idx[a]},): [['tt.divisibility', 16]]" for a in div) + "}"]
    elif form == "hints":
        args = [repr({a: sig[a] for a in names if a not in consts}), f"constants={consts!r}",
                "attrs=AttrsDescriptor.from_hints({" + ", ".join(f"{idx[a]}: 16" for a in div) + "})"]
    elif form == "index":
        args = [repr({idx[a]: "constexpr" if a in consts else sig[a] for a in names}),
                "constants={" + ", ".join(f"{idx[a]}: {v!r}" for a, v in consts.items()) + "}",
                "attrs=AttrsDescriptor(divisible_by_16=" + ("{" + ", ".join(str(idx[a]) for a in div) + "}"
                                                            if div else "set()") + ")"]
    else:
        raise ValueError(f"unknown ASTSource form {form!r}")
    out = [f"src = ASTSource({fn}, {args[0]},", f"                {args[1]},", f"                {args[2]})",
           f"k = triton.compile(src, target=GPUTarget(\"cuda\", {capability}, 32),",
           f"                   options={{\"num_warps\": {case['num_warps']}, \"num_stages\": {case['num_stages']}}})"]
    out += [f"print(\"{lvl}: {mark} x\", k.asm[\"{lvl}\"].count(\"{mark}\"))" for lvl, mark in _MARKS]
    return out
