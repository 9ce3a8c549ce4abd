"""The host's side of a traced program: start it with the recorder, and read back what it recorded.

The program runs as the user wrote the command (`python script.py ARGS`: the python that command
names is the one whose Triton is traced), with `boot/` first on PYTHONPATH and reprokit importable
after it. Its stdout goes where ours goes (stderr under --json, so that JSON stays clean); its
stderr is passed through and its tail kept, so a program that fails says why in the bundle.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Mapping

from reprokit import proc
from reprokit.errors import UsageError

BOOT = Path(__file__).resolve().parent / "inprogram" / "boot"
TENSORS = ("none", "small", "all")


@dataclass(frozen=True)
class TraceOptions:
    """What one trace asks for: the command, the GPU profile (as a dict), where records go."""

    argv: tuple[Any, ...]
    profile: dict[str, Any]
    interpret: bool
    tensors: str = "none"
    stdout_to_stderr: bool = False


@dataclass(frozen=True)
class ProgramRun:
    """How the program ended and what the recorder wrote (records.jsonl, parsed)."""

    exit_code: int
    seconds: float
    records: tuple[Any, ...]
    stderr_tail: str
    start: dict[str, Any] | None = None
    specs: tuple[Any, ...] = ()
    autotune: tuple[Any, ...] = ()
    misses: tuple[Any, ...] = ()
    launched: frozenset[Any] = field(default_factory=frozenset)
    processes: dict[str, Any] = field(default_factory=dict)
    # torch.compile's caches in the traced run: "off" (reprokit turned them off, child_env) or
    # "as set" (the user's own TORCHINDUCTOR_FORCE_DISABLE_CACHES / TORCH_COMPILE_... stood)
    inductor_caches: str = "off"

    def said_of_processes(self) -> str:
        """One clause on the program's recording processes, where it had more than one: how many
        were forked and how many compiled or launched anything (Inductor's compile workers)."""
        p = self.processes
        if p.get("recorded", 0) <= 1:
            return ""
        return (f" ({p['recorded']} processes imported Triton, {p['forked']} of them forked; "
                f"{p['compiled']} compiled and {p['launched']} launched a kernel)")


# torch's switch for every compile cache of torch.compile (torch.compiler.config.force_disable_caches)
INDUCTOR_CACHES = ("TORCHINDUCTOR_FORCE_DISABLE_CACHES", "TORCH_COMPILE_FORCE_DISABLE_CACHES")


def users_caches(environ: dict[str, Any]) -> str | None:
    """`NAME=VALUE` of the user's own choice about torch.compile's caches, or None."""
    return next((f"{k}={environ[k]}" for k in INDUCTOR_CACHES if k in environ), None)


def child_env(trace_dir: Path, options: TraceOptions, environ: dict[str, Any]) -> dict[str, Any]:
    """The program's environment: ours, with the recorder's bootstrap first on PYTHONPATH and
    nothing else of reprokit's there (the bootstrap loads our package from its folder)."""
    env = dict(environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOT), env.get("PYTHONPATH")) if p)
    env["REPROKIT_TRACE_PACKAGE"] = str(Path(__file__).resolve().parents[1])
    env["REPROKIT_TRACE_DIR"] = str(trace_dir)
    env["REPROKIT_TRACE_PROFILE"] = json.dumps(options.profile, sort_keys=True)
    env["REPROKIT_TRACE_TENSORS"] = options.tensors
    if users_caches(env) is None:
        # A warm Inductor cache (its FX graph cache, with torch 2.11's static launcher) loads
        # compiled kernels without compiling them, so a second run of a torch.compile program
        # would show launches and no compile to capture. Off for the traced run, unless the
        # user chose (trace.json says which).
        env[INDUCTOR_CACHES[0]] = "1"
    if options.interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


def resolve(argv: tuple[Any, ...]) -> list[Any]:
    """The command with its program found on PATH (one clear line when it is not there)."""
    if not argv:
        raise UsageError("trace: name the program after --, e.g. reprokit trace -- python script.py")
    exe = shutil.which(argv[0])
    if exe is None:
        raise UsageError(f"trace: {argv[0]}: no such program on PATH")
    return [argv[0], *argv[1:]]


_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")


def interpreter(argv: tuple[Any, ...], environ: Mapping[str, str]) -> str | None:
    """The Python a command runs directly (`python3 script.py`: argv[0] on the PATH it runs with),
    absolute but not resolved (a venv's python stands for its venv), or None (a launcher, a
    script of its own): the recorder's start record names the one that truly ran."""
    exe = shutil.which(str(argv[0]), path=environ.get("PATH")) if argv else None
    if exe is None or not _PYTHON.fullmatch(os.path.basename(exe)):
        return None
    return os.path.abspath(exe)


def run(options: TraceOptions, trace_dir: Path, environ: dict[str, Any]) -> ProgramRun:
    """Run the program to its end, then parse its records.

    The program runs in a session of its own under reprokit's lifeline (reprokit/proc.py): when
    the trace ends, however it ends (SIGKILL included), no process of the program outlives it.
    The records folder reaches it absolute, so that a program (or a subprocess of it) in another
    folder records where reprokit reads."""
    argv = resolve(options.argv)
    trace_dir = trace_dir.absolute()
    trace_dir.mkdir(parents=True, exist_ok=True)
    env = child_env(trace_dir, options, environ)
    tail: list[Any] = []
    t0 = time.perf_counter()
    try:
        with proc.session(argv, env=env, stderr=subprocess.PIPE, text=True, errors="replace",
                          stdout=sys.stderr if options.stdout_to_stderr else None) as program:
            pump = threading.Thread(target=_pump, args=(program.stderr, tail), daemon=True)
            pump.start()
            code = program.wait()
            root = program.pid
    except OSError as e:
        raise UsageError(f"trace: cannot start {argv[0]}: {e.strerror}") from None
    pump.join()
    seconds = time.perf_counter() - t0
    ran = parse(trace_dir, code, seconds, "".join(tail), root_pid=root)
    chosen = users_caches(environ)
    return replace(ran, inductor_caches=f"as set ({chosen})" if chosen else "off")


def _pump(stream: Any, tail: list[Any]) -> None:
    """Pass the program's stderr through, keeping its last 60 lines."""
    for line in stream:
        sys.stderr.write(line)
        tail.append(line)
        if len(tail) > 60:
            del tail[0]
    sys.stderr.flush()


def _read(path: Path) -> list[Any]:
    out: list[Any] = []
    try:
        text = path.read_text()
    except FileNotFoundError:  # a process killed between making its folder and its first record
        return out
    for line in text.splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            continue  # a line cut short by a process killed mid-write: the others stand
    return out


@dataclass(frozen=True)
class _Process:
    """One recording process's folder (inprogram/recorder.py: p<pid>-<hex>/) and its records."""

    folder: Path
    records: list[Any]

    @property
    def start(self) -> dict[str, Any]:
        return next(r for r in self.records if r["type"] == "start")

    def content(self) -> str:
        """What it recorded, as text: the order of processes the scheduler cannot change."""
        return json.dumps([(r.get("kernel"), r.get("spec"), r.get("call")) for r in self.records
                           if r["type"] == "spec"], sort_keys=True, default=str)


def _processes(trace_dir: Path, root_pid: int | None) -> list[Any]:
    """The recording processes in the order the merge numbers them: the program reprokit started
    first, then the others by what they recorded (so that workers the scheduler ran in another
    order merge alike), and by when they started where they recorded the same."""
    procs = []
    for folder in sorted(p for p in trace_dir.iterdir() if p.is_dir() and p.name.startswith("p")):
        recs = _read(folder / "records.jsonl")
        # a process that imported Triton says so first, but a compile heard in it before that
        # record reached the file must not hide the process
        if any(r["type"] == "start" for r in recs):
            procs.append(_Process(folder, recs))
    return sorted(procs, key=lambda p: (p.start.get("pid") != root_pid, p.content(), p.start.get("since", 0)))


_SUFFIX = re.compile(r"-\d+(?=\.py$)")


def _place_kernels(procs: list[Any], dest: Path) -> list[Any]:
    """Each process's kernel files under one folder: a file two processes extracted alike is kept
    once, and two kernels of one name with different text are told apart (`-2`) in the merge's
    order; the spec records name the file where it now is. The program's own modules that the
    kernels import keep their names (the first process's copy). Returns the records, renamed."""
    dest.mkdir(parents=True, exist_ok=True)
    texts: dict[str, Any] = {}  # final name -> bytes
    out = []
    for one in procs:
        named: dict[str, Any] = {}
        specs = [r for r in one.records if r["type"] == "spec"]
        for name in dict.fromkeys(r["file"] for r in specs):
            data = (one.folder / "kernels" / name).read_bytes()
            base, i = _SUFFIX.sub("", name), 2
            final = base
            while final in texts and texts[final] != data:
                final, i = f"{base[:-3]}-{i}.py", i + 1
            texts[final] = data
            named[name] = final
        for f in sorted((one.folder / "kernels").glob("*.py")):
            # a module of the program's own (`name.py`; a kernel's file is `module.kernel.py`)
            if f.name.count(".") == 1 and f.name not in texts:
                texts[f.name] = f.read_bytes()
        for f in sorted((one.folder / "kernels").glob("*/**/*.py")):
            # generated kernels and their helpers (trace/inprogram/listen.py: generated/...), named by
            # their compiler after their text: the first process's copy
            rel = f.relative_to(one.folder / "kernels").as_posix()
            texts.setdefault(rel, f.read_bytes())
        out.append([{**r, "file": named[r["file"]]} if r["type"] == "spec" else r for r in one.records])
    for name, data in sorted(texts.items()):
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        (dest / name).write_bytes(data)
    return out


def merge(per_process: list[Any]) -> list[Any]:
    """One list of records from each process's, in the order given (_processes): the
    specialisations numbered anew in that order, one that several processes launched kept once
    (same kernel file, same specialisation) with the first process's tensors, and each
    process's later records following its own numbers."""
    merged: list[Any] = []
    known: dict[tuple[str, str], int] = {}
    calls: dict[tuple[int, Any], int] = {}
    kept: set[Any] = set()
    n = 0
    for i, records in enumerate(per_process):
        local: dict[int, int] = {}

        def call_id(c: Any, i: int = i) -> int:  # an autotuner call, numbered anew across processes
            return calls.setdefault((i, c), len(calls) + 1)

        for r in records:
            if r["type"] == "spec":
                key = (r["file"], json.dumps(r["spec"], sort_keys=True))
                if key in known:
                    local[r["n"]] = known[key]
                    continue
                n += 1
                known[key] = local[r["n"]] = n
                tuned = r.get("autotune")
                merged.append({**r, "n": n, "autotune": tuned and {**tuned, "call": call_id(tuned["call"])}})
            elif r["type"] == "autotune":
                merged.append({**r, "call": call_id(r["call"])})
            elif r["type"] == "start":
                if not any(m["type"] == "start" for m in merged):
                    merged.append(r)
            elif r["type"] in ("launched", "digest"):
                if r["n"] in local:
                    merged.append({**r, "n": local[r["n"]]})
            elif r["type"] == "tensors":  # one process's tensors of a specialisation, kept once
                if r["n"] in local and (local[r["n"]], r["when"]) not in kept:
                    kept.add((local[r["n"]], r["when"]))
                    merged.append({**r, "n": local[r["n"]]})
            elif r["type"] == "end":
                counts = {str(local[int(k)]): v for k, v in r["launches"].items() if int(k) in local}
                merged.append({**r, "launches": counts})
            else:
                merged.append(r)
    ends = [r for r in merged if r["type"] == "end"]
    if len(ends) > 1:  # launches summed over the processes
        total: dict[str, Any] = {}
        for e in ends:
            for k, v in e["launches"].items():
                total[k] = total.get(k, 0) + v
        merged = [r for r in merged if r["type"] != "end"] + [{"type": "end", "launches": total}]
    return merged


def parse(trace_dir: Path, exit_code: int, seconds: float, stderr_tail: str, root_pid: int | None = None
          ) -> ProgramRun:
    """Merge what every process of the program recorded (inprogram/recorder.py: one folder each) into one
    numbering, with the kernel files under `trace_dir/kernels` and kept tensors under
    `trace_dir/tensors`, named by the merged numbers. `root_pid`: the program reprokit started."""
    procs = _processes(trace_dir, root_pid)
    per_process = _place_kernels(procs, trace_dir / "kernels")
    for one, recs in zip(procs, per_process):
        for r in recs:
            if r["type"] == "tensors":
                r["_from"] = one.folder / "tensors" / r["file"]
    records = merge(per_process)
    for r in records:
        if r["type"] == "tensors":
            src = r.pop("_from")
            r["file"] = f"{r['n']:04d}.{r['when']}.pt"
            (trace_dir / "tensors").mkdir(exist_ok=True)
            shutil.copyfile(src, trace_dir / "tensors" / r["file"])
    start = next((r for r in records if r["type"] == "start"), None)
    compiling = ("compiled", "digest", "spec")
    launching = ("launched", "generated_launch", "generated_launches")
    processes = {"recorded": len(procs),
                 "forked": sum(1 for one in procs if one.start.get("forked_from") is not None),
                 "compiled": sum(1 for one in procs if any(r["type"] in compiling for r in one.records)),
                 "launched": sum(1 for one in procs if any(r["type"] in launching for r in one.records))}
    return ProgramRun(processes=processes,
        exit_code=exit_code, seconds=seconds, records=tuple(records), stderr_tail=stderr_tail, start=start,
        specs=tuple(r for r in records if r["type"] == "spec"),
        autotune=tuple(r for r in records if r["type"] == "autotune"),
        misses=tuple(r for r in records if r["type"] == "miss"),
        launched=frozenset(r["n"] for r in records if r["type"] == "launched"))
