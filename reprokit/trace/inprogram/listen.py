"""Inside the traced program: every compile Triton makes, through its compile listener, and what
Inductor launched and chose.

Installed by recorder.install() on Triton 3.4+ (`triton.knobs`); earlier releases have no
listener and give the @jit path only. What it adds beside the recorder's JITFunction.run wrapper:

- `knobs.compilation.listener` (a single slot): never replaced, and never lost. The slot becomes
  a descriptor (_Slot) that keeps reprokit's listener last in the chain: a listener already set
  (tritonparse's, the program's own), or one set later, is called first with everything Triton
  gave, and one line on stderr says the slot is shared.
- A compile inside a recorded @jit launch gives that specialisation's digests (`digest`); any other
  compile (Inductor's `triton.compile(ASTSource(...))`, a program's own) is a generated kernel:
  its module file, the helpers it imports from torch._inductor, the ASTSource's signature,
  constants and attributes and the options that differ from the backend's defaults (`compiled`).
  Compile workers are processes of the program: the boot installs this there too.
- Inductor's `CachingAutotuner.run` (wrapped once its module is imported): which compiled binary
  each generated kernel launched, i.e. the config its autotuner chose (`generated_launch`).
- `knobs.autotuning.listener` (3.8+, a single slot, kept the same way): the best config and
  the timings, for @triton.autotune kernels.

Digests are what the capture must match (reprokit.harness.kinds.generated): TTIR with its source
locations removed (they name the files and lines the program compiled from), and the cubin less
its debug sections (harness.toolbox.cubin_code_digest: they name the file and its mtime).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import threading

from reprokit.trace.inprogram import WRAPPED

_STATE: dict = {}
_LOCK = threading.RLock()
# the recorded @jit specialisation being launched in this thread (recorder sets it)
CURRENT = threading.local()
# the config the autotuning listener last heard named best in this thread: the recorder's
# Autotuner.run wrapper takes it (heard()) when that run returns, to say who named its choice
HEARD = threading.local()
HELPERS = ("triton_helpers", "triton_compat")  # what Inductor's generated modules import from its runtime


def install(event, out: str, deriving, interpret: bool = False) -> None:
    """Chain our listeners in (idempotent). `event` writes one record; `deriving()` is true while
    the recorder's own derivation compiles a twin (not a compile of the program's); `interpret`:
    the program runs under Triton's interpreter (the recorder read it, at the program's edge)."""
    if _STATE:
        return
    try:
        from triton import knobs
    except ImportError:  # 3.0-3.3: no listener
        return
    _STATE.update(event=event, out=out, deriving=deriving, n=0, keys={}, options={})
    _STATE["slot"] = _chain(knobs.compilation, _Slot(lambda **kw: _guarded(_compiled, kw.get("src"), **kw),
                                                     "Triton's compile listener"))
    tuning = getattr(knobs, "autotuning", None)
    # 3.8+: a single slot too. Not under the interpreter: there 3.9's autotuner, to call a
    # listener, looks for the JITFunction under an InterpretedFunction and raises.
    if tuning is not None and "listener" in _fields(tuning) and not interpret:
        _chain(tuning, _Slot(lambda **kw: _guarded(_tuned, None, **kw), "Triton's autotuning listener"))
    _watch_inductor()


def after_fork(out: str) -> None:
    """In a forked child (recorder._after_fork): its own folder, compile numbering and launch
    counts; the parent's lock may have been held by a thread the fork left behind."""
    global _LOCK
    if not _STATE:
        return
    _LOCK = threading.RLock()
    _STATE.update(out=out, n=0, keys={})
    _STATE.pop("launches", None)


def _chain(knob, slot):
    """Make `knob.listener` the slot (a data descriptor on its class: every later set goes
    through it), with the listener already there chained in front, said once."""
    previous = knob.__dict__.pop("listener", None)
    type(knob).listener = slot
    if previous is not None:
        knob.listener = previous
    return slot


def _fields(obj) -> set:
    return set(vars(type(obj))) | set(vars(obj))


def _who(fn) -> str:
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


class _Slot:
    """`knobs.compilation.listener` made a slot that keeps reprokit in the chain: reading it gives
    the listener Triton calls; setting it (a tool, the program) puts the new listener first and
    reprokit after it, with one line on stderr, unless the new one already calls what it read
    (a tool that chains, as tritonparse's wrapping would). Setting None removes the other tool's."""

    def __init__(self, ours, what: str = "Triton's compile listener"):
        self.ours = ours
        self.effective = ours
        self.what = what

    def __get__(self, obj, cls=None):
        return self if obj is None else self.effective

    def __set__(self, obj, value) -> None:
        if value is None or value is self.ours:
            self.effective = self.ours
            return
        if _calls(value, self.effective):
            self.effective = value  # it chains to the listener it read: reprokit is still called
            return
        sys.stderr.write(f"reprokit: trace: {self.what} is a single slot, and {_who(value)} set it: "
                         "reprokit chains it (it is called first, then reprokit's)\n")
        ours = self.ours

        def both(*args, **kwargs):
            value(*args, **kwargs)
            ours(*args, **kwargs)

        self.effective = both


def check_at_exit() -> None:
    """At a normal exit: how often each generated kernel launched, by its compile's cache key
    (a listener set after ours needs no word here: it was chained when it was set, _Slot)."""
    counts = _STATE.get("launches") if _STATE else None
    if counts:
        _STATE["event"]({"type": "generated_launches", "launches": dict(sorted(counts.items()))})


def _calls(fn, target) -> bool:
    """Whether `fn` holds `target` in its closure (it calls the listener it found, as we do)."""
    cells = getattr(fn, "__closure__", None) or ()
    return any(getattr(c, "cell_contents", None) is target for c in cells)


# --- compiles ---------------------------------------------------------------------------------

def _guarded(record, about, *args, **kwargs) -> None:
    """Run a recording step; the program must run as it would untraced, so a step that fails is
    a record missing (a `miss`, with the kernel's name and the error), never the program's failure."""
    try:
        record(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - see the docstring: the program runs on, the miss is recorded
        _STATE["event"]({"type": "miss", "kernel": str(getattr(about, "name", None) or getattr(about, "__name__", "?")),
                         "error": f"{type(e).__name__}: {e}"[:500]})


def _compiled(src=None, metadata=None, metadata_group=None, cache_hit=False, **_):
    if src is None or metadata is None or _STATE["deriving"]():
        return
    fn = getattr(src, "fn", None)
    if fn is None or not hasattr(fn, "arg_names"):  # an IR-file compile: no Python source to carry
        return
    group = dict(metadata_group or {})
    digests = digests_of(group)
    n = getattr(CURRENT, "n", None)
    if n is not None:  # the program's own compile in a @jit launch: the digests of the specialisation it described
        if n:
            _STATE["event"]({"type": "digest", "n": n, "digests": digests, "cache_hit": bool(cache_hit),
                             "key": _cache_key(group), "cache_root": _cache_root(group),
                             "toolchain": toolchain(metadata.get("target"))})
        return
    key = _cache_key(group) or str(metadata.get("hash"))
    with _LOCK:
        if key in _STATE["keys"]:
            return  # compiled again in this process (Inductor loads a worker's compile so)
        _STATE["n"] += 1
        _STATE["keys"][key] = _STATE["n"]
        seq = _STATE["n"]
    file, helpers = _carry(fn)
    rec = {"type": "compiled", "seq": seq, "key": key, "kernel": src.name, "file": file, "helpers": helpers,
           "source": {"path": _source(fn), "line": _line(fn)},
           "signature": {str(k): str(v) for k, v in src.signature.items()},
           "constants": [[list(k), _value(v)] for k, v in sorted(src.constants.items(), key=lambda kv: kv[0])],
           "attrs": [[list(k), _value(v)] for k, v in sorted(_attrs(src).items(), key=lambda kv: kv[0])],
           "options": _options(metadata), "target": _target(metadata.get("target")),
           "toolchain": toolchain(metadata.get("target")),
           "digests": digests, "cache_hit": bool(cache_hit), "pid": os.getpid(), "cache_root": _cache_root(group)}
    _STATE["event"](rec)


def _attrs(src) -> dict:
    attrs = getattr(src, "attrs", None) or {}
    return attrs if isinstance(attrs, dict) else {}  # 3.3 kept an AttrsDescriptor object


def _cache_key(group: dict):
    """The cache folder of a compile: what Inductor's launchers name it by (`cache_hash`)."""
    for path in sorted(group.values()):
        return os.path.basename(os.path.dirname(path))
    return None


def _cache_root(group: dict):
    """The Triton cache the program compiled into (a host path: the capture starts from it, the
    plan never holds it)."""
    for path in sorted(group.values()):
        return os.path.dirname(os.path.dirname(os.path.abspath(path)))
    return None


def digests_of(group: dict) -> dict:
    """{"ttir", "cubin", "stages", "options"}: sha256 of a compile's TTIR less locations, of its
    cubin less its debug sections, of every other IR level less what names its file
    (toolbox.stage_digest), and the compile's options as its metadata records them: what the
    capture is held to, and what says where the two parted when they differ."""
    out: dict = {}
    # inside the traced program, loaded at its first compile: the harness's own digests, so that
    # trace and capture agree
    from reprokit.harness.toolbox import compile_options, cubin_code_digest, stage_digest, ttir_digest

    for name, path in sorted(group.items()):
        stage = name.rsplit(".", 1)[-1]
        try:
            if stage == "ttir":
                with open(path, errors="replace") as f:
                    out["ttir"] = ttir_digest(f.read())
            elif stage == "cubin":
                with open(path, "rb") as f:
                    out["cubin"] = cubin_code_digest(f.read())
            elif stage in ("ttgir", "llir", "ptx"):
                with open(path, errors="replace") as f:
                    out.setdefault("stages", {})[stage] = stage_digest(stage, f.read())
            elif stage == "json" and not os.path.basename(name).startswith("__grp__"):
                with open(path) as f:
                    out["options"] = compile_options(json.load(f))
        except (OSError, ValueError):
            continue  # a cache file gone (another process cleared it): that digest is missing, said by its absence
    return out


def toolchain(target) -> dict:
    """The NVIDIA tools this compile used where the program chose them instead of Triton's own:
    {"ptxas": {"from": "torch", "file": "bin/ptxas", "version": "12.8"}} when the ptxas is the one
    inside torch's package (Inductor points TRITON_PTXAS_PATH at it, in the program and in its
    compile workers), {"from": "elsewhere", "version": ...} for any other (its path is the
    host's and never recorded); the same for a libdevice set through TRITON_LIBDEVICE_PATH.
    Empty when Triton used its own: the ptxas gives the PTX its `.version` and the cubin its code,
    so a capture must use the same one to compile what the program compiled."""
    t = _target(target)
    if t.get("backend") != "cuda":
        return {}
    try:
        from triton import knobs
    except ImportError:
        return {}
    nvidia = getattr(knobs, "nvidia", None)
    if nvidia is None:
        return {}
    import triton

    own = os.path.realpath(os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia"))
    out = {}
    blackwell = isinstance(t.get("arch"), int) and t["arch"] >= 100 and "ptxas_blackwell" in _fields(nvidia)
    tool = getattr(nvidia, "ptxas_blackwell" if blackwell else "ptxas", None)
    path = getattr(tool, "path", None)
    if isinstance(path, str) and not os.path.realpath(path).startswith(own + os.sep):
        out["ptxas"] = {**_origin(path), "version": str(getattr(tool, "version", "") or ""),
                        "env": "TRITON_PTXAS_BLACKWELL_PATH" if blackwell else "TRITON_PTXAS_PATH"}
    libdevice = getattr(nvidia, "libdevice_path", None)
    if isinstance(libdevice, str) and libdevice and not os.path.realpath(libdevice).startswith(own + os.sep):
        out["libdevice"] = {**_origin(libdevice), "env": "TRITON_LIBDEVICE_PATH"}
    return out


def _origin(path: str) -> dict:
    """Where a tool lies, as something another host can find again: a file inside torch's
    package (by its path there), or "elsewhere"."""
    torch = sys.modules.get("torch")
    where = getattr(torch, "__file__", None)
    if where:
        for base, p in ((os.path.dirname(os.path.abspath(where)), os.path.abspath(path)),
                        (os.path.dirname(os.path.realpath(where)), os.path.realpath(path))):
            if p.startswith(base + os.sep):
                return {"from": "torch", "file": os.path.relpath(p, base)}
    return {"from": "elsewhere"}


def _source(fn):
    code = getattr(getattr(fn, "fn", None), "__code__", None)
    return os.path.abspath(code.co_filename) if code is not None else None


def _line(fn):
    code = getattr(getattr(fn, "fn", None), "__code__", None)
    return code.co_firstlineno if code is not None else None


def _carry(fn) -> tuple:
    """Copy the module that defines `fn` (and the Inductor helpers it imports) into kernels/:
    (its file name there, [helper file names])."""
    path = _source(fn)
    out = _STATE["out"]
    stem = os.path.splitext(os.path.basename(path or "generated"))[0]
    name = f"generated/{stem}.py"
    dest = os.path.join(out, "kernels", name)
    if path is not None and os.path.isfile(path) and not os.path.exists(dest):
        _copy(path, dest)
    helpers = []
    glb = getattr(getattr(fn, "fn", None), "__globals__", {}) or {}
    runtime = "torch._inductor.runtime"
    uses = any(str(getattr(v, "__name__", "")).startswith(runtime) or str(getattr(v, "__module__", "")).startswith(runtime)
               for v in list(glb.values()))
    if uses:
        import importlib

        for mod in HELPERS:
            m = importlib.import_module(f"{runtime}.{mod}")
            if m.__file__ is None:
                continue
            target = os.path.join(out, "kernels", "generated", "_inductor_runtime", f"{mod}.py")
            if not os.path.exists(target):
                _copy(m.__file__, target)
            helpers.append(f"generated/_inductor_runtime/{mod}.py")
    return name, helpers


def _copy(src: str, dest: str) -> None:
    """Copy under a name of this process and thread, then rename: Inductor compiles from
    several threads of one process (max-autotune's precompile pool), and two copying the same
    helper must neither clash nor leave half a file."""
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    tmp = f"{dest}.{os.getpid()}-{threading.get_ident()}.tmp"
    shutil.copyfile(src, tmp)
    os.replace(tmp, dest)


def _value(v):
    """A constant or attribute as JSON: plain values as they are, lists of them, a dtype by name;
    anything else as {"repr": ...} (the capture cannot recreate it and says so)."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_value(x) for x in v]
    if type(v).__name__ == "constexpr" and hasattr(v, "value"):
        return _value(v.value)
    if type(v).__name__ == "dtype" and hasattr(v, "name"):
        return {"dtype": str(v.name)}
    return {"repr": repr(v)}


def _target(t) -> dict:
    if isinstance(t, dict):
        return {k: t[k] for k in ("backend", "arch", "warp_size") if k in t}
    return {"backend": getattr(t, "backend", None), "arch": getattr(t, "arch", None),
            "warp_size": getattr(t, "warp_size", None)}


_NOT_OPTIONS = ("arch", "extern_libs", "ptx_options", "backend_name", "supported_fp8_dtypes",
                "deprecated_fp8_dot_operand_dtypes", "allowed_dot_input_precisions")


def _options(metadata: dict) -> dict:
    """The compile options that differ from the backend's defaults, as plain values: what a
    capture passes to triton.compile so that it compiles what the program compiled."""
    target = metadata.get("target")
    tkey = json.dumps(_target(target), sort_keys=True, default=str)
    defaults = _STATE["options"].get(tkey)
    if defaults is None:
        from triton.backends.compiler import GPUTarget
        from triton.compiler.compiler import make_backend

        t = _target(target)
        defaults = dict(vars(make_backend(GPUTarget(t["backend"], t["arch"], t["warp_size"])).parse_options({})))
        _STATE["options"][tkey] = defaults
    out = {}
    for k, default in sorted(defaults.items()):
        if k in _NOT_OPTIONS or k not in metadata:
            continue
        v = metadata[k]
        if isinstance(v, (bool, int, float, str)) or v is None:
            if v != default:
                out[k] = v
    return out


# --- Inductor's launches ----------------------------------------------------------------------

_HEURISTICS = "torch._inductor.runtime.triton_heuristics"


def _wrapped_now() -> bool:
    """Wrap CachingAutotuner.run if Inductor's runtime module has defined it; whether it is."""
    module = sys.modules.get(_HEURISTICS)
    if module is None or getattr(module, "CachingAutotuner", None) is None:
        return False
    _wrap_caching_autotuner(module)
    return True


def _watch_inductor() -> None:
    """Wrap CachingAutotuner.run now if Inductor's runtime is loaded, else once it is. Triton is
    often first imported by that very module (`import triton` at its top), so this runs while it
    is half made: in sys.modules, without CachingAutotuner yet. Then the watch stays, and the
    next import anywhere after the module is done (Inductor makes many before its first launch)
    wraps it."""
    if _wrapped_now():
        return
    # inside the traced program: what the boot watches triton with
    from reprokit.trace.inprogram.afterimport import AfterImport

    sys.meta_path.insert(0, AfterImport(_HEURISTICS, _wrap_caching_autotuner,
                                        meanwhile=lambda: _HEURISTICS in sys.modules and _wrapped_now()))


def _wrap_caching_autotuner(module) -> None:
    cls = getattr(module, "CachingAutotuner", None)
    if cls is None or getattr(cls.run, WRAPPED, False):
        return
    original = cls.run

    launches = _STATE.setdefault("launches", {})

    def run(self, *args, **kwargs):
        # Before its first launch a tuner holds a launcher per config; the launch autotunes and
        # keeps the best one (Inductor has cleared `configs` by then): counted here, first.
        first = "_reprokit_key" not in self.__dict__ and not kwargs.get("benchmark_run")
        configs = len(getattr(self, "launchers", None) or ()) if first else 0
        result = original(self, *args, **kwargs)
        if kwargs.get("benchmark_run"):  # the autotuner timing a config: no launch of the program's
            return result
        key = self.__dict__.get("_reprokit_key")
        if key is None:
            _guarded(_inductor_launch, getattr(self, "fn", None), self, configs)
            key = self.__dict__["_reprokit_key"] = _launched_key(self)
        launches[key] = launches.get(key, 0) + 1  # a dict increment per launch: the whole cost
        return result

    run.__dict__[WRAPPED] = True
    cls.run = run


def _launched_key(tuner) -> str:
    launchers = list(getattr(tuner, "launchers", None) or [])
    return str(getattr(launchers[0], "cache_hash", None) or "?") if len(launchers) == 1 else "?"


def _inductor_launch(tuner, configs_before: int = 0) -> None:
    """`configs_before`: how many launchers the tuner held before its first launch autotuned."""
    launchers = list(getattr(tuner, "launchers", None) or [])
    if len(launchers) != 1:
        return
    fn = getattr(tuner, "fn", None)
    _STATE["event"]({"type": "generated_launch", "kernel": getattr(fn, "__name__", "?"),
                     "source": {"path": _source(fn), "line": _line(fn)},
                     "key": getattr(launchers[0], "cache_hash", None),
                     "configs": max(len(getattr(tuner, "configs", None) or ()), configs_before),
                     "chosen": _config(getattr(launchers[0], "config", None))})


def _config(cfg) -> dict | None:
    if cfg is None:
        return None
    out = {"kwargs": {k: _value(v) for k, v in sorted((getattr(cfg, "kwargs", None) or {}).items())}}
    for key in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        v = getattr(cfg, key, None)
        if v is not None:
            out[key] = v
    return out


def _tuned(*, fn=None, key=None, best_config=None, configs_timings=None, duration=None, cache_hit=False, **_):
    """3.8+ autotuning listener (keywords, as AutotuneListener calls it): the autotuner's own best
    config, every config's timings (ms), and whether they came from its disk cache."""
    timings = configs_timings if isinstance(configs_timings, dict) else {}
    record = {"type": "autotune_listener", "kernel": getattr(getattr(fn, "fn", fn), "__name__", "?"),
              "chosen": _config(best_config), "cache_hit": bool(cache_hit),
              "duration_s": duration if isinstance(duration, (int, float)) else None,
              "timings": sorted(([_config(c), _value(t)] for c, t in timings.items()), key=json.dumps)}
    HEARD.best = best_config
    _STATE["event"](record)


def heard():
    """The config the listener last named best in this thread, taken (None: it said nothing since)."""
    return HEARD.__dict__.pop("best", None)
