"""A traced kernel as a file of its own: the kernel, the @jit functions it calls and the
module-level names they use, and nothing of the program around them.

The program's own module cannot be the case's kernel file: a script runs its whole program when
loaded (the harness loads the file to compile it), and imports siblings the bundle lacks. So the
kernel's source is written out with what it reaches: modules it names become imports (a
package's module it reads helpers of, `tle.program_id`, a module of those helpers written beside
it), @jit helpers their source, constants their value. Decorators become a plain `@triton.jit` with the
JIT's own arguments: an autotuner's configs and a heuristic's values are already in each recorded
call, so each case compiles exactly one specialisation.
"""

from __future__ import annotations

import ast
import dis
import hashlib
import inspect
import math
import re
import textwrap
import types

import triton.language as tl

from reprokit.harness.call import to_json


def dtype_name(dtype) -> str:
    """tl.float16 -> "float16", as `triton.language` names it."""
    return to_json(dtype)["dtype"]


def is_jit(obj) -> bool:
    """A @triton.jit object: a JITFunction, or the interpreter's InterpretedFunction."""
    from triton.runtime.jit import JITFunction

    if isinstance(obj, JITFunction):
        return True
    return type(obj).__name__ == "InterpretedFunction" and isinstance(getattr(obj, "fn", None), types.FunctionType)


# The instructions that read a module-level name. `co_names` also holds every attribute the code
# reads (`tl.maximum` puts `maximum` there): a program's own `maximum`, or `sigmoid = Fn.apply`,
# would then be taken for something the kernel uses, copied in or reported left out.
_GLOBAL_LOADS = frozenset({"LOAD_GLOBAL", "LOAD_NAME"})


_MISSING = object()


def source_tree(fn: types.FunctionType) -> ast.Module | None:
    """The function's source, parsed (decorators included); None where it cannot be read."""
    try:
        return ast.parse(textwrap.dedent(inspect.getsource(fn)))
    except (OSError, TypeError, SyntaxError):
        return None


def module_attributes(tree: ast.Module) -> dict:
    """name -> the attributes a function's source reads of it (`tle.program_id(0)` gives
    {"tle": {"program_id"}})."""
    out: dict = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            out.setdefault(node.value.id, set()).add(node.attr)
    return out


def signature_names(tree: ast.Module) -> list:
    """The names a function's `def` line reads: its defaults and annotations are evaluated in
    its module when the `def` runs, never by its body's code (gemlite's `block_quant_size:
    tl.constexpr = BLOCK_QUANT_SIZE`), so the file that holds the copy must define them too."""
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))), None)
    if node is None:
        return []
    a = node.args
    exprs = [*a.defaults, *(d for d in a.kw_defaults if d is not None)]
    exprs += [x.annotation for x in (*a.posonlyargs, *a.args, *a.kwonlyargs) if x.annotation is not None]
    out: list = []
    for e in exprs:
        for n in ast.walk(e):
            if isinstance(n, ast.Name) and n.id not in out:
                out.append(n.id)
    return out


def names_used(code: types.CodeType) -> list:
    """Every module-level name the code (and the code nested in it) reads, in order; not the
    names of attributes (`tl.maximum` reads `tl`)."""
    out = []
    for ins in dis.get_instructions(code):
        if ins.opname in _GLOBAL_LOADS and ins.argval not in out:
            out.append(ins.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            out += [n for n in names_used(const) if n not in out]
    return out


class Extraction:
    """Collects one kernel's reach; `text()` is the file."""

    def __init__(self):
        self.user_modules: dict = {}  # a module of the program's own, by name -> its file: copied beside
        self.stubs: dict = {}         # a package's module the kernel reads helpers of, by its name here
        self.attributes: dict = {}    # name -> the attributes the functions' sources read of it
        self.written: dict = {}       # module name -> text: written beside the kernel's file
        self.imports: list = []
        self.values: list = []
        self.functions: list = []
        self.done: set = set()
        self.skipped: list = []

    def visit(self, fn: types.FunctionType) -> None:
        # A kernel made in a factory or a closure reaches the factory's locals through its
        # cells, as Triton's JIT reads them (`fn.__closure__`): they become module-level names.
        scope = dict(fn.__globals__)
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            try:
                scope[name] = cell.cell_contents
            except ValueError:  # a cell not yet filled: nothing the kernel can use at compile time
                continue
        used = names_used(fn.__code__)
        tree = source_tree(fn)
        if tree is not None:
            for base, attrs in module_attributes(tree).items():
                self.attributes.setdefault(base, set()).update(attrs)
            used += [n for n in signature_names(tree) if n not in used]
        for name in used + [n for n in fn.__code__.co_freevars if n not in fn.__code__.co_names]:
            if name in self.done or name not in scope:
                continue
            self.done.add(name)
            self._one(name, scope[name])

    def _one(self, name: str, value) -> None:
        if isinstance(value, types.ModuleType) and user_module_file(value) is None \
                and value.__name__.split(".")[0] not in _STACK_PACKAGES:
            # A package's module the kernel reads helpers of (FlagGems' `tle.program_id`): what it
            # reads is copied into a module of its own beside the kernel's file (stub_modules), so
            # that the capture, and a replay on another stack, need neither the package nor its
            # import-time setup; the package is imported only where that cannot be done.
            self.stubs[name] = value
            return
        if isinstance(value, types.ModuleType):
            self.imports.append(_import(value.__name__, name))
            own = user_module_file(value)
            if own:
                self.user_modules[value.__name__] = own
        elif (where := home_of(value)) is not None:
            # Triton's own objects are imported from where the program's Triton keeps them, never
            # copied: a libdevice stub (`from triton.language.extra.libdevice import rsqrt`) is
            # dispatched by its module, and a builtin by its decorator; a copy of either is a plain
            # Python function to the compiler ("Unsupported function referenced").
            mod, attr = where
            self.imports.append(f"from {mod} import {attr}" + (f" as {name}" if attr != name else ""))
        elif is_jit(value):
            inner = _jit_fn(value)
            self.visit(inner)
            self.functions.append(function_source(value, inner))
        elif isinstance(value, tl.constexpr):
            inner = value.value
            if isinstance(inner, types.FunctionType) and _has_source(inner):
                # `@tl.constexpr def acc_type(dtype): ...` (FlagGems): the function, then the name
                # bound to it as a constexpr, as the program's decorator bound it
                self.visit(inner)
                self.functions.append(undecorated_source(inner)
                                      + f"\n\n{name} = triton.language.constexpr({inner.__name__})\n")
            elif _writable(inner):
                self.values.append(f"{name} = triton.language.constexpr({_literal(inner)})")
            else:  # an object no Python literal writes down: said left out, never a broken file
                self.skipped.append(name)
        elif isinstance(value, tl.dtype):
            self.values.append(f"{name} = triton.language.{dtype_name(value)}")
        elif value is None or isinstance(value, (bool, int, float, str)):
            self.values.append(f"{name} = {value!r}")
        elif type(value).__name__ == "ConstexprFunction" and isinstance(getattr(value, "fn", None), types.FunctionType) \
                and _has_source(value.fn):
            # `@triton.constexpr_function` / `@gluon.constexpr_function` (3.5+): under its own decorator
            self.visit(value.fn)
            self.functions.append(constexpr_function_source(value.fn))
        elif isinstance(value, (types.FunctionType, type)) and _has_source(value):
            # Plain Python the kernel calls at compile time (a constexpr_function, a helper class).
            if isinstance(value, types.FunctionType):
                self.visit(value)
            self.functions.append(undecorated_source(value))
        else:
            self.skipped.append(name)

    def stub_modules(self) -> None:
        """Each package module the kernel reads helpers of: a module of those helpers, named by
        the package module and a digest of its text, imported under the kernel's name for it; or,
        where a helper cannot be written down (a module, an object, a name it lacks), the package
        module itself."""
        for name, module in sorted(self.stubs.items()):
            text = self._stub(module, sorted(self.attributes.get(name, ())))
            if text is None:
                self.imports.append(_import(module.__name__, name))
                continue
            stem = re.sub(r"\W", "_", module.__name__)
            stub = f"_reprokit_{stem}_{hashlib.sha256(text.encode()).hexdigest()[:8]}"
            self.written[stub] = text
            self.imports.append(_import(stub, name))

    @staticmethod
    def _stub(module: types.ModuleType, attrs: list) -> str | None:
        sub = Extraction()
        for attr in attrs:
            value = getattr(module, attr, _MISSING)
            if value is _MISSING or isinstance(value, types.ModuleType):
                return None
            sub.done.add(attr)
            sub._one(attr, value)
        if not attrs or sub.skipped or sub.stubs or sub.user_modules:
            return None
        return sub.text(f"what {module.__name__} gives the kernel")

    def text(self, origin: str) -> str:
        head = [f'"""{origin}: extracted by reprokit trace (the kernel, the @jit functions it calls, and the',
                'module-level names they use)."""', "", "import triton", "import triton.language"]
        if any(f.startswith("@gluon.") for f in self.functions):
            head.append("from triton.experimental import gluon")
        body = sorted(set(self.imports)) + [""] + self.values
        return "\n".join(head + body + [""] + ["\n" + f for f in self.functions]) + "\n"


def undecorated_source(obj) -> str:
    """A plain function's or class's source from its `def`/`class` line: its decorators name
    things of the program (a logging wrapper, a registry) that the kernel's file does not have,
    and a copy called at compile time needs none of them."""
    text = textwrap.dedent(inspect.getsource(obj))
    node = ast.parse(text).body[0]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.decorator_list:
        return "".join(text.splitlines(keepends=True)[node.lineno - 1:])
    return text


# Packages a stack holds: what comes from them is imported, never copied.
_STACK_PACKAGES = ("triton", "torch", "numpy", "math")


def home_of(value) -> tuple | None:
    """(module, attribute) that a function, class or other object of Triton, torch, numpy or
    math (Triton's own @jit helpers included) is importable as, and is that very object; None
    for anything else (the program's own code, values, modules). Its own `__module__` is tried first; a
    re-export (libdevice's public stubs re-exported by a backend module) is found among the
    stack packages' loaded modules, shortest name first."""
    import sys

    if isinstance(value, (types.ModuleType, tl.constexpr, tl.dtype)):
        return None
    mod = getattr(value, "__module__", None)
    attr = getattr(value, "__qualname__", None) or getattr(value, "__name__", None)
    if not isinstance(mod, str) or not isinstance(attr, str) or mod.split(".")[0] not in _STACK_PACKAGES:
        return None
    if "." not in attr and getattr(sys.modules.get(mod), attr, None) is value:
        return mod, attr
    leaf = attr.rpartition(".")[2]
    for name in sorted((m for m in list(sys.modules) if m.split(".")[0] in _STACK_PACKAGES), key=lambda m: (len(m), m)):
        if getattr(sys.modules.get(name), leaf, None) is value:
            return name, leaf
    return None


def user_module_file(module: types.ModuleType) -> str | None:
    """The file of a top-level, single-file module of the program's own (not installed, not the
    standard library), which the extracted kernel imports and the bundle must carry; else None."""
    import os
    import sysconfig

    path = getattr(module, "__file__", None)
    if not path or "." in module.__name__ or not path.endswith(".py") or os.path.basename(path) == "__init__.py":
        return None
    path = os.path.realpath(path)
    installed = {os.path.realpath(p) for key in ("stdlib", "platstdlib", "purelib", "platlib")
                 for p in [sysconfig.get_paths().get(key)] if p}
    if any(path.startswith(root + os.sep) for root in installed) or "site-packages" in path.split(os.sep):
        return None
    return path


def _jit_fn(obj) -> types.FunctionType:
    return obj.fn


def _has_source(value) -> bool:
    try:
        inspect.getsource(value)
        return True
    except (OSError, TypeError):
        return False


def _import(module: str, name: str) -> str:
    """The line that binds module `module` to `name`."""
    return f"import {module} as {name}" if module != name else f"import {module}"


def _writable(value) -> bool:
    """Whether _literal writes `value` as Python that gives it back (a number, a string, a dtype,
    a tuple of them), not the repr of an object (`<function f at 0x...>`)."""
    if isinstance(value, float):
        return math.isfinite(value)  # repr(inf) is `inf`, a name
    if isinstance(value, tl.dtype) or value is None or isinstance(value, (bool, int, str)):
        return True
    if isinstance(value, (tuple, list)):
        return all(_writable(v) and not isinstance(v, tl.dtype) for v in value)
    return False


def _literal(value) -> str:
    if isinstance(value, tl.dtype):
        return f"triton.language.{dtype_name(value)}"
    return repr(value)


def function_source(jit, fn: types.FunctionType) -> str:
    """The function's own text under a plain `@triton.jit(...)` carrying the JIT's arguments."""
    src = textwrap.dedent(inspect.getsource(fn))
    tree = ast.parse(src)
    node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    lines = src.splitlines()
    body = "\n".join(lines[node.lineno - 1:])
    args = {}
    for key in ("do_not_specialize", "do_not_specialize_on_alignment"):
        v = getattr(jit, key, None) or (getattr(jit, "kwargs", {}) or {}).get(key)
        if v:
            args[key] = list(v)
    for key in ("noinline", "debug"):
        v = getattr(jit, key, None)
        if v is None:
            v = (getattr(jit, "kwargs", {}) or {}).get(key)
        if v:
            args[key] = v
    jit_name = "gluon.jit" if is_gluon(jit) else "triton.jit"
    deco = f"@{jit_name}" if not args else f"@{jit_name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"
    return f"{deco}\n{body}\n"


def is_gluon(jit) -> bool:
    """A Gluon kernel (`@gluon.jit`, triton.experimental.gluon): its own JIT, types and layouts.
    The recorder's stand-in for a decorated kernel says so by `language`."""
    if getattr(jit, "language", None) == "gluon":
        return True
    probe = getattr(jit, "is_gluon", None)
    return bool(probe()) if callable(probe) else False


def constexpr_function_source(fn: types.FunctionType) -> str:
    """A constexpr function's own text under `@triton.constexpr_function` (Gluon's is the same
    object, re-exported)."""
    src = textwrap.dedent(inspect.getsource(fn))
    node = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef))
    return "@triton.constexpr_function\n" + "\n".join(src.splitlines()[node.lineno - 1:]) + "\n"


def extract(kernel) -> tuple:
    """(file text, names left out) for a kernel object (@jit, or @autotune/@heuristics over one)."""
    jit = kernel
    while not is_jit(jit):
        jit = jit.fn
    return extract_function(_jit_fn(jit), jit)[:2]


def extract_function(fn: types.FunctionType, jit) -> tuple:
    """(file text, names left out, the program's own modules it imports: name -> file, the
    modules written for it: name -> text) for a kernel's Python function; `jit` carries the
    decorator's arguments (do_not_specialize, ...)."""
    ex = Extraction()
    ex.done.add(fn.__name__)
    ex.visit(fn)
    ex.stub_modules()
    ex.functions.append(function_source(jit, fn))
    where = f"{inspect.getsourcefile(fn) or '?'}:{fn.__code__.co_firstlineno}"
    return ex.text(f"{fn.__name__} from {_short(where)}"), list(ex.skipped), dict(ex.user_modules), dict(ex.written)


def _short(path: str) -> str:
    """The file's base name: an extracted file never names the host's folders."""
    import os

    return os.path.basename(path)
