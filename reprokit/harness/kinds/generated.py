"""Generated-kernel cases (`kind: "generated"`): a kernel that a program compiled itself with
`triton.compile(ASTSource(...))` (Inductor does so for every kernel it generates), recreated
from the module the trace carried and the ASTSource it recorded, then checked against the
program's own compile.

    prepare(case, plan, kernels_dir) -> Prepared         (the case's process)
    compile_case(case, plan, case_dir, prepared) -> record

The carried module imports Inductor's runtime (`torch._inductor.runtime.triton_helpers`,
`triton_heuristics`, `hints`); a stack may have no torch, or another one. Those imports are
served from the bundle instead (the same line, renamed, so every line keeps its number): the
helpers the program's torch had (`triton_helpers`, `triton_compat`, copied verbatim by the
trace), and for the heuristics decorators and hints, stand-ins that leave the @triton.jit
function as it is (the decorator's metadata stays in the module's text; it never reaches the
compile). One understanding of Inductor's output with reprokit.harness.kinds.inductor: both read the
kernel module it writes and compile it with Triton, never through torch.

The verdict is the truth test of the trace: on the release that recorded it (same Triton, same
target), the TTIR digest (and the cubin digest, where both have one) must equal the program's;
otherwise the case is `not_reproduced`. A case that cannot be recreated at all (its module does
not load, a constant that was no plain value) is `capture_failed`. Neither is ever a
`compile_error`: the compiler is blamed only for what it did.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
import types
from dataclasses import dataclass, field

from reprokit.harness import standin, toolchain

PACKAGE = "_reprokit_inductor_runtime"
_RUNTIME = re.compile(r"\btorch\._inductor\.runtime\b")
# What a module Inductor writes to benchmark a kernel (max-autotune's, coordinate descent's)
# imports for its get_args()/call(), never for the kernel: torch._dynamo (whose import registers
# operators, and fails half-way in a process that cannot finish it) and a CUDA-only stream getter.
# Bound to None on the same line, so that every line keeps its number.
_BENCH_IMPORT = re.compile(r"^from (?:torch\._dynamo\.testing|torch\._C) import ([\w ,]+)$", re.M)


def _unbound(m: re.Match) -> str:
    names = [part.split(" as ")[-1].strip() for part in m.group(1).split(",") if part.strip()]
    return "; ".join(f"{n} = None" for n in names) + "  # reprokit: only the module's benchmark harness uses it"


@dataclass(frozen=True)
class Prepared:
    """An ASTSource and the options to compile it with, or the result the case already has."""

    src: object = None
    options: dict = field(default_factory=dict)
    result: dict = field(default_factory=dict)


class _Anything:
    """A stand-in for Inductor's hint values (AutotuneHint.X, DeviceProperties(...)): any
    attribute or call gives one again; they only reach the decorator, which drops them."""

    def __getattr__(self, name):
        return self

    def __call__(self, *args, **kwargs):
        return self


def _decorator_factory(*args, **kwargs):
    """triton_heuristics.pointwise(...) and the rest: the kernel itself, undecorated."""
    return lambda fn: fn


# the carried helpers, each after those it imports (triton_helpers: `from .triton_compat import ...`)
_HELPER_ORDER = ("triton_compat", "triton_helpers")


def _runtime_package(kernels_dir: str, helpers: list) -> None:
    """`_reprokit_inductor_runtime`: the carried helper modules, plus stand-ins for the rest. Each
    helper is compiled under its path in the bundle, relative as the kernels folder is, so that
    the IR's locations name the bundle's file and never this host's."""
    pkg = sys.modules.get(PACKAGE)
    if pkg is None:
        pkg = types.ModuleType(PACKAGE)
        pkg.__path__ = []
        sys.modules[PACKAGE] = pkg
    by_name = {os.path.splitext(os.path.basename(rel))[0]: rel for rel in helpers}
    for name in sorted(by_name, key=lambda n: (_HELPER_ORDER.index(n) if n in _HELPER_ORDER else len(_HELPER_ORDER), n)):
        full = f"{PACKAGE}.{name}"
        if full in sys.modules:
            continue
        path = os.path.join(kernels_dir, by_name[name])
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        mod = types.ModuleType(full)
        mod.__file__, mod.__package__ = path, PACKAGE
        sys.modules[full] = mod
        try:
            exec(code, mod.__dict__)  # noqa: S102 - the program's own torch's helpers, carried verbatim
        except BaseException:
            del sys.modules[full]
            raise
        setattr(pkg, name, mod)
    for name, getter in (("triton_heuristics", lambda attr: _decorator_factory), ("hints", lambda attr: _Anything())):
        full = f"{PACKAGE}.{name}"
        if full not in sys.modules:
            mod = types.ModuleType(full)
            mod.__dict__["__getattr__"] = getter  # PEP 562: any name the generated module imports
            sys.modules[full] = mod
            setattr(pkg, name, mod)


def load_generated(kernels_dir: str, file: str, helpers: list, compile_only: bool = True):
    """The carried module, executed with its torch._inductor.runtime imports served from the bundle.
    Compile-only, the helpers' set_driver_to_gpu/cpu (which the module calls at import) keep the
    driver the harness chose: on a host without the GPU they would raise."""
    _runtime_package(kernels_dir, helpers)
    if compile_only and any(h.endswith("/triton_helpers.py") for h in helpers):
        import importlib

        th = importlib.import_module(f"{PACKAGE}.triton_helpers")
        th.__dict__.update(set_driver_to_gpu=lambda: None, set_driver_to_cpu=lambda: None)
    path = os.path.join(kernels_dir, file)
    name = "reprokit_generated_" + re.sub(r"\W", "_", os.path.splitext(file)[0])
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    with open(path) as f:
        text = _BENCH_IMPORT.sub(_unbound, _RUNTIME.sub(PACKAGE, f.read()))
    # compiled under its path in the bundle (relative): no host path reaches the IR's locations
    code = compile(text, path, "exec")
    mod = types.ModuleType(name)
    mod.__file__ = path
    sys.modules[name] = mod
    try:
        exec(code, mod.__dict__)  # noqa: S102 - running the program's generated module is what loading it means
    except BaseException:
        del sys.modules[name]
        raise
    return mod


def preload(plan: dict, kernels_dir: str, log=print) -> list:
    """Compile-only, before the runner forks: load the plan's generated modules (and with them the
    carried helpers, and the torch they import), so that each case's process starts with them, as
    runner._preload_kernels does for kernel files; importing torch costs a case seconds. A module
    that fails to load here is left to its cases, which say why. Returns the files loaded."""
    if plan.get("mode") == "gpu":
        return []
    done = []
    for c in plan["cases"]:
        file = c["kernel"]["file"] if c.get("kind") == "generated" else None
        if file is None or file in done:
            continue
        standin.ensure_torch()
        if not standin.active_is_standin():
            standin.install_driver(plan["profile"])
        try:
            load_generated(kernels_dir, file, c["generated"].get("helpers") or [])
        except Exception as e:  # noqa: BLE001 - its cases load it again and record why it fails
            log(f"{file}: not loaded before forking ({type(e).__name__}); its cases load it themselves")
            continue
        done.append(file)
    return done


def _value(v):
    """A recorded constant back to what the ASTSource had: a dtype by name, else the plain value."""
    if isinstance(v, dict) and "dtype" in v:
        import triton.language as tl

        return getattr(tl, v["dtype"])
    if isinstance(v, list):
        return tuple(_value(x) for x in v)
    return v


def _failed(why: str) -> Prepared:
    return Prepared(result={"status": "capture_failed", "error": why})


def prepare(case: dict, plan: dict, kernels_dir: str) -> Prepared:
    """Load the carried module and remake the program's ASTSource."""
    from triton.compiler import ASTSource

    g = case["generated"]
    standin.ensure_torch()  # the carried triton_compat imports torch; a stack may have none
    if plan.get("mode", "compile-only") != "gpu" and not standin.active_is_standin():
        standin.install_driver(plan["profile"])
    if "constexprs" not in __import__("inspect").signature(ASTSource.__init__).parameters:
        import triton

        return Prepared(result={"status": "unsupported",
                                "error": f"triton {triton.__version__} has no name-keyed ASTSource (3.3+), "
                                         "which a generated kernel's recorded signature is"})
    opaque = [repr(v) for _, v in g["constants"] + g["attrs"] if isinstance(v, dict) and "repr" in v]
    if opaque:
        return _failed(f"the program compiled with values reprokit cannot recreate: {', '.join(opaque)[:300]}")
    try:
        mod = load_generated(kernels_dir, case["kernel"]["file"], g.get("helpers") or [],
                             compile_only=plan.get("mode", "compile-only") != "gpu")
    except Exception as e:  # noqa: BLE001 - the program's module failing here is reprokit's failure to recreate it
        traceback.print_exc()
        return _failed(f"the carried module {case['kernel']['file']} does not load: {type(e).__name__}: {e}"[:500])
    fn = getattr(mod, case["kernel"]["function"], None)
    fn = getattr(fn, "fn", fn) if not hasattr(fn, "arg_names") else fn  # a decorator that kept a wrapper
    if fn is None or not hasattr(fn, "arg_names"):
        return _failed(f"{case['kernel']['file']} defines no @triton.jit {case['kernel']['function']!r}")
    constants = {tuple(k): _value(v) for k, v in g["constants"]}
    attrs = {tuple(k): _value(v) if not isinstance(v, list) else [list(a) for a in v] for k, v in g["attrs"]}
    src = ASTSource(fn, dict(g["signature"]), constexprs=constants, attrs=attrs)
    return Prepared(src=src, options=dict(g.get("options") or {}))


def compile_case(case: dict, plan: dict, case_dir: str, prepared: Prepared) -> dict:
    """Compile through the suite's path, then hold the result to the program's own compile."""
    # loaded where the case compiles, in its own process (triton_case imports Triton).
    from reprokit.harness.kinds import triton_case

    if prepared.src is None:
        return {"id": case["id"], "artifacts": {}, **prepared.result}
    options = {"num_warps": case["num_warps"], "num_stages": case["num_stages"], **prepared.options}
    tools = toolchain.use(case)
    seeded(case, plan)
    rec = triton_case.compile_case(case, plan, case_dir, prepared.src, options=options)
    if tools:
        rec["toolchain"] = tools
    return held_to_program(case, plan, case_dir, rec)


def seeded(case: dict, plan: dict) -> bool:
    """On the release and target that recorded it, put the program's own compile of this case
    (`trace.cache_key`, from the folder `reprokit trace` names in REPROKIT_TRACE_SEED) into this
    case's Triton cache and let Triton use its cache: when what reprokit recreated has the same
    cache key (source, constants, attributes, options, Triton), Triton hands back the program's
    own artefacts instead of compiling again; when it differs, it compiles, and the digests judge."""
    key = (case.get("trace") or {}).get("cache_key")
    seed = os.environ.get("REPROKIT_TRACE_SEED")
    if not key or not seed or not os.path.isdir(os.path.join(seed, key)) or _recording_release(case, plan) is not None:
        return False
    import shutil

    cache = os.environ["TRITON_CACHE_DIR"]
    if not os.path.isdir(os.path.join(cache, key)):
        shutil.copytree(os.path.join(seed, key), os.path.join(cache, key))
    os.environ["TRITON_ALWAYS_COMPILE"] = "0"  # the runner's default, for this case only (its own process)
    return True


def held_to_program(case: dict, plan: dict, case_dir: str, rec: dict) -> dict:
    """A compiled traced case (generated or call) with `reproduced` added, and `not_reproduced`
    as its status when its IR is not the program's own compile."""
    if not (case.get("trace") or {}).get("digests"):
        return rec
    if rec["status"] == "ok":
        rec["reproduced"] = faithful(case, plan, case_dir, rec)
        if os.environ.get("TRITON_ALWAYS_COMPILE") == "0" and "ptxas" not in rec:
            # seeded, and no ptxas ran: Triton's cache key matched the program's own compile
            rec["reproduced"]["reason"] += "; the program's own compile, found by its Triton cache key"
        if rec["reproduced"]["same"] is False:
            rec.update(status="not_reproduced", error=rec["reproduced"]["reason"])
    elif rec["status"] == "compile_error" and _recording_release(case, plan) is None:
        # The program compiled this very kernel on this release and target: a failure here is
        # reprokit's (what it recreated is not what the program compiled), never the compiler's.
        rec.update(status="capture_failed", error=f"the program compiled this kernel on this release, but the "
                                                 f"capture's compile failed: {rec.get('error')}"[:800])
    return rec


def _recording_release(case: dict, plan: dict):
    """None when this stack is the release and target the trace recorded on; else why not."""
    import triton

    trace = case.get("trace") or {}
    arch = ((case.get("generated") or {}).get("target") or {}).get("arch", plan["profile"]["capability"])
    if trace.get("triton") != triton.__version__ or arch != plan["profile"]["capability"]:
        return f"recorded with triton {trace.get('triton')} for sm_{arch}; compared only on that release and target"
    return None


def _where_parted(want: dict, case_dir: str, rec: dict) -> str:
    """Where the capture's compile parted from the program's: the first IR level whose digest
    differs, and the compile options that differ (the program's metadata against the capture's,
    found in this case's Triton cache by its cubin); "" when the trace recorded neither."""
    # local, as faithful()'s: only a traced case that differs needs them
    from reprokit.harness.toolbox import compile_options, stage_digest

    said = []
    for stage in ("ttgir", "llir", "ptx"):
        theirs = (want.get("stages") or {}).get(stage)
        if theirs and stage in rec["artifacts"]:
            with open(os.path.join(case_dir, rec["artifacts"][stage]), errors="replace") as f:
                if stage_digest(stage, f.read()) != theirs:
                    said.append(f"first at {stage}")
                    break
    mine = _capture_metadata(case_dir, rec)
    if want.get("options") and mine is not None:
        ours = compile_options(mine)
        keys = sorted(k for k in set(want["options"]) | set(ours) if want["options"].get(k) != ours.get(k))
        if keys:
            said.append("options differ: " + ", ".join(f"{k} {want['options'].get(k)!r} in the program, "
                                                       f"{ours.get(k)!r} here" for k in keys[:6]))
    return f"; {'; '.join(said)}" if said else ""


def _capture_metadata(case_dir: str, rec: dict):
    """Triton's metadata JSON of this case's compile: the cache entry whose cubin is its cubin."""
    import json  # only a traced case that differs reads it

    cache = os.environ.get("TRITON_CACHE_DIR")
    if not cache or "cubin" not in rec["artifacts"] or not os.path.isdir(cache):
        return None
    with open(os.path.join(case_dir, rec["artifacts"]["cubin"]), "rb") as f:
        cubin = f.read()
    for entry in sorted(os.listdir(cache)):
        folder = os.path.join(cache, entry)
        names = os.listdir(folder) if os.path.isdir(folder) else []
        for name in names:
            if name.endswith(".cubin"):
                with open(os.path.join(folder, name), "rb") as f:
                    if f.read() != cubin:
                        continue
                meta = os.path.join(folder, name[:-len(".cubin")] + ".json")
                if os.path.isfile(meta):
                    with open(meta) as f:
                        return json.load(f)
    return None


def faithful(case: dict, plan: dict, case_dir: str, rec: dict) -> dict:
    """Whether this compile is the program's: {"same": True/False/None, "checked", "reason"}.
    Judged only on the release and target that recorded it (None elsewhere: a replay on another
    release is meant to differ)."""
    import triton

    # the trace's own digest functions: the same normalisation on both sides
    from reprokit.harness.toolbox import cubin_code_digest, ttir_digest

    want = (case.get("trace") or {}).get("digests") or {}
    elsewhere = _recording_release(case, plan)
    if elsewhere is not None:
        return {"same": None, "checked": [], "reason": elsewhere}
    arch = plan["profile"]["capability"]
    got = {}
    if "ttir" in rec["artifacts"]:
        with open(os.path.join(case_dir, rec["artifacts"]["ttir"]), errors="replace") as f:
            got["ttir"] = ttir_digest(f.read())
    if "cubin" in rec["artifacts"]:
        with open(os.path.join(case_dir, rec["artifacts"]["cubin"]), "rb") as f:
            got["cubin"] = cubin_code_digest(f.read())
    checked = sorted(k for k in want if k in got)
    if not checked:
        return {"same": None, "checked": [], "reason": "the trace recorded no digest of the program's compile"}
    differ = [k for k in checked if want[k] != got[k]]
    missing_tools = (rec.get("toolchain") or {}).get("missing", [])
    if differ and missing_tools and not os.environ.get("REPROKIT_TRACE_SEED"):
        # A replay on a stack without the tool the program compiled with (a Triton-only stack
        # where the program had torch's ptxas): another toolchain, as another release would be,
        # so not judged. The trace's own capture (it names REPROKIT_TRACE_SEED) runs where the
        # program ran, and a tool missing there is reprokit's failure: judged below.
        return {"same": None, "checked": [],
                "reason": f"not judged: {'; '.join(missing_tools)}; the capture's {' and '.join(differ)} "
                          "differ from the program's as another toolchain's would"}
    if differ:
        missing = "".join(f"; {m}" for m in missing_tools)
        return {"same": False, "checked": checked,
                "reason": f"the capture's {' and '.join(differ)} {'differ' if len(differ) > 1 else 'differs'} from the program's own compile "
                          f"(triton {triton.__version__}, sm_{arch}){_where_parted(want, case_dir, rec)}{missing}: "
                          "reprokit did not recreate what the program compiled"}
    return {"same": True, "checked": checked, "reason": f"{' and '.join(checked)} equal to the program's own compile"}
