"""The specialisation Triton's JIT gives one call of a kernel, derived the way the running release
derives it: signature, constexprs, divisibility hints and options, with no GPU and no driver.

This is the one place that knows each release's JIT key. `reprokit trace` calls it on the live
arguments of every launch (under the interpreter, where Triton's own JIT hooks never fire, it is
the only source of the specialisation; on a GPU it keeps both paths alike); a declared "call"
case (docs/user-cases.md) calls it on stand-ins built from the call's metadata (`standins`).

How each release does it (read from its `python/triton/runtime/jit.py`):

- 3.3 and later: `create_function_from_signature(sig, params, backend)` makes a binder whose
  third element per argument is `specialize_impl` (Python in 3.3-3.4, `native_specialize_impl`
  in C++ from 3.5): ("*fp16", "D") for a 16-byte aligned pointer, ("i32", "D") for an int
  divisible by 16, ("constexpr", 1) for an int equal to 1, ("constexpr", None) for None,
  ("tensordesc<...>", ...) for a host TensorDescriptor. The constexprs and attrs then follow
  `JITFunction._pack_args` (3.5+) or the same lines inlined in `run` (3.3-3.4).
- 3.0-3.1: the binder returns (bound, sig_and_spec, constexpr_vals, non_constexpr_vals,
  excess_kwargs); `_get_config` gives divisible_by_16 (pointers by data_ptr() % 16, ints by
  value, None) and equal_to_1; ints equal to 1 and None arguments become constants.
- 3.2: the 3.0 binder with `backend.get_attrs_descriptor(params, values)`.

Every probe asks the installed Triton what it has (the binder's arity, `_pack_args`,
`get_attrs_descriptor`), never its version number. Runs inside a stack or a user's program:
standard library + Triton only (torch only through the arguments the program passes).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

import triton
import triton.language as tl


@dataclass(frozen=True)
class Spec:
    """One specialisation: what `compat.make_source` and `triton.compile` need, name-keyed."""

    signature: dict  # every non-constexpr parameter -> Triton type ("*fp16", "i32", "tensordesc<...>")
    constexprs: dict  # parameter -> value, the JIT's constants included (ints equal to 1, None)
    divisible_by_16: tuple  # parameters the JIT hints as divisible by 16
    options: dict = field(default_factory=dict)  # launch options the call named (num_warps, ...)

    def key(self) -> str:
        """A text that two calls share exactly when the JIT would compile them once."""
        return repr((sorted(self.signature.items()), sorted((k, _text(v)) for k, v in self.constexprs.items()),
                     sorted(self.divisible_by_16), sorted((k, repr(v)) for k, v in self.options.items())))


def jit_function(kernel):
    """The JITFunction under an @autotune / @heuristics chain, or a JITFunction made from an
    InterpretedFunction's Python function (the interpreter keeps no JIT state of its own)."""
    from triton.runtime.jit import JITFunction

    seen = 0
    while not isinstance(kernel, JITFunction) and hasattr(kernel, "fn") and seen < 16:
        inner = kernel.fn
        if not hasattr(inner, "fn") and callable(inner) and not isinstance(inner, JITFunction):
            # An InterpretedFunction: `fn` is the plain Python function. Its JIT twin is made
            # with the same decorator arguments the interpreter kept.
            return _jit_twin(kernel)
        kernel, seen = inner, seen + 1
    if not isinstance(kernel, JITFunction):
        raise TypeError(f"{kernel!r} is not a Triton kernel")
    return kernel


_TWINS: dict = {}


def _jit_twin(interpreted):
    """The JITFunction twin of an InterpretedFunction, or of the plain Python function that 3.0's
    interpreter hands its GridExecutor (cached: one twin per function)."""
    from triton.runtime.jit import JITFunction

    fn = interpreted if inspect.isfunction(interpreted) else interpreted.fn
    twin = _TWINS.get(id(fn))
    if twin is None:
        kw = dict(getattr(interpreted, "kwargs", {}) or {})
        params = inspect.signature(JITFunction.__init__).parameters
        twin = JITFunction(fn, **{k: v for k, v in kw.items() if k in params})
        _TWINS[id(fn)] = twin
    return twin


def jit_twin(fn):
    """The JITFunction twin of a plain @jit-decorated Python function (see _jit_twin)."""
    return _jit_twin(fn)


_BACKENDS: dict = {}


def backend_for(capability: int):
    """The NVIDIA backend object for a target, made without a driver (None where this release's
    binder takes no backend)."""
    if capability not in _BACKENDS:
        from triton.compiler import compiler as cc

        from reprokit.harness.compat import gpu_target

        _BACKENDS[capability] = cc.make_backend(gpu_target(capability)) if hasattr(cc, "make_backend") else None
    return _BACKENDS[capability]


_BINDERS: dict = {}


def _binder(jit, capability: int):
    from triton.runtime import jit as jitmod

    key = (id(jit), capability)
    b = _BINDERS.get(key)
    if b is None:
        make = jitmod.create_function_from_signature
        if "backend" in inspect.signature(make).parameters:
            b = make(jit.signature, jit.params, backend_for(capability))
        else:
            b = make(jit.signature, jit.params)
        _BINDERS[key] = b
    return b


_OPTION_NAMES = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
                 "launch_pdl", "ptx_version", "enable_warp_specialization", "enable_persistent", "debug")


def derive(kernel, args: tuple, kwargs: dict, capability: int = 90) -> Spec:
    """The specialisation the running release's JIT gives `kernel(*args, **kwargs)` for sm_<capability>.

    `kwargs` may hold constexprs by name and launch options (num_warps, num_stages, ...), as a
    launch `kernel[grid](*args, **kwargs)` does.
    """
    return derive_bound(kernel, args, kwargs, capability)[0]


def derive_bound(kernel, args: tuple, kwargs: dict, capability: int = 90):
    """(Spec, the arguments bound by name with defaults applied), as the JIT binds them."""
    jit = jit_function(kernel)
    binder = _binder(jit, capability)
    kwargs = dict(kwargs)
    out = binder(*args, **kwargs)
    options = {k: kwargs[k] for k in _OPTION_NAMES if k in kwargs and k != "debug"}
    if len(out) == 3:
        return _from_specialization(jit, out[0], out[1], options, capability), dict(out[0])
    return _from_sig_and_spec(jit, out[0], out[1], options, capability), dict(out[0])


def _from_specialization(jit, bound_args, specialization, options, capability) -> Spec:
    """3.3+: one (type, attribute) pair per parameter; constexprs where the type says so."""
    backend = backend_for(capability)
    names = [p.name for p in jit.params]
    values = list(bound_args.values())
    signature, constexprs, divisible = {}, {}, []
    for name, value, (ty, attr) in zip(names, values, specialization):
        if isinstance(ty, tuple):
            raise NotImplementedError(f"{name}: tuple arguments are not traced yet")
        if ty == "constexpr":
            constexprs[name] = value
            continue
        signature[name] = ty
        if isinstance(attr, str) and attr:
            parsed = backend.parse_attr(attr) if hasattr(backend, "parse_attr") else []
            if ["tt.divisibility", 16] in [list(a) for a in parsed] or (not parsed and attr == "D"):
                divisible.append(name)
    return Spec(signature, constexprs, tuple(divisible), options)


def _from_sig_and_spec(jit, bound_args, sig_and_spec, options, capability) -> Spec:
    """3.0-3.2: the signature from the binder, constants and hints from the release's own rules."""
    params = jit.params
    values = tuple(bound_args.values())
    non_constexpr = [p for p in params if not p.is_constexpr]
    signature = {p.name: ("*i8" if v == "none" else v) for p, v in zip(non_constexpr, sig_and_spec)}
    backend = backend_for(capability)
    if hasattr(jit, "_get_config"):
        attrs = jit._get_config(*values)
        divisible = {params[i].name for i in attrs.divisible_by_16}
        equal_to_1 = {params[i].name for i in attrs.equal_to_1}
    elif backend is not None and hasattr(backend, "get_attrs_descriptor"):
        attrs = backend.get_attrs_descriptor(params, values)
        divisible = {params[i].name for i in _attr_indices(attrs, "tt.divisibility", 16)}
        equal_to_1 = {params[i].name for i in _attr_indices(attrs, "tt.equal_to", 1)}
    else:
        raise NotImplementedError(f"triton {triton.__version__}: no known way to its JIT's specialisation")
    constexprs = {}
    for p, v in zip(params, values):
        if p.is_constexpr or p.name in equal_to_1 or v is None:
            constexprs[p.name] = v
            signature.pop(p.name, None)
    return Spec(signature, constexprs, tuple(p.name for p in params if p.name in divisible and p.name in signature),
                options)


def _attr_indices(attrs, name: str, value) -> list:
    props = getattr(attrs, "arg_properties", {}) or {}
    return list(props.get(name, [])) if value is not None else []


# --- stand-ins: a declared call's arguments, for the binder -------------------------------

class StandInDtype:
    """A torch dtype as Triton's binders read one (its text, `torch.float16`), without torch."""

    def __init__(self, name: str):
        self.name = name

    def __str__(self) -> str:
        return "torch." + self.name

    __repr__ = __str__

    def __hash__(self) -> int:
        return hash(self.name)

    def __eq__(self, other) -> bool:
        return isinstance(other, StandInDtype) and other.name == self.name


class StandInTensor:
    """A tensor as the binders see one: a dtype and a data pointer with the call's alignment."""

    def __init__(self, meta: dict):
        self.dtype = StandInDtype(meta["dtype"])
        self.shape = tuple(meta["tensor"])
        self._strides = tuple(meta.get("strides") or ())
        align = int(meta.get("align", 16))
        self._ptr = 1 << 20 if align >= 16 else (1 << 20) + align  # divisible by `align`, by no more

    def data_ptr(self) -> int:
        return self._ptr

    def stride(self):
        return self._strides


def standin(value):
    """A declared call's argument (docs/user-cases.md) as something the release's binder takes:
    tensors as StandInTensor, None and dtypes decoded, scalars as themselves. Host descriptors
    need the release's own TensorDescriptor class and are not stood in for here."""
    if isinstance(value, dict) and "tensor" in value:
        return StandInTensor(value)
    return decode(value)


# --- values at the JSON edge --------------------------------------------------------------

def dtype_name(dtype) -> str:
    """A tl dtype's name as written after `tl.` (tl.float16 -> "float16"), else its own text."""
    for name in ("float16", "bfloat16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
                 "uint16", "uint32", "uint64", "int1", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8",
                 "float8e5b16"):
        if getattr(tl, name, None) == dtype:
            return name
    return str(dtype)


def encode(value):
    """A constexpr or scalar as the call contract writes it: None -> {"none": true}, a tl dtype
    -> {"dtype": name}; ints, floats, bools and strings as themselves."""
    if value is None:
        return {"none": True}
    if isinstance(value, tl.constexpr):
        return encode(value.value)
    if isinstance(value, tl.dtype):
        return {"dtype": dtype_name(value)}
    if isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(f"a constexpr of type {type(value).__name__} cannot be written down")


def _text(value) -> str:
    try:
        return repr(encode(value))
    except TypeError:
        return repr(value)


def decode(value):
    """The inverse of `encode`."""
    if isinstance(value, dict) and value.get("none") is True:
        return None
    if isinstance(value, dict) and "dtype" in value:
        return getattr(tl, value["dtype"])
    return value
