"""Declared "call" cases (docs/user-cases.md): a user's kernel and a call to it by example,
specialised by the running release's own JIT, then compiled like any Triton case.

The derivation runs the release's `JITFunction.run(..., warmup=True)` on stand-in arguments
(tensors with the recorded dtype, shape, strides and alignment; host TensorDescriptors over
them) with a stand-in driver that reports the profile's target (reprokit.harness.standin), and
takes the ASTSource and options the JIT hands to `triton.compile`: the signature, constexprs and
divisibility attributes are the JIT's, for every release 3.0-3.9, and nothing is typed by hand.
The compile itself then goes through reprokit.harness.case like a suite case.

Decorators: `@triton.autotune` expands to one case per config (`configs`: "all" or a list of
indices into the autotuner's `configs`, early pruning not applied), each config's kwargs and
options merged and its `pre_hook` run on the stand-in arguments, as the autotuner does before a
launch; `@triton.heuristics` values are computed from the call as Triton computes them.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import sys
import time
from dataclasses import dataclass, field

from reprokit.harness import standin

SUFFIX = ".cfg"  # autotuned case `x` expands to `x.cfg0`, `x.cfg1`, ...


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
    return hasattr(obj, "configs") and hasattr(obj, "fn") and hasattr(obj, "keys")


def _is_heuristics(obj) -> bool:
    return hasattr(obj, "values") and hasattr(obj, "fn") and isinstance(obj.values, dict)


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
    py = getattr(inner, "fn", None)
    if py is None or not callable(py):
        raise CallError(f"{inner!r} is not a @triton.jit kernel")
    kwargs = {}
    for name in ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline"):
        if getattr(inner, name, None) is not None:
            kwargs[name] = getattr(inner, name)
    import inspect

    params = inspect.signature(JITFunction.__init__).parameters
    return JITFunction(py, **{k: v for k, v in kwargs.items() if k in params})


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
    out = {"kwargs": {k: to_json(v) for k, v in sorted(cfg.kwargs.items())}}
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
    keeps it as `self.compile` (3.2+) or calls it there; both are put back afterwards."""
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
            jf.compile = real


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

    jf: object
    kwargs: dict
    grid: tuple
    config: int | None = None
    tuner: object = None
    chosen: object = None
    heuristics: tuple = ()


def bind(obj, call: dict, config: int | None = None, tensor=make_tensor) -> Bound:
    """The call through the kernel's decorators as Triton would run it, up to the JIT: the
    config's meta-parameters and options (autotune), its pre_hook on the arguments, then the
    heuristics' values. Raises Refused when the kernel's own hook or rule raises."""
    tuner, heur, inner = layers(obj)
    jf = jit_function(inner)
    args = {name: value_of(v, tensor) for name, v in (call.get("args") or {}).items()}
    options = dict(call.get("options") or {})
    grid = tuple(call.get("grid") or [1])
    chosen = None
    if tuner is not None and config is None and fixes_config(tuner, args):
        tuner = None  # the call names the config's meta-parameters itself (a traced launch)
    if tuner is not None:
        if config is None:
            raise CallError(f"{kernel_name(jf)} is autotuned: name a config")
        chosen = tuner.configs[config]
        options.update({k: v for k, v in chosen.all_kwargs().items() if k not in chosen.kwargs})
        args.update(chosen.kwargs)
    elif config is not None:
        raise CallError("config given, but the kernel is not autotuned")
    kwargs = {**args, **options}
    try:
        if chosen is not None and chosen.pre_hook is not None:  # e.g. a descriptor's block shape
            chosen.pre_hook({**args, **chosen.all_kwargs()})
        if heur:  # the rules see every argument by name, the options and the grid, as in Heuristics.run
            seen = {**kwargs, "grid": grid, "warmup": True}
            _apply_heuristics(heur, seen)
            kwargs.update({name: seen[name] for layer in heur for name in layer.values})
    except Exception as e:  # the kernel's own hook or rule raised on this call: kept as such
        raise Refused(e) from e
    return Bound(jf, kwargs, grid, config, tuner, chosen, tuple(heur))


def derive(obj, call: dict, config: int | None = None, driver_profile: dict | None = None,
           tensor=make_tensor) -> Derived:
    """What the running release's JIT compiles for `call` on kernel object `obj` (a @jit,
    @heuristics or @autotune object); `config` picks the autotuner's config. With
    `driver_profile`, a stand-in driver reporting that profile's target answers the JIT (and is
    put back after); without, the active driver does (a GPU)."""
    b = bind(obj, call, config, tensor)
    swap = driver_profile is not None and not standin.active_is_standin()
    if swap:
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
    spec = derive(fn, call, config=config, driver_profile=profile).spec
    return tuple(json.dumps(spec.get(k), sort_keys=True) for k in
                 ("kernel", "signature", "constexprs", "divisibility", "equal_to_1", "options", "autotune"))


# --- in the case's process, and the plan's expansion in the runner ------------------------

@dataclass(frozen=True)
class Prepared:
    """A call case ready to compile (`derived`), or the result it already has (`result`: the
    JIT refused the call, or this release lacks an API it needs)."""

    derived: Derived | None
    result: dict | None = None


def setup(plan: dict) -> None:
    """Before a kernel file loads: `import torch` works (the stand-in when torch is absent) and,
    compile-only, `triton.runtime.driver.active` answers for the plan's GPU profile. Done once
    in the runner (the cases' processes inherit it) and again, harmlessly, in each case."""
    if not any(c.get("kind") == "call" for c in plan["cases"]):
        return
    standin.ensure_torch()
    standin.ensure_numpy()
    if plan.get("mode", "compile-only") != "gpu" and not standin.active_is_standin():
        standin.install_driver(plan["profile"])


def prepare(case: dict, plan: dict, kernels_dir: str) -> Prepared:
    """Load the user's kernel file and derive the call's specialisation through the release's JIT."""
    from reprokit.harness.toolbox import load_kernel, one_line

    setup(plan)
    try:
        obj = load_kernel(kernels_dir, *kernel_ref(case))
    except ImportError as e:
        missing = getattr(e, "name", None) or ""
        if missing.split(".")[0] != "triton":
            raise
        import triton

        # e.g. `from triton.tools.tensor_descriptor import TensorDescriptor` before 3.4
        return Prepared(None, {"status": "unsupported", "error": f"triton {triton.__version__} lacks {missing} "
                                                                   f"({kernel_ref(case)[0]} imports it)"})
    gpu = plan.get("mode") == "gpu"
    try:
        d = derive(obj, case["call"], config=(case.get("autotune") or {}).get("config"),
                   driver_profile=None if gpu else plan["profile"])
    except Unsupported as e:
        return Prepared(None, {"status": "unsupported", "error": str(e)})
    except Refused as e:
        cause = e.__cause__
        import traceback

        traceback.print_exception(type(cause), cause, cause.__traceback__)
        return Prepared(None, {"status": "compile_error", "exception": type(cause).__name__,
                               "error": f"the JIT refused the call: {type(cause).__name__}: {one_line(cause)}"})
    return Prepared(d)


def compile_case(case: dict, plan: dict, case_dir: str, prepared: Prepared) -> dict:
    """Compile the JIT's own ASTSource with the JIT's own options, through the suite's path."""
    from reprokit.harness import triton_case

    if prepared.derived is None:
        return {"id": case["id"], "artifacts": {}, **prepared.result}
    d = prepared.derived
    rec = triton_case.compile_case(case, plan, case_dir, d.src, options=d.options)
    rec["call"] = d.spec
    expect = case.get("expect") or ""
    if expect.startswith("sass:") and "sass" in rec["artifacts"]:  # the oracle judges from the count
        from reprokit.harness.oracle import sass_op_count

        with open(os.path.join(case_dir, rec["artifacts"]["sass"]), errors="replace") as f:
            rec["expect_seen"] = {expect: sass_op_count(expect[5:], f.read())}
    return rec


def kernel_ref(case: dict) -> tuple:
    """(file, function) of a call case: top-level as docs/user-cases.md writes them, or under
    `kernel` as traced plans also carry them."""
    k = case.get("kernel") or {}
    return case.get("file") or k["file"], case.get("function") or k["function"]


def family(case: dict) -> str:
    return case.get("family") or kernel_ref(case)[1]


def normalise_case(case: dict) -> dict:
    """A call case with what every record carries: its family (the kernel's name unless the
    plan names one) and control ("call")."""
    return {**case, "family": family(case), "control": case.get("control") or "call"}


def expand_plan(plan: dict, kernels_dir: str, log=print) -> dict:
    """The plan with every call case normalised and every autotuned one expanded to one case
    per config it selects (`x.cfg<i>`, carrying `autotune: {config, count}`): the same plan
    when there is nothing to do. How many configs each kernel has is read in a throwaway
    process (the kernel file's code runs there, never in the runner)."""
    todo = [c for c in plan["cases"] if c.get("kind") == "call" and "autotune" not in c]
    refs = sorted({kernel_ref(c) for c in todo})
    if not todo and all(c.get("kind") != "call" or ("family" in c and "control" in c) for c in plan["cases"]):
        return plan
    facts = _autotune_facts(plan, kernels_dir, refs)
    cases = []
    for c in plan["cases"]:
        if c.get("kind") != "call":
            cases.append(c)
            continue
        c = normalise_case(c)
        file, function = kernel_ref(c)
        fact = facts.get(f"{file}:{function}")
        args = (c.get("call") or {}).get("args") or {}
        if "autotune" in c or fact is None or (fact["keys"] and set(fact["keys"]) <= set(args)):
            cases.append(c)  # already expanded, not autotuned (or did not load), or one config's call
            continue
        n = fact["count"]
        pick = c.get("configs", "all")
        picked = list(range(n)) if pick in (None, "all") else [i for i in pick if isinstance(i, int) and 0 <= i < n]
        bad = [] if pick in (None, "all") else [i for i in pick if i not in picked]
        if bad:
            log(f"{c['id']}: configs {bad} are not among the kernel's {n} configs: left out")
        base = {k: v for k, v in c.items() if k != "configs"}
        for i in picked:
            cases.append({**base, "id": f"{c['id']}{SUFFIX}{i}", "autotune": {"config": i, "count": n}})
    return {**plan, "cases": cases}


def _autotune_facts(plan: dict, kernels_dir: str, kernels: list) -> dict:
    """"file:function" -> autotune_facts() (None: not autotuned), for the kernels whose files
    load; read in a forked child that reports through a pipe."""
    if not kernels:
        return {}
    r, w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: load, count, report, exit
        code = 1
        try:
            os.close(r)
            fd = os.open(os.devnull, os.O_WRONLY)
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            from reprokit.harness.toolbox import load_kernel

            setup(plan)
            out = {}
            for file, function in kernels:
                try:
                    out[f"{file}:{function}"] = autotune_facts(load_kernel(kernels_dir, file, function))
                except Exception:  # noqa: BLE001, S112 - the case's own process loads it again and reports why
                    continue
            os.write(w, json.dumps(out).encode())
            code = 0
        finally:
            os._exit(code)
    os.close(w)
    chunks, deadline = [], time.monotonic() + float(plan.get("timeout_s") or 300)
    while True:
        ready, _, _ = select.select([r], [], [], max(0.0, deadline - time.monotonic()))
        b = os.read(r, 65536) if ready else b""
        if not b:
            break
        chunks.append(b)
    os.close(r)
    if not ready:  # a kernel file that hangs on import: its cases' own processes time out on it
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        chunks = []
    os.waitpid(pid, 0)
    try:
        return json.loads(b"".join(chunks) or b"{}")
    except ValueError:
        return {}
