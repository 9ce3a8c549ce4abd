"""Declared "call" cases (docs/user-cases.md): a user's kernel and a call to it by example,
specialised by the running release's own JIT, then compiled like any Triton case.

The derivation runs the release's `JITFunction.run(..., warmup=True)` on stand-in arguments
(tensors with the recorded dtype, shape, strides and alignment; host TensorDescriptors over
them) with a stand-in driver that reports the profile's target (reprokit.harness.standin), and
takes the ASTSource and options the JIT hands to `triton.compile`: the signature, constexprs and
divisibility attributes are the JIT's, for every release 3.0-3.9, and nothing is typed by hand.
reprokit.harness.kinds.callcase compiles it as the suite's cases are compiled.

Decorators: `@triton.autotune` expands to one case per config (`configs`: "all" or a list of
indices into the autotuner's `configs`, early pruning not applied), each config's kwargs and
options merged and its `pre_hook` run on the stand-in arguments, as the autotuner does before a
launch; `@triton.heuristics` values are computed from the call as Triton computes them.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from typing import Any

from reprokit.harness import standin


class CallError(ValueError):
    """The declared call cannot be built (an unknown dtype, a malformed argument)."""


class Unsupported(Exception):
    """This release lacks an API the call needs (host TensorDescriptor before 3.4)."""


class Refused(Exception):
    """The release's JIT, a heuristic or a config's pre_hook raised on the call: what a real
    launch of this call would have met on this release (the case's compile_error)."""


class _Captured(Exception):
    """Raised in place of triton.compile: carries what the JIT would have compiled."""

    def __init__(self, src, target, options):
        super().__init__("captured")
        self.src, self.target, self.options = src, target, dict(options or {})


@dataclass(frozen=True)
class Derived:
    """What the JIT would compile for one call: its ASTSource, target and options, and the
    record of the specialisation (JSON)."""

    src: object
    target: object
    options: dict
    spec: dict = field(default_factory=dict)


# --- the kernel object's decorators ------------------------------------------------------

def _is_autotuner(obj) -> bool:
    from triton.runtime import autotuner

    return isinstance(obj, autotuner.Autotuner)


def _is_heuristics(obj) -> bool:
    from triton.runtime import autotuner

    return isinstance(obj, autotuner.Heuristics)


def layers(obj) -> tuple:
    """(autotuner or None, [heuristics...] outermost first, the innermost @jit object)."""
    tuner, heur = None, []
    while True:
        if _is_autotuner(obj):
            if tuner is not None:
                raise CallError("two @triton.autotune decorators on one kernel")
            tuner = obj
        elif _is_heuristics(obj):
            heur.append(obj)
        else:
            return tuner, heur, obj
        obj = obj.fn


def jit_function(inner):
    """The release's JITFunction for the innermost object: itself, or, under the interpreter
    (TRITON_INTERPRET=1 makes @jit an InterpretedFunction, which never compiles), a
    JITFunction made from the same Python function so that the JIT's key can still be read."""
    from triton.runtime.jit import JITFunction

    if isinstance(inner, JITFunction):
        return inner
    twin = getattr(inner, "_reprokit_jit_twin", None)
    if twin is not None:  # made once per kernel: a JITFunction reads its source when made
        return twin
    py = getattr(inner, "fn", None)
    if py is None or not callable(py):
        raise CallError(f"{inner!r} is not a @triton.jit kernel")
    # the decorator's own arguments (do_not_specialize, ...), which the interpreter keeps
    kwargs = dict(getattr(inner, "kwargs", None) or {})
    import inspect

    params = inspect.signature(JITFunction.__init__).parameters
    cls = JITFunction
    if getattr(inner, "language", None) == "gluon":  # a traced @gluon.jit kernel: Gluon's JIT
        from triton.experimental.gluon._runtime import GluonJITFunction

        cls = GluonJITFunction
    twin = cls(py, **{k: v for k, v in kwargs.items() if k in params and v is not None})
    inner._reprokit_jit_twin = twin
    return twin


def autotune_facts(obj) -> dict | None:
    """{"count": configs the kernel's autotuner declares, "keys": every meta-parameter they
    set}; None when it is not autotuned."""
    tuner, _, _ = layers(obj)
    if tuner is None:
        return None
    return {"count": len(tuner.configs), "keys": sorted({k for c in tuner.configs for k in c.kwargs})}


def fixes_config(tuner, args: dict) -> bool:
    """A call that gives every meta-parameter the autotuner's configs set calls one config
    itself (as a traced launch, recorded below the autotuner, does): it is not expanded."""
    keys = {k for c in tuner.configs for k in c.kwargs}
    return bool(keys) and keys <= set(args)


def describe_config(cfg) -> dict:
    """A config as JSON: its kwargs and options (values that JSON cannot hold become strings)."""
    out: dict = {"kwargs": {k: to_json(v) for k, v in sorted(cfg.kwargs.items())}}
    for name in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        out[name] = getattr(cfg, name, None)
    return out


# --- arguments by example ----------------------------------------------------------------

def make_tensor(spec: dict):
    """A stand-in tensor for {"tensor": shape, "dtype", "strides", "align"}."""
    shape = spec["tensor"]
    if not isinstance(shape, list) or not all(isinstance(n, int) and n >= 0 for n in shape):
        raise CallError(f"tensor shape must be a list of sizes, not {shape!r}")
    try:
        dt = standin.torch_dtype(spec.get("dtype", "float32"))
    except (ValueError, AttributeError) as e:
        raise CallError(str(e)) from None
    align = int(spec.get("align", 16))
    if align not in (1, 2, 4, 8, 16):
        raise CallError(f"align must be 1, 2, 4, 8 or 16, not {align}")
    return standin.Tensor(shape, dt, strides=spec.get("strides"), align=align)


def value_of(v, tensor=make_tensor):
    """A call argument from its JSON form (docs/user-cases.md); `tensor` makes tensors (stand-ins
    to compile, real ones to launch)."""
    if isinstance(v, list):
        return tuple(value_of(x, tensor) for x in v)
    if not isinstance(v, dict):
        return v
    if v.get("none") is True:
        return None
    if "tensor" in v:
        return tensor(v)
    if "descriptor" in v:
        return _host_descriptor(v, tensor)
    if "dtype" in v and len(v) == 1:
        import triton.language as tl

        dt = getattr(tl, v["dtype"], None)
        if not isinstance(dt, tl.dtype):
            raise CallError(f"triton.language has no dtype {v['dtype']!r}")
        return dt
    raise CallError(f"cannot read the argument {json.dumps(v, sort_keys=True)}")


def _host_descriptor(v: dict, tensor):
    if "layout" in v:
        return _gluon_descriptor(v, tensor)
    try:
        from triton.tools.tensor_descriptor import TensorDescriptor
    except ImportError:
        import triton

        raise Unsupported(f"triton {triton.__version__} lacks triton.tools.tensor_descriptor.TensorDescriptor") from None
    base = tensor(v["descriptor"])
    block = v.get("block")
    if not isinstance(block, list):
        raise CallError("a descriptor argument needs `block`, a list of sizes")
    shape = list(v.get("shape") or base.shape)
    strides = list(v.get("strides") or base.stride())
    extra = {"padding": v["padding"]} if v.get("padding") else {}
    return TensorDescriptor(base, shape, strides, list(block), **extra)


def _gluon_descriptor(v: dict, tensor):
    """A Gluon host descriptor (triton.experimental.gluon.nvidia.hopper.TensorDescriptor) with
    its shared-memory layout, a class of triton.experimental.gluon.language made from its fields."""
    try:
        from triton.experimental.gluon import language as gl
        from triton.experimental.gluon.nvidia.hopper import TensorDescriptor
    except ImportError:
        import triton

        raise Unsupported(f"triton {triton.__version__} lacks triton.experimental.gluon (a Gluon descriptor)") from None
    layout = v["layout"]
    cls = getattr(gl, str(layout.get("class")), None)
    if not isinstance(cls, type):
        import triton

        raise Unsupported(f"triton {triton.__version__}'s Gluon has no layout {layout.get('class')!r}")
    try:
        made = cls(**layout.get("fields") or {})
    except TypeError as e:  # a release whose layout takes other fields
        raise Unsupported(f"this release's {layout['class']} refuses the recorded fields: {e}") from None
    base = tensor(v["descriptor"])
    block = v.get("block")
    if not isinstance(block, list):
        raise CallError("a descriptor argument needs `block`, a list of sizes")
    extra = {"padding": v["padding"]} if v.get("padding") else {}
    return TensorDescriptor(base, list(v.get("shape") or base.shape), list(v.get("strides") or base.stride()),
                            list(block), made, **extra)


def to_json(v):
    """A value the JIT saw, as JSON: constexprs and config kwargs in records."""
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    if isinstance(v, (tuple, list)):
        return [to_json(x) for x in v]
    inner = getattr(v, "value", None)
    if type(v).__name__ == "constexpr":
        return to_json(inner)
    if type(v).__name__ == "dtype" or type(v).__name__.endswith("_dtype"):
        return {"dtype": _tl_name(v)}
    return {"repr": repr(v)}


def _tl_name(dt) -> str:
    """A dtype as `triton.language` names it (tl.float16 -> "float16"), the name {"dtype": ...}
    reads back; a torch dtype by its own name."""
    import triton.language as tl

    if isinstance(dt, tl.dtype):
        for name in ("float16", "bfloat16", "float32", "float64", "int1", "int8", "int16", "int32", "int64",
                     "uint8", "uint16", "uint32", "uint64", "float8e4nv", "float8e5", "float8e4b15", "float8e4b8",
                     "float8e5b16"):
            if getattr(tl, name, None) == dt:
                return name
    return str(dt).split(".")[-1]


# --- the derivation ----------------------------------------------------------------------

@contextlib.contextmanager
def _intercepted(jf):
    """triton.compile, as the JIT reaches it, raises _Captured instead of compiling. Every
    release 3.0-3.9 looks the function up in triton.compiler when it builds its binder and
    keeps it as `self.compile`: both are put back afterwards (a binder built meanwhile keeps
    the real one)."""
    import triton.compiler as tc

    real = tc.compile

    def grab(src, target=None, options=None, **kwargs):
        raise _Captured(src, target, options)

    tc.compile = grab
    own = jf.__dict__.get("compile", None)
    if own is not None:
        jf.compile = grab
    try:
        yield
    finally:
        tc.compile = real
        if jf.__dict__.get("compile") is grab:
            jf.compile = own if own is not None else real


def _apply_heuristics(heur: list, kwargs: dict) -> None:
    """@triton.heuristics, outermost first, as Heuristics.run computes them (every argument by
    name, the launch options and grid included)."""
    for h in heur:
        for name, rule in h.values.items():
            kwargs[name] = rule(dict(kwargs))


@dataclass
class Bound:
    """A call bound to the innermost JITFunction: the arguments and options the JIT gets (the
    config's and the heuristics' values joined), the grid, and what was applied on the way."""

    jf: Any
    kwargs: dict
    grid: tuple
    inner: Any = None  # what launches: the JITFunction, or under the interpreter the InterpretedFunction
    config: int | None = None
    tuner: Any = None
    chosen: Any = None
    heuristics: tuple = ()


def bind(obj, call: dict, config: int | None = None, tensor=make_tensor) -> Bound:
    """The call through the kernel's decorators as Triton would run it, up to the JIT: the
    config's meta-parameters and options (autotune), its pre_hook on the arguments, then the
    heuristics' values. Raises Refused when the kernel's own hook or rule raises."""
    tuner, heur, inner = layers(obj)
    jf = jit_function(inner)
    given = call.get("args") or {}
    # Made in the kernel's parameter order, whatever order the plan's JSON keeps (a seeded
    # `tensor` fills them one after another: the same inputs from any copy of the plan).
    order = [n for n in jf.arg_names if n in given] + [n for n in given if n not in jf.arg_names]
    # Arguments over one memory (`aliases`, a trace's in-place launch) are made together, where
    # the first of them comes, by a tensor maker that can (`tensor.aliased`; the stand-ins of a
    # compile need not: only each one's alignment reaches the JIT).
    shared = {}
    for group in call.get("aliases") or () if hasattr(tensor, "aliased") else ():
        members = {n: given[n] for n in group["at"] if isinstance(given.get(n), dict) and "tensor" in given[n]}
        if len(members) > 1:
            shared.update(dict.fromkeys(members, group))
    args = {}
    for name in order:
        if name in args:
            continue
        group = shared.get(name)
        if group is None:
            args[name] = value_of(given[name], tensor)
        else:
            args.update(tensor.aliased(group, {n: given[n] for n in order if shared.get(n) is group}))
    options = dict(call.get("options") or {})
    grid = tuple(call.get("grid") or [1])
    chosen = None
    if tuner is not None and config is None and fixes_config(tuner, args):
        tuner = None  # the call names the config's meta-parameters itself (a traced launch)
    if tuner is not None:
        if config is None:
            raise CallError(f"{kernel_name(jf)} is autotuned and the case names none of its {len(tuner.configs)} "
                            "configs (`configs`: \"all\" or indices from 0)")
        if not 0 <= config < len(tuner.configs):
            raise CallError(f"{kernel_name(jf)} has {len(tuner.configs)} autotune configs; there is no config {config}")
        chosen = tuner.configs[config]
        # A sweep's point moves the config's own meta-parameters and options (`tune`): the
        # config as the autotuner would run it, those values replaced, its pre_hook seeing them.
        tune = {k: value_of(v, tensor) for k, v in (call.get("tune") or {}).items()}
        every = {**chosen.all_kwargs(), **tune}
        options.update({k: v for k, v in every.items() if k not in chosen.kwargs})
        args.update({k: v for k, v in every.items() if k in chosen.kwargs})
    elif config is not None:
        raise CallError("config given, but the kernel is not autotuned")
    elif call.get("tune"):
        raise CallError("`tune` moves an autotune config's values, but the call names no config")
    kwargs = {**args, **options}
    try:
        if chosen is not None and chosen.pre_hook is not None:  # e.g. a descriptor's block shape
            chosen.pre_hook({**args, **every})
        if heur:  # the rules see every argument by name, the options and the grid, as in Heuristics.run
            seen = {**kwargs, "grid": grid, "warmup": True}
            _apply_heuristics(heur, seen)
            kwargs.update({name: seen[name] for layer in heur for name in layer.values})
    except Exception as e:  # the kernel's own hook or rule raised on this call: kept as such
        raise Refused(e) from e
    return Bound(jf, kwargs, grid, inner, config, tuner, chosen, tuple(heur))


def derive(obj, call: dict, config: int | None = None, driver_profile: dict | None = None,
           tensor=make_tensor) -> Derived:
    """What the running release's JIT compiles for `call` on kernel object `obj` (a @jit,
    @heuristics or @autotune object); `config` picks the autotuner's config. With
    `driver_profile`, a stand-in driver reporting that profile's target answers the JIT (and is
    put back after); without, the active driver does (a GPU)."""
    b = bind(obj, call, config, tensor)
    swap = driver_profile is not None and not standin.active_is_standin()
    if driver_profile is not None and swap:
        standin.install_driver(driver_profile)
    captured = None
    try:
        with _intercepted(b.jf):
            b.jf.run(grid=b.grid, warmup=True, **b.kwargs)
    except _Captured as c:
        captured = c
    except Exception as e:  # the release's JIT refused the call: kept as such
        raise Refused(e) from e
    finally:
        if swap:
            standin.restore_driver()
    if captured is None:
        raise RuntimeError(f"{kernel_name(b.jf)}: the JIT returned without compiling (a kernel cached already?)")
    spec = spec_record(b.jf, captured.src, captured.options)
    if b.chosen is not None:
        spec["autotune"] = {"config": config, "count": len(b.tuner.configs), **describe_config(b.chosen)}
        if call.get("tune"):
            spec["autotune"]["tune"] = dict(sorted(call["tune"].items()))
    if b.heuristics:
        spec["heuristics"] = {name: to_json(b.kwargs[name]) for layer in b.heuristics for name in layer.values}
    return Derived(captured.src, captured.target, captured.options, spec)


def spec_record(jf, src, options: dict) -> dict:
    """The specialisation the JIT chose, by parameter name, in one form for every release:
    signature (runtime arguments), constexprs (every value the compile fixes: constexpr
    parameters, and in 3.0-3.2 arguments equal to 1 or None), divisibility (arguments the JIT
    marked divisible by 16), equal_to_1 (3.0-3.2) and the launch options that reach the key."""
    names = list(jf.arg_names)

    def name(k):
        if isinstance(k, tuple):
            return ".".join([names[k[0]]] + [str(i) for i in k[1:]])
        return names[k] if isinstance(k, int) else str(k)

    sig = {name(k): v for k, v in src.signature.items() if v != "constexpr"}
    consts = getattr(src, "constants", None) or getattr(src, "constexprs", None) or {}
    constexprs = {name(k): to_json(v) for k, v in consts.items()}
    div, eq1 = [], []
    attrs = src.attrs
    if isinstance(attrs, dict):  # 3.3+: {(path): [["tt.divisibility", 16], ...]}
        for k, props in attrs.items():
            for prop in props or []:
                if list(prop)[:2] == ["tt.divisibility", 16]:
                    div.append(name(k))
    elif attrs is not None:
        d = attrs.to_dict() if hasattr(attrs, "to_dict") else {}
        props = d.get("arg_properties") or {}
        div_idx = props.get("tt.divisibility", getattr(attrs, "divisible_by_16", ()) or ())
        eq_idx = props.get("tt.equal_to", getattr(attrs, "equal_to_1", ()) or ())
        div = [name(i) for i in div_idx]
        eq1 = [name(i) for i in eq_idx]
    keep = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
            "launch_pdl", "ptx_version")
    rec = {"kernel": kernel_name(jf), "signature": sig, "constexprs": dict(sorted(constexprs.items())),
           "divisibility": sorted(div, key=names_order(names)),
           "options": {k: to_json(options[k]) for k in keep if k in options}}
    if eq1:
        rec["equal_to_1"] = sorted(eq1, key=names_order(names))
    return rec


def kernel_name(jf) -> str:
    return getattr(jf, "__name__", None) or jf.fn.__name__


def names_order(names: list):
    def key(n: str):
        head = n.split(".")[0]
        return (names.index(head) if head in names else len(names), n)

    return key


def spec_key(fn, call: dict, config: int | None = None, profile: dict | None = None) -> tuple:
    """The specialisation key of one launch of `fn` (a @jit, @heuristics or @autotune object)
    with `call` (docs/user-cases.md's call object: args by example, grid, options), as the
    running release's JIT derives it: two calls with the same key compile to the same kernel.

    A hashable tuple of text (kernel name, signature, constexprs, divisibility, equal_to_1,
    options); the same across processes and hash seeds. `config` names an autotuned kernel's
    config; `profile` (a GPU profile dict: capability, sm_count, smem_per_block) answers the JIT
    through a stand-in driver when no GPU driver is active (compile-only, the interpreter).
    """
    return key_of(derive(fn, call, config=config, driver_profile=profile).spec)


def key_of(spec: dict) -> tuple:
    """spec_key's tuple for a spec record already derived (`Derived.spec`)."""
    return tuple(json.dumps(spec.get(k), sort_keys=True) for k in
                 ("kernel", "signature", "constexprs", "divisibility", "equal_to_1", "options", "autotune"))
