"""Which pointer parameters a kernel only writes: read from its source with `ast`, so that the
tensors a trace keeps as a launch's inputs hold zeros for them, not whatever uninitialised memory
(`torch.empty`: old heap contents, pointers included) the program handed the kernel.

Conservative by design: a parameter is write-only when every use of it, or of a name computed
from it, is address arithmetic that ends as the pointer of a `tl.store`. Anything else (a load,
an atomic, a descriptor, a helper call, a branch on it) counts as a read, and its bytes are kept.
Standard library only: it runs inside the traced program.
"""

from __future__ import annotations

import ast
import inspect
import textwrap


def write_only(fn) -> frozenset:
    """The parameters of the @jit function `fn` it only stores to; empty when its source cannot
    be read or parsed."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError, RecursionError):
        return frozenset()
    func = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if func is None:
        return frozenset()
    try:
        return _analyse(func)
    except RecursionError:
        return frozenset()


def _analyse(func) -> frozenset:
    a = func.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    parents: dict = {}
    for node in ast.walk(func):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    # name -> the parameters it is computed from (flow-insensitive: every assignment counts)
    derived = {p: {p} for p in params}
    assigns = [n for n in ast.walk(func) if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.For,
                                                             ast.NamedExpr))]
    changed = True
    while changed:
        changed = False
        for n in assigns:
            value = n.iter if isinstance(n, ast.For) else n.value
            if value is None:
                continue
            sources = set().union(*(derived.get(x.id, set()) for x in ast.walk(value)
                                    if isinstance(x, ast.Name) and not _typed(x, parents)))
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            for t in targets:
                for name in (x.id for x in ast.walk(t) if isinstance(x, ast.Name)):
                    if not sources <= derived.setdefault(name, set()):
                        derived[name] |= sources
                        changed = True
    read: set[str] = set()
    stored: set[str] = set()
    for node in ast.walk(func):
        if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load) or not derived.get(node.id):
            continue
        use = _use(node, parents)
        (stored if use == "store" else read if use == "read" else set()).update(derived[node.id])
    return frozenset(p for p in params if p in stored and p not in read)


def _typed(node, parents) -> bool:
    """The name only asks its type (`out.dtype`, `out.type`): a compile-time fact, no memory."""
    parent = parents.get(node)
    return isinstance(parent, ast.Attribute) and parent.value is node and parent.attr in ("dtype", "type")


def _use(node, parents) -> str:
    """"store" when the name is (inside) the pointer of a tl.store, "derive" when it is inside the
    value of an assignment with no call between, "type" when only its type is asked
    (`out.dtype.element_ty`: no memory is touched), else "read"."""
    if _typed(node, parents):
        return "type"
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.Call):
            func = parent.func
            is_store = isinstance(func, ast.Attribute) and func.attr == "store" and child is not func
            pointer = parent.args[0] if parent.args else next(
                (k.value for k in parent.keywords if k.arg == "pointer"), None)
            return "store" if is_store and child is pointer else "read"
        if isinstance(parent, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            return "derive" if child is parent.value else "read"
        if isinstance(parent, ast.keyword):
            # `tl.store(pointer=..., value=...)`
            call = parents.get(parent)
            if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "store" \
                    and parent.arg == "pointer":
                return "store"
            return "read"
        if isinstance(parent, (ast.stmt, ast.comprehension)):
            return "read"
        child, parent = parent, parents.get(parent)
    return "read"
