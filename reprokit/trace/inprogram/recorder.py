"""Inside the traced program: see every kernel launch, and write down each new specialisation.

Installed by boot/sitecustomize.py right after `import triton` finishes. What it wraps, the same
on every release 3.0-3.9 (each has these methods under these names; the hooks do not line up):

- `JITFunction.run(*args, grid, warmup, **kwargs)`: every launch (and warm-up) of a compiled
  kernel, on a GPU, with the real arguments; `InterpretedFunction.run` is the same under
  TRITON_INTERPRET=1, where JIT hooks (cache_hook, jit_cache_hook, launch hooks) never fire.
- `Autotuner.run`: which configs were tried and which one the program got. Under the interpreter
  its benchmarker would ask the driver: it gets an ordinal benchmarker (standin.OrdinalBench), so
  every config runs once, all are recorded, and the first is the one the program goes on with.

The specialisation of each launch comes from the harness's derivation (reprokit.harness.call:
the release's own JIT run on stand-ins of the launch's arguments, the same code that specialises
a declared call case), never from the hooks, so GPU and interpreter traces are alike. A launch
whose arguments were seen before costs their description and a dictionary look-up.

Each process records into a folder of its own, `$REPROKIT_TRACE_DIR/p<pid>-<hex>/` (records.jsonl,
the extracted kernel files, kept tensors), numbering its specialisations from 1: a program's own
subprocesses and spawned workers that import triton are traced through the environment (boot/),
and a forked child starts afresh at the fork (`os.register_at_fork`), so nothing of its parent's
counter, files or known specialisations is shared. The host merges the folders
(reprokit/trace/program.py). Each record is one `os.write` to an O_APPEND file: nothing is
buffered, so a program that dies midway leaves everything it launched before, and a child forked
mid-write inherits no half line to flush into its parent's file.
"""

from __future__ import annotations

import atexit
import inspect
import json
import os
import platform
import shutil
import sys
import threading
import time
import types
from typing import Any

from reprokit.trace.inprogram import WRAPPED

_STATE: dict = {}
_LOCK = threading.RLock()
_DERIVING = threading.local()


def install() -> None:
    """Wrap Triton's launch paths once (idempotent); a no-op unless reprokit trace started us."""
    if _STATE or not os.environ.get("REPROKIT_TRACE_DIR"):
        return
    import triton

    # reprokit hands the folder over absolute; made absolute here too, before the program can
    # change folder again, so that no record lands in a folder of the program's
    base = os.path.abspath(os.environ["REPROKIT_TRACE_DIR"])
    profile = json.loads(os.environ.get("REPROKIT_TRACE_PROFILE") or "{}")
    interpret = os.environ.get("TRITON_INTERPRET", "0") not in ("", "0")
    _STATE.update(base=base, profile=profile, capability=int(profile.get("capability", 90)), interpret=interpret,
                  tensors=os.environ.get("REPROKIT_TRACE_TENSORS", "none"), standin=None)
    # `since`: the monotonic clock at install, which orders the processes of one program where
    # nothing else does (not kept in the bundle)
    _STATE["head"] = {"type": "start", "triton": triton.__version__, "interpret": interpret, "python": sys.executable,
                      "python_version": platform.python_version(), "torch": _version("torch")}
    _begin_process(forked_from=None)
    atexit.register(_finish)
    os.register_at_fork(after_in_child=_after_fork)
    from triton.runtime import jit

    _wrap_run(jit.JITFunction)
    if interpret:
        from triton.runtime import interpreter

        # inside the traced program: loaded once its Triton is, and only what the hook needs.
        from reprokit.trace.inprogram import standin
        if "run" in vars(interpreter.InterpretedFunction):  # 3.6+: a method, as on JITFunction
            _wrap_run(interpreter.InterpretedFunction)
        else:  # 3.0-3.5: `run` is set per instance and `kernel[grid]` skips it: every launch is a GridExecutor call
            _wrap_grid_executor(interpreter.GridExecutor)
            _keep_jit_kwargs(interpreter.InterpretedFunction)
        _STATE["standin"] = standin.install(profile)
    from triton.runtime import autotuner

    if interpret and callable(getattr(autotuner, "do_bench", None)):
        # 3.0-3.1 time configs with the module's own do_bench (triton.testing's, CUDA events).
        from reprokit.trace.inprogram.standin import OrdinalBench

        autotuner.do_bench = OrdinalBench()
    _wrap_autotuner(autotuner.Autotuner)
    # inside the traced program: loaded once its Triton is, and only what the hook needs.
    from reprokit.trace.inprogram import tmafill
    _STATE["tmafill"] = tmafill
    tmafill.install(_tensor)  # 3.0-3.3's host-filled descriptors (none on 3.4+)
    # inside the traced program: Triton's compile listener (3.4+): generated kernels, and digests
    from reprokit.trace.inprogram import listen
    listen.install(_event, _STATE["out"], lambda: getattr(_DERIVING, "on", False),
                   interpret=os.environ.get("TRITON_INTERPRET", "0") not in ("", "0"))
    _STATE["listen"] = listen


def _version(dist: str):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _begin_process(forked_from) -> None:
    """This process's own folder, records file and numbering (see the module docstring)."""
    folder = os.path.join(_STATE["base"], f"p{os.getpid()}-{os.urandom(4).hex()}")
    os.makedirs(os.path.join(folder, "kernels"))
    _STATE.update(out=folder, pid=os.getpid(), seen={}, memo={}, fast={}, kernels={}, count=0, autotune_calls=0, finished=False,
                  log=os.open(os.path.join(folder, "records.jsonl"),
                              os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644))
    _event({**_STATE["head"], "since": time.monotonic_ns(), "pid": os.getpid(), "forked_from": forked_from})


def _after_fork() -> None:
    """In a forked child: records of its own from here on. The parent's specialisations are not
    the child's (a kernel the parent launched is recorded again when the child launches it, and
    the host keeps it once); its lock may have been held by a thread that the fork left behind."""
    global _LOCK
    _LOCK = threading.RLock()
    try:
        os.close(_STATE["log"])
    except OSError:
        pass
    _begin_process(forked_from=_STATE["pid"])
    if _STATE.get("listen") is not None:
        _STATE["listen"].after_fork(_STATE["out"])
    # multiprocessing's forked workers (a Pool's, a DataLoader's) leave through os._exit, which
    # runs no atexit handler (and multiprocessing clears its own finalizers in a new child): the
    # launch counts are written on the way out through it.
    real_exit = _STATE.setdefault("os_exit", os._exit)

    def _exit(code):
        try:
            _finish()
        except OSError:  # a full disk: the records so far stand, the child still leaves
            pass
        real_exit(code)

    os._exit = _exit


def _finish() -> None:
    """At a normal exit (a raised exception included): how often each specialisation launched."""
    if _STATE.get("finished"):
        return
    _STATE["finished"] = True
    with _LOCK:
        counts = {str(e["n"]): e["launches"] for e in _STATE["seen"].values()}
    _event({"type": "end", "launches": counts})
    if _STATE.get("listen") is not None:
        _STATE["listen"].check_at_exit()


def _event(rec: dict) -> None:
    data = (json.dumps(rec, sort_keys=True) + "\n").encode()
    while data:
        data = data[os.write(_STATE["log"], data):]


def _wrap_run(cls) -> None:
    original = cls.run
    if getattr(original, WRAPPED, False):
        return

    def run(self, *args, grid=None, warmup=False, **kwargs):
        if warmup and not getattr(_DERIVING, "on", False):
            # `kernel.warmup(...)` compiles without launching and hands the program the compiled
            # kernel, which it may launch itself (`compiled[grid](...)`, as Triton's fused-softmax
            # tutorial does), never through `run` again: the specialisation is recorded here.
            # Not a warm-up on dtypes alone (`kernel.warmup(torch.float32, ...)` passes
            # MockTensors, 1-element stand-ins): its call would be no launch a replay could make.
            entry = None
            if not any(type(v).__name__ == "MockTensor" for v in (*args, *kwargs.values())):
                entry = _see_or_miss(self, lambda: _name(self), args, kwargs, grid, warmup=True)
            listen = _STATE.get("listen")
            if listen is not None:
                listen.CURRENT.n = entry["n"] if entry is not None else 0
            try:
                return original(self, *args, grid=grid, warmup=warmup, **kwargs)
            finally:
                if listen is not None:
                    listen.CURRENT.n = None
        if warmup:  # the derivation's own warm-up of a JIT twin
            return original(self, *args, grid=grid, warmup=warmup, **kwargs)
        entry = _see_or_miss(self, lambda: _name(self), args, kwargs, grid)
        listen = _STATE.get("listen")
        if listen is not None:  # a compile in this launch is this specialisation's: its digests
            listen.CURRENT.n = entry["n"] if entry is not None else 0  # 0: a @jit launch, nothing new
        try:
            return _launch(entry, args, kwargs, lambda: original(self, *args, grid=grid, warmup=warmup, **kwargs),
                           lambda: getattr(self, "arg_names", ()))
        finally:
            if listen is not None:
                listen.CURRENT.n = None

    run.__dict__[WRAPPED] = True
    cls.run = run


def _wrap_grid_executor(cls) -> None:
    """3.0-3.5's interpreter: GridExecutor(fn, arg_names, grid)(*args, **kwargs) is every launch."""
    original = cls.__call__
    if getattr(original, WRAPPED, False):
        return

    def call(self, *args, **kwargs):
        entry = _see_or_miss(_executed(self.fn), lambda: getattr(self.fn, "__name__", "?"), args, kwargs, self.grid)
        return _launch(entry, args, kwargs, lambda: original(self, *args, **kwargs),
                       lambda: getattr(self, "arg_names", ()))

    call.__dict__[WRAPPED] = True
    cls.__call__ = call


def _keep_jit_kwargs(cls) -> None:
    """3.2-3.5's InterpretedFunction takes the decorator's arguments (do_not_specialize, ...) and
    keeps them only in its rewriter, out of a GridExecutor's reach: note them by function."""
    original = cls.__init__
    if getattr(original, WRAPPED, False) or "kwargs" not in inspect.signature(original).parameters:
        return  # 3.0-3.1 take no decorator arguments under the interpreter

    def init(self, fn, **kwargs):
        original(self, fn, **kwargs)
        _JIT_KWARGS[fn] = {k: v for k, v in kwargs.items() if k in _JIT_ARGS and v is not None}

    init.__dict__[WRAPPED] = True
    cls.__init__ = init


_JIT_KWARGS: dict = {}


def _executed(fn):
    """What a 3.0-3.5 GridExecutor runs, as a launcher for _see: the function itself, or, where
    its decorator had arguments, one object per function that carries them (`kwargs`, as on an
    InterpretedFunction). The executor may hold the rewritten function (3.2+): its original is
    the key it is cached under."""
    known = _STATE.setdefault("executed", {}).get(fn)
    if known is not None:
        return known
    from triton.runtime import interpreter

    rewritten = getattr(interpreter.InterpretedFunction, "rewritten_fn", {})
    source = next((k for k, v in rewritten.items() if v is fn), fn)
    kw = _JIT_KWARGS.get(source) or {}
    known = types.SimpleNamespace(fn=fn, kwargs=kw, __name__=fn.__name__) if kw else fn
    _STATE["executed"][fn] = known
    return known


def _see_or_miss(launcher, name, args: tuple, kwargs: dict, grid, warmup: bool = False):
    """_see's entry for a launch, or None with the miss recorded (`name()`: the kernel's name, asked
    only then): the program must run as it would untraced, so a launch the recorder cannot derive
    is a record missing, not a failure."""
    try:
        return _see(launcher, args, kwargs, grid, warmup)
    except Exception as e:  # noqa: BLE001 - see the docstring: the program runs on, the miss is recorded
        _event({"type": "miss", "kernel": name(), "error": f"{type(e).__name__}: {e}"[:500]})
        return None


def _launch(entry, args: tuple, kwargs: dict, launch, names=tuple):
    """Run `launch()`, keeping the tensors around it when the entry asks (by parameter name:
    `names()` gives the kernel's), and say once that the entry's specialisation was launched."""
    if entry is not None and entry.get("save"):
        _keep_tensors(entry, args, kwargs, "inputs", names)
    result = launch()
    if entry is not None:
        if entry.get("save"):
            _keep_tensors(entry, args, kwargs, "outputs", names)
        if not entry.get("launched"):
            entry["launched"] = True
            _event({"type": "launched", "n": entry["n"]})
    return result


def _keep_tensors(entry: dict, args: tuple, kwargs: dict, when: str, names) -> None:
    """_save_tensors, never failing the launch: the program runs as it would untraced, and a
    launch whose tensors could not be kept is replayed without them (the record says why)."""
    try:
        _save_tensors(entry, args, kwargs, when, names())
    except Exception as e:  # noqa: BLE001 - see the docstring
        entry["save"] = False
        entry.pop("pending", None)
        _event({"type": "tensors_failed", "n": entry["n"], "when": when, "error": f"{type(e).__name__}: {e}"[:500]})


def _name(kernel) -> str:
    fn = kernel if inspect.isfunction(kernel) else getattr(kernel, "fn", None)
    return str(getattr(fn, "__name__", None) or getattr(kernel, "__name__", "?"))


_LAUNCH = ("grid", "warmup", "stream")
_JIT_ARGS = ("do_not_specialize", "do_not_specialize_on_alignment", "debug", "noinline")


def _kernel(launcher) -> dict:
    """What is known of a kernel once: its Python function, its signature, the JIT twin the
    derivation runs (never the program's own JITFunction, whose cache would answer instead of
    compiling), and its extracted source file."""
    fn = launcher if inspect.isfunction(launcher) else launcher.fn
    known = _STATE["kernels"].get(id(fn))
    if known is not None:
        return known
    # inside the traced program: loaded once its Triton is, and only what the hook needs.
    from reprokit.harness import call

    # inside the traced program: loaded once its Triton is, and only what the hook needs.
    from reprokit.trace.inprogram import extract
    kw = dict(getattr(launcher, "kwargs", None) or {})  # the interpreter keeps the decorator's arguments here
    jit_args = {k: getattr(launcher, k, None) if getattr(launcher, k, None) is not None else kw.get(k)
                for k in _JIT_ARGS}
    # `kwargs`: what call.jit_function makes the twin with, so that the twin specialises as the
    # program's kernel does (without it, do_not_specialize was lost and a launch's recorded
    # specialisation hinted arguments the JIT never hints)
    decorated = types.SimpleNamespace(fn=fn, kwargs={k: v for k, v in jit_args.items() if v is not None}, **jit_args)
    if extract.is_gluon(launcher):  # `@gluon.jit`: its twin, and its extracted file, are Gluon's too
        decorated.language = "gluon"
    text, skipped, modules, written = extract.extract_function(fn, decorated)
    for mod, path in sorted(modules.items()):  # the program's own modules it imports travel beside it
        dest = os.path.join(_STATE["out"], "kernels", mod + ".py")
        if not os.path.exists(dest):
            shutil.copyfile(path, dest)
    for mod, body in sorted(written.items()):  # a package's helpers the kernel reads (named by their digest)
        dest = os.path.join(_STATE["out"], "kernels", mod + ".py")
        if not os.path.exists(dest):
            with open(dest, "w") as f:
                f.write(body)
    src = inspect.getsourcefile(fn) or ""
    stem = os.path.splitext(os.path.basename(src))[0] or "kernel"
    name = f"{stem}.{fn.__name__}.py"
    taken = {k["file"] for k in _STATE["kernels"].values()}
    i = 2
    while name in taken:  # two kernels of one name in two modules of one name
        name, i = f"{stem}.{fn.__name__}-{i}.py", i + 1
    with open(os.path.join(_STATE["out"], "kernels", name), "w") as f:
        f.write(text)
    known = {"fn": fn, "signature": inspect.signature(fn), "twin": call.jit_function(decorated), "file": name,
             "language": getattr(decorated, "language", "triton"),
             "skipped": skipped,
             "source": {"path": os.path.abspath(src) if src else None, "line": fn.__code__.co_firstlineno}}
    _STATE["kernels"][id(fn)] = known
    return known


def _see(launcher, args: tuple, kwargs: dict, grid, warmup: bool = False):
    """The record of this launch's specialisation: new ones are written out, known ones counted.

    A launch is first described as a call (docs/user-cases.md); a call seen before (the common
    case: a loop) costs that description and a look-up. A new call is specialised by the
    harness's derivation (reprokit.harness.call: the release's own JIT, on stand-ins of the
    call's arguments), and two calls the JIT would compile once are one record.
    """
    fast = _fast_key(launcher, args, kwargs)
    if fast is not None:
        entry = _STATE["fast"].get(fast)
        if entry is not None:
            return _again(entry, warmup)
    # inside the traced program: loaded once its Triton is, and only what the hook needs.
    from reprokit.harness import call as derivation

    k = _kernel(launcher)
    params = k["signature"].parameters
    bound_sig = k["signature"].bind(*args, **{n: v for n, v in kwargs.items() if n in params})
    bound_sig.apply_defaults()
    bound = dict(bound_sig.arguments)
    # What is neither a parameter nor the launch itself (3.0's autotuner and interpreter pass
    # grid and warmup down as keywords) is a launch option.
    options = {n: _plain(v) for n, v in kwargs.items() if n not in params and n not in _LAUNCH and v is not None}
    the_call: dict[str, Any] = {"args": {n: describe(v) for n, v in bound.items()}, "options": options}
    groups = aliases(bound)
    if groups:  # arguments over one memory (written in place): a replay makes them so again
        the_call["aliases"] = groups
    memo_key = (id(k["fn"]), json.dumps(the_call, sort_keys=True))
    with _LOCK:
        entry = _STATE["memo"].get(memo_key)
        if entry is not None:
            if fast is not None:
                _STATE["fast"][fast] = entry
            return _again(entry, warmup)
    g = grid(dict(bound)) if callable(grid) else grid
    the_call["grid"] = [int(x) for x in (g if isinstance(g, (tuple, list)) else [g])]
    profile = _STATE["profile"] if _STATE["interpret"] else None
    _DERIVING.on = True  # its JIT warm-up of the twin is no warm-up of the program's
    try:
        spec = derivation.derive(k["twin"], the_call, driver_profile=profile).spec
    finally:
        _DERIVING.on = False
    key = (id(k["fn"]), derivation.key_of(spec))
    with _LOCK:
        entry = _STATE["seen"].get(key)
        if entry is not None:
            _STATE["memo"][memo_key] = entry
            if fast is not None:
                _STATE["fast"][fast] = entry
            return _again(entry, warmup)
        _STATE["count"] += 1
        n = _STATE["count"]
        entry = {"n": n, "launches": 0 if warmup else 1, "launched": False, "save": _STATE["tensors"] != "none"}
        if entry["save"]:  # pointers the kernel only writes: kept as zeros, not as uninitialised memory
            # inside the traced program: loaded only when tensors are kept.
            from reprokit.trace.inprogram.writeonly import write_only

            entry["write_only"] = write_only(k["fn"])
        _STATE["seen"][key] = _STATE["memo"][memo_key] = entry
        if fast is not None:
            _STATE["fast"][fast] = entry
        tuning = _TUNING.stack[-1] if getattr(_TUNING, "stack", None) else None
        rec = {"type": "spec", "n": n, "kernel": k["fn"].__name__, "file": k["file"], "source": k["source"],
               "language": k["language"],
               "skipped_names": k["skipped"], "call": the_call, "spec": spec, "warmup": warmup,
               "autotune": None if tuning is None else {"kernel": tuning["kernel"], "call": tuning["call"]}}
        tmafill = _STATE.get("tmafill")
        if tmafill is not None and tmafill.has_fills():
            # arguments that are bytes a recorded fill wrote: the fill, so a replay fills them again
            fills, bases = tmafill.match(bound)
            if entry["save"]:  # held only until the first launch's tensors are kept
                entry["bases"] = bases
            if fills:
                rec["tma_fills"] = fills
        _event(rec)
        return entry


def _again(entry: dict, warmup: bool):
    """A specialisation seen before: counted when launched; the entry itself only at its first
    launch (one first compiled by a warm-up), so that _launch says it was launched."""
    if warmup:
        return None
    entry["launches"] += 1
    return None if entry["launched"] else entry


def _fast_key(launcher, args: tuple, kwargs: dict):
    """A key of the launch's raw arguments that is cheap to make (no binding, no JSON), equal
    for two launches only when their calls are equal: tensors by dtype, shape, strides and
    pointer alignment, other values by type and value. None where a value cannot be hashed so
    (the launch then takes the described path)."""
    try:
        # kwargs in call order: one call site always passes them alike (another order only misses)
        return (id(launcher), tuple(_fast(a) for a in args), tuple((k, _fast(v)) for k, v in kwargs.items()),
                _same_pointers(args, kwargs))
    except TypeError:
        return None


def _same_pointers(args: tuple, kwargs: dict) -> tuple:
    """Which tensor arguments start at one address (by the first one's position): a launch in
    place (dX written into dY's memory) is another call than one over separate tensors."""
    first: dict = {}
    return tuple(first.setdefault(v.data_ptr(), i) for i, v in enumerate((*args, *kwargs.values()))
                 if hasattr(v, "data_ptr") and hasattr(v, "stride"))


def _fast(v):
    if isinstance(v, (tuple, list)):  # a tuple argument: tensors and descriptors in it by metadata (3.8)
        return (type(v), tuple(_fast(x) for x in v))
    if hasattr(v, "data_ptr"):
        if hasattr(v, "stride"):
            return (v.dtype, tuple(v.shape), tuple(v.stride()), v.data_ptr() & 15)
        raise TypeError("a pointer-like value")
    if type(v).__name__ == "TensorDescriptor":
        return ("desc", _fast(v.base), tuple(v.shape), tuple(v.strides), tuple(v.block_shape),
                getattr(v, "padding", None), repr(getattr(v, "layout", None)))
    hash(v)  # TypeError for what cannot be a key
    return (type(v), v)


def _plain(v):
    """A launch option as JSON: plain values as they are, dicts and sequences of them too (the
    JIT takes `extern_libs={'libdevice': path}`, Triton's libdevice tutorial passes it); anything
    else by repr."""
    if isinstance(v, (bool, int, float, str)) or v is None:
        return v
    if isinstance(v, dict) and all(isinstance(k, str) for k in v):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return repr(v)


def describe(value):
    """One argument as the call contract writes it (tensors by metadata, never by data)."""
    # inside the traced program: loaded once its Triton is, and only what the hook needs.
    from reprokit.harness.call import to_json

    if hasattr(value, "data_ptr") and hasattr(value, "dtype") and hasattr(value, "stride"):
        return _tensor(value)
    if type(value).__name__ == "TensorDescriptor" and hasattr(value, "block_shape"):
        d = {"descriptor": _tensor(value.base), "block": [int(x) for x in value.block_shape],
             "shape": [int(x) for x in value.shape], "strides": [int(x) for x in value.strides]}
        if getattr(value, "padding", "zero") != "zero":
            d["padding"] = value.padding
        if getattr(value, "layout", None) is not None:  # a Gluon descriptor: its shared-memory layout
            d["layout"] = layout_json(value.layout)
        return d
    if value is None:
        return {"none": True}
    if isinstance(value, (tuple, list)) and any(hasattr(v, "data_ptr") or type(v).__name__ == "TensorDescriptor"
                                                 or isinstance(v, (tuple, list)) for v in value):
        return [describe(v) for v in value]  # a tuple of tensors or descriptors (3.8's tuple arguments)
    return to_json(value)


def layout_json(layout) -> dict:
    """A Gluon layout (a dataclass of triton.experimental.gluon.language) as JSON: its class by
    name and its fields, which call.value_of makes it from again."""
    # Here, not at the top: this runs inside the user's program, and only a Gluon launch needs them.
    import dataclasses

    from reprokit.harness.call import to_json  # (as above: only a Gluon launch needs it)

    fields = {f.name: getattr(layout, f.name) for f in dataclasses.fields(layout)}
    return {"class": type(layout).__name__, "fields": {k: to_json(v) for k, v in sorted(fields.items())}}


def aliases(bound: dict) -> list:
    """Tensor arguments whose memory overlaps (one storage, overlapping byte ranges), as groups
    [{"bytes": the span they cover together, "align": its start's alignment, "at": {name: byte
    offset from that start}}], in parameter order; [] when none overlap. Ranges, not only equal
    pointers: a view written while another view of it is read aliases too."""
    spans = []
    for name, t in bound.items():
        if not (hasattr(t, "data_ptr") and hasattr(t, "stride") and hasattr(t, "untyped_storage")):
            continue
        size = t.element_size()
        extent = 1 + sum((n - 1) * st for n, st in zip(t.shape, t.stride())) if t.numel() else 0
        start = int(t.data_ptr())
        spans.append((name, int(t.untyped_storage().data_ptr()), start, start + extent * size))
    groups: list = []
    for name, storage, lo, hi in spans:
        if lo == hi:
            continue
        hit = [g for g in groups if g["storage"] == storage and lo < g["hi"] and g["lo"] < hi]
        merged = {"storage": storage, "lo": lo, "hi": hi, "names": [name]}
        for g in hit:
            groups.remove(g)
            merged = {"storage": storage, "lo": min(merged["lo"], g["lo"]), "hi": max(merged["hi"], g["hi"]),
                      "names": g["names"] + merged["names"]}
        groups.append(merged)
    out = []
    order = list(bound)
    for g in groups:
        if len(g["names"]) < 2:
            continue
        align = 16
        while align > 1 and g["lo"] % align:
            align //= 2
        starts = {n: lo for n, _, lo, _ in spans}
        out.append({"bytes": g["hi"] - g["lo"], "align": align,
                    "at": {n: starts[n] - g["lo"] for n in sorted(g["names"], key=order.index)}})
    return sorted(out, key=lambda g: order.index(next(iter(g["at"]))))


def _tensor(t) -> dict:
    ptr = int(t.data_ptr())
    align = 16
    while align > 1 and ptr % align:
        align //= 2
    return {"tensor": [int(x) for x in t.shape], "dtype": str(t.dtype).split(".")[-1],
            "strides": [int(x) for x in t.stride()], "align": align}


def _save_tensors(entry: dict, args: tuple, kwargs: dict, when: str, names=()) -> None:
    """The first launch's tensors, before (inputs) and after (outputs), up to the mode's caps
    (reprokit/limits.py: never more than a bundle reader reads back), by parameter name (a host
    descriptor by its base tensor), as a replay binds them.

    A pointer the kernel only writes (`write_only` in the record) is not kept as the memory the
    program handed it (`torch.empty`: old heap bytes): its inputs are written once the launch has
    shown what it wrote, zeros there and the untouched bytes elsewhere, which the outputs hold
    anyway, so a replay from them reproduces the outputs whole."""
    import torch

    # inside the traced program: the reader's limits, under the program's own REPROKIT_MAX_*.
    from reprokit.limits import tensor_caps

    each, per_file, whole = tensor_caps(_STATE["tensors"], os.environ)
    tensors = _tensors(args, kwargs, names)
    tensors.update(entry.get("bases") or {})  # a host-filled descriptor by the tensor it points into
    # A tensor-like object that is no torch tensor (a library's strided buffer: data_ptr, dtype,
    # stride) is described in the call, but its bytes are not ours to copy: not kept, said so.
    foreign = sorted(n for n, t in tensors.items() if not isinstance(t, torch.Tensor))
    if foreign:
        entry["not_tensors"] = foreign
    tensors = {n: t for n, t in tensors.items() if isinstance(t, torch.Tensor)}
    if when == "outputs" and any(t.is_cuda for t in tensors.values()):
        torch.cuda.synchronize()
    kept, left, used = {}, [], 0
    for name, t in tensors.items():
        size = t.numel() * t.element_size()
        with _LOCK:
            fits = size <= each and used + size <= per_file and _STATE.get("tensor_bytes", 0) + size <= whole
            if fits:
                _STATE["tensor_bytes"] = _STATE.get("tensor_bytes", 0) + size
        if not fits:
            left.append(name)
            continue
        kept[name] = t.detach().to("cpu", copy=True)
        used += size
    if when == "inputs" and entry.get("write_only"):
        # a pointer into memory another argument also reaches (in place, overlapping views) is
        # read through that one: its bytes are kept as they are
        shared: dict = {}
        for name, t in tensors.items():
            shared.setdefault(_storage_of(t), []).append(name)
        entry["write_only"] = frozenset(n for n in entry["write_only"]
                                        if n in tensors and len(shared[_storage_of(tensors[n])]) == 1)
    if when == "inputs" and set(kept) & set(entry.get("write_only") or ()):
        entry["pending"] = (kept, left, used)   # written with the outputs, see above
        return
    if when == "outputs" and entry.get("pending"):
        before, left_before, used_before = entry.pop("pending")
        wrote = sorted(set(before) & set(entry.get("write_only") or ()))
        for name in wrote:
            before[name] = _untouched(before[name], kept.get(name))
        _write_tensors(entry, "inputs", before, left_before, used_before, wrote)
    _write_tensors(entry, when, kept, left, used, [])
    if when == "outputs":
        entry["save"] = False
        entry.pop("bases", None)


def _storage_of(t) -> int:
    storage = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
    return int(storage.data_ptr())


def _untouched(before, after):
    """`before` where the launch left it as it was, zeros where it wrote (all zeros when the
    outputs were not kept or the dtype has no integer twin to compare bits with)."""
    import torch

    twin = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}.get(before.element_size())
    if after is None or twin is None or after.shape != before.shape:
        return torch.zeros_like(before)
    same = before.view(twin) == after.view(twin)   # bit for bit: a NaN left alone is untouched
    return torch.where(same, before, torch.zeros_like(before))


def _write_tensors(entry: dict, when: str, kept: dict, left: list, used: int, write_only: list) -> None:
    import torch

    path = os.path.join(_STATE["out"], "tensors", f"{entry['n']:04d}.{when}.pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(kept, path)
    _event({"type": "tensors", "n": entry["n"], "when": when, "file": os.path.basename(path),
            "kept": sorted(kept), "over_cap": sorted(left), "not_tensors": list(entry.get("not_tensors") or ()),
            "write_only": write_only, "bytes": used})


def _tensors(args: tuple, kwargs: dict, names=()) -> dict:
    """name -> tensor of a launch's arguments: positional ones by the kernel's parameter names
    (`arg<i>` past them), host TensorDescriptors by their base tensor."""
    names = list(names)
    out = {}
    pairs = [(names[i] if i < len(names) else f"arg{i}", v) for i, v in enumerate(args)] + list(kwargs.items())
    for name, v in pairs:
        if isinstance(v, (tuple, list)):  # a tuple argument: its members as `name.i`, as the replay names them
            out.update(_tensors((), {f"{name}.{i}": x for i, x in enumerate(v)}))
            continue
        if type(v).__name__ == "TensorDescriptor":
            v = getattr(v, "base", None)
        if hasattr(v, "data_ptr") and hasattr(v, "numel"):
            out[name] = v
    return out


# --- autotuning ---------------------------------------------------------------------------

_TUNING = threading.local()


def _config(cfg) -> dict:
    kw = getattr(cfg, "kwargs", {}) or {}
    out = {"kwargs": {k: describe(v) for k, v in kw.items()}}
    for key in ("num_warps", "num_stages", "num_ctas", "maxnreg"):
        v = getattr(cfg, key, None)
        if v is not None:
            out[key] = v
    return out


def _wrap_autotuner(cls) -> None:
    original = cls.run
    if getattr(original, WRAPPED, False):
        return

    def run(self, *args, **kwargs):
        stack = getattr(_TUNING, "stack", None)
        if stack is None:
            stack = _TUNING.stack = []
        with _LOCK:
            _STATE["autotune_calls"] += 1
            call = _STATE["autotune_calls"]
        name = _name_of_tuned(self)
        stack.append({"kernel": name, "call": call})
        listen = _STATE.get("listen")  # 3.4+; the autotuning listener itself is 3.8+'s
        if listen is not None:
            listen.heard()  # a word left by a run that was not ours is not this call's
        # Under the interpreter the autotuner's own timer asks the driver: it gets the ordinal one,
        # unless the program gave the autotuner a timer of its own (do_bench=, 3.4+), which runs.
        own = self.__dict__.get("_do_bench") is not None
        if _STATE["interpret"] and not own:
            # inside the traced program: loaded once its Triton is, and only what the hook needs.
            from reprokit.trace.inprogram.standin import OrdinalBench

            # cached_property (3.4+) and the plain attribute (3.0-3.3) both read the instance's dict first.
            self.__dict__["do_bench"] = OrdinalBench()
        try:
            return original(self, *args, **kwargs)
        finally:
            stack.pop()
            best = getattr(self, "best_config", None)
            chosen = _config(best) if best is not None else None
            heard = listen.heard() if listen is not None else None
            # what the program launched is the choice; Triton's own listener, where it spoke for
            # this call and named the same config, is who said so
            by = "trace: first config (the interpreter cannot time)" if _STATE["interpret"] and not own \
                else "Triton's autotuning listener" if heard is not None and heard is best \
                else "autotuner"
            _event({"type": "autotune", "kernel": name, "call": call, "configs": [_config(c) for c in self.configs],
                    "chosen": chosen, "chosen_by": by})

    run.__dict__[WRAPPED] = True
    cls.run = run


def _name_of_tuned(tuner) -> str:
    fn = tuner
    while hasattr(fn, "fn"):
        fn = fn.fn
    return getattr(fn, "__name__", "?")
