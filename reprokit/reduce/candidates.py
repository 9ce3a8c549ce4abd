"""What a reduction may try next: the AST passes that turn one kernel-and-call (a `State`) into
smaller ones, and how big a state is.

A state is the kernel file's source and the case dict (as canonical JSON), so that a pass may
change both at once: an argument removed from the `@jit` function leaves the call too, a constexpr
fixed in the source leaves the case's constexprs. The passes work on Python's AST, at the level
people read: top-level statements the kernel does not need, statements and whole blocks, an
expression replaced by one of its operands or a constant, unused arguments, helpers inlined,
loops peeled, constexprs fixed, block sizes, `num_warps` and `num_stages` made smaller, and
lists in decorators (autotune configs) cut to one. Every candidate is a valid Python module (it
parses and compiles); whether Triton takes it is for the predicate to find out.

Sizes count the kernel functions the case reaches (its `@jit` function and the helpers it calls
by name), not the file.
"""

from __future__ import annotations

import ast
import copy
import hashlib
import json
import warnings
from dataclasses import dataclass
from typing import Callable, Iterator


@dataclass(frozen=True)
class State:
    source: str        # the kernel file
    case: str          # the case dict, canonical JSON

    @classmethod
    def of(cls, source: str, case: dict) -> State:
        return cls(source, canonical(case))

    def case_dict(self) -> dict:
        return json.loads(self.case)

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        h.update(self.source.encode())
        h.update(b"\0")
        h.update(self.case.encode())
        return h.hexdigest()


@dataclass(frozen=True)
class Candidate:
    state: State
    step: str          # what the pass did, for the progress line and the log


@dataclass(frozen=True)
class Size:
    lines: int
    nodes: int


def canonical(case: dict) -> str:
    return json.dumps(case, sort_keys=True, separators=(",", ":"))


def kernel_ref(case: dict) -> tuple[str, str]:
    """(file, function) of a case: a suite case's `kernel`, or a declared call's top-level keys."""
    k = case.get("kernel") or {}
    return case.get("file") or k["file"], case.get("function") or k["function"]


def _is_call(case: dict) -> bool:
    return isinstance(case.get("call"), dict)


def _functions(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}


def reached(tree: ast.Module, function: str) -> list[ast.FunctionDef]:
    """The function and the module's functions it calls by name, transitively, in file order."""
    funcs = _functions(tree)
    seen: set[str] = set()
    todo = [function]
    while todo:
        name = todo.pop()
        if name in seen or name not in funcs:
            continue
        seen.add(name)
        for n in ast.walk(funcs[name]):
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name):
                todo.append(n.func.id)
    return [f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in seen]


def size(state: State) -> Size:
    """Lines and AST nodes of the kernel functions the case reaches."""
    tree = ast.parse(state.source)
    fns = reached(tree, kernel_ref(state.case_dict())[1])
    lines = sum((f.end_lineno or f.lineno) - min([f.lineno] + [d.lineno for d in f.decorator_list]) + 1 for f in fns)
    return Size(lines, sum(nodes(f) for f in fns))


def nodes(tree: ast.AST) -> int:
    """AST nodes under `tree`, expression contexts (Load, Store: no syntax of their own) left out."""
    return sum(1 for n in ast.walk(tree) if not isinstance(n, ast.expr_context))


# --- the case's side: arguments, constexprs, options -------------------------------------------

def _params(fn: ast.FunctionDef) -> list[ast.arg]:
    return list(fn.args.args)


def _is_constexpr(arg: ast.arg) -> bool:
    a = arg.annotation
    return (isinstance(a, ast.Attribute) and a.attr == "constexpr") or (isinstance(a, ast.Name) and a.id == "constexpr")


def constexprs(case: dict, fn: ast.FunctionDef) -> dict:
    """Constexpr values of the case, by parameter name."""
    if _is_call(case):
        args = case["call"].get("args") or {}
        return {p.arg: args[p.arg] for p in _params(fn) if _is_constexpr(p) and p.arg in args}
    return dict(case.get("constexprs") or {})


def _set_constexpr(case: dict, name: str, value) -> None:
    if _is_call(case):
        case["call"]["args"][name] = value
    else:
        case["constexprs"][name] = value


def _drop_arg(case: dict, name: str) -> None:
    if _is_call(case):
        case["call"].get("args", {}).pop(name, None)
        return
    for key in ("signature", "constexprs"):
        (case.get(key) or {}).pop(name, None)
    if isinstance(case.get("divisible_by_16"), list):
        case["divisible_by_16"] = [n for n in case["divisible_by_16"] if n != name]


def _options(case: dict) -> dict:
    return case["call"].setdefault("options", {}) if _is_call(case) else case


# --- passes ------------------------------------------------------------------------------------

Pass = Callable[[ast.Module, dict, str], Iterator[tuple[str, ast.Module, dict]]]


def _stmt_lists(node: ast.AST) -> Iterator[tuple[ast.AST, str]]:
    """Every statement list under node (bodies, else branches), outermost first."""
    for n in ast.walk(node):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(n, field, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield n, field


def _copy_at(tree: ast.Module, path_fn) -> tuple[ast.Module, ast.AST]:
    t = copy.deepcopy(tree)
    return t, path_fn(t)


def _index(tree: ast.Module) -> list[ast.AST]:
    return list(ast.walk(tree))


def drop_top_level(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """Top-level statements the kernel does not need: other functions, unused imports, docstrings."""
    keep = {f.name for f in reached(tree, fn)}
    others = [i for i, s in enumerate(tree.body) if not (isinstance(s, ast.FunctionDef) and s.name in keep)]
    if len(others) > 1:
        t = copy.deepcopy(tree)
        t.body = [s for i, s in enumerate(t.body) if i not in others]
        yield "drop every top-level statement but the kernel's functions", t, case
    for i in reversed(others):
        t = copy.deepcopy(tree)
        what = type(t.body[i]).__name__
        del t.body[i]
        yield f"drop top-level {what} at line {tree.body[i].lineno}", t, case


def drop_statements(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """Chunks of statements (halves, then quarters, ... then one), and compound statements replaced by their body."""
    names = {f.name for f in reached(tree, fn)}
    nodes = _index(tree)
    for f in [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]:
        for owner, field in list(_stmt_lists(f)):
            k = nodes.index(owner)
            body = getattr(owner, field)
            n = len(body)
            chunk = n
            while chunk >= 1:
                for start in range(n - chunk, -1, -chunk):
                    t = copy.deepcopy(tree)
                    o = _index(t)[k]
                    b = getattr(o, field)
                    del b[start:start + chunk]
                    if not b:
                        if field == "body":
                            b.append(ast.Pass())
                        else:
                            setattr(o, field, [])
                    yield f"drop lines {body[start].lineno}-{body[start + chunk - 1].end_lineno}", t, case
                chunk //= 2
            for i, s in enumerate(body):
                if isinstance(s, (ast.For, ast.While, ast.If, ast.With)):
                    t = copy.deepcopy(tree)
                    b = getattr(_index(t)[k], field)
                    inner = b[i].body
                    b[i:i + 1] = inner
                    yield f"replace the {type(s).__name__.lower()} at line {s.lineno} by its body", t, case


def peel_loops(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """`for v in range(a, ...): body` becomes `v = a; body`: one trip of the loop."""
    nodes = _index(tree)
    names = {f.name for f in reached(tree, fn)}
    for f in [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]:
        for owner, field in list(_stmt_lists(f)):
            k = nodes.index(owner)
            for i, s in enumerate(getattr(owner, field)):
                if not (isinstance(s, ast.For) and isinstance(s.iter, ast.Call) and s.iter.args
                        and isinstance(s.iter.func, (ast.Name, ast.Attribute))
                        and getattr(s.iter.func, "id", getattr(s.iter.func, "attr", "")) in ("range", "static_range")):
                    continue
                t = copy.deepcopy(tree)
                b = getattr(_index(t)[k], field)
                loop = b[i]
                args = loop.iter.args
                first = args[0] if len(args) > 1 else ast.Constant(0)
                b[i:i + 1] = [ast.Assign(targets=[loop.target], value=first, lineno=loop.lineno)] + loop.body
                yield f"peel the loop at line {s.lineno}", t, case


def _replacements(node: ast.expr, params: list[str], local: set[str]) -> list[tuple[str, ast.expr]]:
    out: list[tuple[str, ast.expr]] = []
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
        if node.id in local:
            out.append(("0", ast.Constant(0)))
        if node.id in params:  # another argument of the kernel: the one left may then go
            out += [(p, ast.Name(p, ast.Load())) for p in params if p != node.id]
    if isinstance(node, ast.BinOp):
        out += [("left operand", node.left), ("right operand", node.right)]
    elif isinstance(node, ast.BoolOp):
        out += [(f"operand {i}", v) for i, v in enumerate(node.values)]
    elif isinstance(node, ast.UnaryOp):
        out.append(("operand", node.operand))
    elif isinstance(node, ast.IfExp):
        out += [("then value", node.body), ("else value", node.orelse)]
    elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
        out.append(("subscripted value", node.value))
    if isinstance(node, ast.Call):
        # a call whose result is what a nested call gives: `store(d, load(d, ...), o)` -> `load(d, ...)`
        out += [(f"its argument {i}", a) for i, a in enumerate(node.args) if isinstance(a, ast.Call)]
    zeros = _zero_block(node)
    if zeros is not None:
        out.append(("a zero block of its shape and type", zeros))
    if isinstance(node, ast.Call) and node.keywords:
        for i in range(len(node.keywords)):
            c = copy.deepcopy(node)
            del c.keywords[i]
            out.append((f"call without {node.keywords[i].arg}=", c))
    if isinstance(node, (ast.BinOp, ast.Call, ast.Subscript, ast.Attribute)) and isinstance(node.ctx if hasattr(node, "ctx") else ast.Load(), ast.Load):
        out.append(("0", ast.Constant(0)))
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool) and node.value not in (0, 1):
        out += [("0", ast.Constant(0)), ("1", ast.Constant(1))]
        if node.value > 2 and node.value & (node.value - 1) == 0:
            out.append((str(node.value // 2), ast.Constant(node.value // 2)))
    return out


# Loads whose call names the block's shape and type: (position of shape, of dtype) among the arguments.
BLOCK_LOADS = {"_experimental_descriptor_load": (2, 3)}


def _zero_block(node: ast.expr) -> ast.expr | None:
    """`tl.zeros(shape, dtype)` for a load that names its block's shape and type
    (`tl._experimental_descriptor_load(d, offsets, shape, dtype)`): what consumes the block stays,
    the load and its descriptor go. None for any other expression."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name) and node.func.attr in BLOCK_LOADS):
        return None
    at = BLOCK_LOADS[node.func.attr]
    given = {k.arg: k.value for k in node.keywords}
    shape, dtype = (node.args[i] if len(node.args) > i else given.get(name) for i, name in zip(at, ("shape", "dtype")))
    if shape is None or dtype is None:
        return None
    return ast.Call(ast.Attribute(ast.Name(node.func.value.id, ast.Load()), "zeros", ast.Load()),
                    [copy.deepcopy(shape), copy.deepcopy(dtype)], [])


def simplify_expressions(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """An expression replaced by one of its operands or by a constant; a call without one keyword."""
    names = {f.name for f in reached(tree, fn)}
    nodes = _index(tree)
    for f in [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in names]:
        params = [a.arg for a in f.args.args]
        local = {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        for stmt in ast.walk(f):
            if not isinstance(stmt, ast.stmt) or isinstance(stmt, ast.FunctionDef):
                continue
            for parent in ast.walk(stmt):
                for field, value in ast.iter_fields(parent):
                    if field == "func" or (isinstance(parent, ast.Attribute) and field == "value"):
                        continue  # `0(...)` or `0.attr` is no candidate
                    items = value if isinstance(value, list) else [value]
                    for j, child in enumerate(items):
                        if not isinstance(child, ast.expr) or isinstance(getattr(child, "ctx", None), ast.Store):
                            continue
                        for what, new in _replacements(child, params, local):
                            t = copy.deepcopy(tree)
                            p = _index(t)[nodes.index(parent)]
                            if isinstance(value, list):
                                getattr(p, field)[j] = copy.deepcopy(new)
                            else:
                                setattr(p, field, copy.deepcopy(new))
                            yield f"line {child.lineno}: {ast.unparse(child)[:40]} -> {what}", t, case


def drop_unused_args(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """A parameter of the kernel that its body never reads, gone from the function and the call."""
    f = _functions(tree).get(fn)
    if f is None:
        return
    used = {n.id for n in ast.walk(f) if isinstance(n, ast.Name)}
    for i, p in enumerate(_params(f)):
        if p.arg in used:
            continue
        t = copy.deepcopy(tree)
        del _functions(t)[fn].args.args[i]
        c = copy.deepcopy(case)
        _drop_arg(c, p.arg)
        yield f"drop the unused argument {p.arg}", t, c


class _Subst(ast.NodeTransformer):
    def __init__(self, names: dict):
        self.names = names

    def visit_Name(self, node: ast.Name):
        if isinstance(node.ctx, ast.Load) and node.id in self.names:
            return ast.copy_location(copy.deepcopy(self.names[node.id]), node)
        if node.id in self.names and isinstance(self.names[node.id], ast.Name):
            return ast.copy_location(ast.Name(self.names[node.id].id, node.ctx), node)
        return node


def fix_constexprs(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """A constexpr parameter replaced by its value in the body, and gone from the call."""
    f = _functions(tree).get(fn)
    if f is None:
        return
    values = constexprs(case, f)
    for i, p in enumerate(_params(f)):
        v = values.get(p.arg)
        if p.arg not in values or not isinstance(v, (int, float, bool)):
            continue
        t = copy.deepcopy(tree)
        g = _functions(t)[fn]
        del g.args.args[i]
        g.body = [_Subst({p.arg: ast.Constant(v)}).visit(s) for s in g.body]
        c = copy.deepcopy(case)
        _drop_arg(c, p.arg)
        yield f"fix {p.arg} = {v!r}", t, c


def smaller_sizes(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """Block sizes (power-of-two constexprs) halved, num_warps halved, num_stages one less."""
    f = _functions(tree).get(fn)
    if f is not None:
        for name, v in sorted(constexprs(case, f).items()):
            if isinstance(v, int) and not isinstance(v, bool) and v >= 2 and v & (v - 1) == 0:
                c = copy.deepcopy(case)
                _set_constexpr(c, name, v // 2)
                yield f"{name} {v} -> {v // 2}", tree, c
    opts = _options(case)
    for key, smaller in (("num_warps", lambda w: w // 2), ("num_stages", lambda s: s - 1)):
        v = opts.get(key)
        if isinstance(v, int) and smaller(v) >= 1:
            c = copy.deepcopy(case)
            _options(c)[key] = smaller(v)
            yield f"{key} {v} -> {smaller(v)}", tree, c


def cut_decorator_lists(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """Lists in the kernel's decorators (autotune configs, keys) cut to their first element."""
    funcs = _functions(tree)
    if fn not in funcs:
        return
    nodes = _index(tree)
    for d in funcs[fn].decorator_list:
        for n in ast.walk(d):
            if isinstance(n, ast.List) and len(n.elts) > 1:
                t = copy.deepcopy(tree)
                lst = _index(t)[nodes.index(n)]
                assert isinstance(lst, ast.List)
                lst.elts[1:] = []
                yield f"line {n.lineno}: a decorator's list of {len(n.elts)} cut to one", t, case


def inline_helpers(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """`x = helper(args)` (or a tuple target) where the helper is a module function whose body
    ends in its only `return`: the helper's body, its names prefixed, put in place of the call."""
    funcs = _functions(tree)
    nodes = _index(tree)
    for f in reached(tree, fn):
        for owner, field in list(_stmt_lists(f)):
            for i, s in enumerate(getattr(owner, field)):
                if not (isinstance(s, ast.Assign) and isinstance(s.value, ast.Call)
                        and isinstance(s.value.func, ast.Name) and s.value.func.id in funcs
                        and s.value.func.id != fn and not s.value.keywords):
                    continue
                h = funcs[s.value.func.id]
                rets = [n for n in ast.walk(h) if isinstance(n, ast.Return)]
                if len(rets) != 1 or h.body[-1] is not rets[0] or rets[0].value is None \
                        or len(s.value.args) != len(h.args.args):
                    continue
                stored = {n.id for n in ast.walk(h) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
                local = {a.arg for a in h.args.args} | stored
                ren: dict = {n: ast.Name(f"{h.name.strip('_')}_{n}", ast.Load()) for n in sorted(local)}
                body: list = []
                for a, v in zip(h.args.args, s.value.args):
                    if isinstance(v, (ast.Name, ast.Constant)) and a.arg not in stored:
                        ren[a.arg] = v  # read-only parameter given a name or constant: used as it is
                    else:
                        body.append(ast.Assign(targets=[ast.Name(ren[a.arg].id, ast.Store())], value=copy.deepcopy(v),
                                               lineno=s.lineno))
                body += [_Subst(ren).visit(copy.deepcopy(x)) for x in h.body[:-1]]
                body.append(ast.Assign(targets=s.targets, value=_Subst(ren).visit(copy.deepcopy(rets[0].value)),
                                       lineno=s.lineno))
                t = copy.deepcopy(tree)
                b = getattr(_index(t)[nodes.index(owner)], field)
                b[i:i + 1] = body
                yield f"inline {h.name} at line {s.lineno}", t, case


def inline_variables(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """A variable assigned once and read once: its value put where it is read, the assignment gone."""
    nodes_ = _index(tree)
    for f in reached(tree, fn):
        stores: dict[str, list] = {}
        loads: dict[str, list] = {}
        for n in ast.walk(f):
            if isinstance(n, ast.Name):
                (stores if isinstance(n.ctx, ast.Store) else loads).setdefault(n.id, []).append(n)
        for owner, field in list(_stmt_lists(f)):
            for i, s in enumerate(getattr(owner, field)):
                if not (isinstance(s, ast.Assign) and len(s.targets) == 1 and isinstance(s.targets[0], ast.Name)):
                    continue
                name = s.targets[0].id
                if len(stores.get(name, [])) != 1 or len(loads.get(name, [])) != 1:
                    continue
                use = loads[name][0]
                t = copy.deepcopy(tree)
                idx = _index(t)
                new_use = idx[nodes_.index(use)]
                value = copy.deepcopy(s.value)
                for p in ast.walk(t):
                    for fld, v in ast.iter_fields(p):
                        if v is new_use:
                            setattr(p, fld, value)
                        elif isinstance(v, list) and any(x is new_use for x in v):
                            v[[id(x) for x in v].index(id(new_use))] = value
                del getattr(idx[nodes_.index(owner)], field)[i]
                yield f"inline the variable {name} (line {s.lineno})", t, case


def lower_rank(tree: ast.Module, case: dict, fn: str) -> Iterator[tuple[str, ast.Module, dict]]:
    """One dimension less: element i dropped from every list or tuple literal of one length in the
    kernel functions at once (a tile's offsets, block shape and strides keep agreeing), e.g.
    `load(d, [0, 0], [1, 4])` -> `load(d, [0], [4])`."""
    names = {f.name for f in reached(tree, fn)}
    nodes = _index(tree)
    literals = [n for f in tree.body if isinstance(f, ast.FunctionDef) and f.name in names
                for n in ast.walk(f) if isinstance(n, (ast.List, ast.Tuple)) and isinstance(n.ctx, ast.Load)]
    for length in sorted({len(n.elts) for n in literals if len(n.elts) >= 2}, reverse=True):
        group = [nodes.index(n) for n in literals if len(n.elts) == length]
        for i in range(length):
            t = copy.deepcopy(tree)
            idx = _index(t)
            for k in group:
                literal = idx[k]
                assert isinstance(literal, (ast.List, ast.Tuple))  # the same walk over a copy
                del literal.elts[i]
            yield f"every {length}-element literal without element {i}", t, case


# Bigger cuts first: a pass that removes a block saves the compiles of the passes after it.
PASSES: tuple[Pass, ...] = (drop_top_level, drop_statements, peel_loops, inline_helpers, inline_variables, drop_unused_args,
                            fix_constexprs, cut_decorator_lists, simplify_expressions, lower_rank, smaller_sizes)


def candidates(state: State) -> Iterator[Candidate]:
    """Every candidate one pass step away from `state`, in a fixed order, each a valid module
    that still defines the kernel, none equal to the state or to an earlier one."""
    case = state.case_dict()
    fn = kernel_ref(case)[1]
    tree = ast.parse(state.source)
    seen = {state.digest}
    for p in PASSES:
        for step, t, c in p(tree, case, fn):
            ast.fix_missing_locations(t)
            try:
                src = ast.unparse(t) + "\n"
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")  # `0[...]` and the like: compile() warns, the check refuses
                    compile(src, "<candidate>", "exec")
            except (SyntaxError, ValueError, TypeError, RecursionError):
                continue  # not a valid module: never worth a compile
            new = State.of(src, c)
            if new.digest in seen or fn not in _functions(ast.parse(src)):
                continue
            seen.add(new.digest)
            yield Candidate(new, step)


def normalised(state: State) -> State:
    """The state as the passes print it (ast.unparse): comments and layout gone, nothing else."""
    return State(ast.unparse(ast.parse(state.source)) + "\n", state.case)
