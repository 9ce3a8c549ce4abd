"""The host's side of a traced program: start it with the recorder, and read back what it recorded.

The program runs as the user wrote the command (`python script.py ARGS`: the python that command
names is the one whose Triton is traced), with `boot/` first on PYTHONPATH and reprokit importable
after it. Its stdout goes where ours goes (stderr under --json, so that JSON stays clean); its
stderr is passed through and its tail kept, so a program that fails says why in the bundle.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.errors import UsageError

BOOT = Path(__file__).resolve().parent / "boot"
TENSORS = ("none", "small", "all")


@dataclass(frozen=True)
class TraceOptions:
    """What one trace asks for: the command, the GPU profile (as a dict), where records go."""

    argv: tuple
    profile: dict
    interpret: bool
    tensors: str = "none"
    stdout_to_stderr: bool = False


@dataclass(frozen=True)
class ProgramRun:
    """How the program ended and what the recorder wrote (records.jsonl, parsed)."""

    exit_code: int
    seconds: float
    records: tuple
    stderr_tail: str
    start: dict | None = None
    specs: tuple = ()
    autotune: tuple = ()
    misses: tuple = ()
    launched: frozenset = field(default_factory=frozenset)


def child_env(trace_dir: Path, options: TraceOptions, environ: dict) -> dict:
    """The program's environment: ours, with the recorder's bootstrap first on PYTHONPATH."""
    env = dict(environ)
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(BOOT), pkg_parent, env.get("PYTHONPATH")) if p)
    env["REPROKIT_TRACE_DIR"] = str(trace_dir)
    env["REPROKIT_TRACE_PROFILE"] = json.dumps(options.profile, sort_keys=True)
    env["REPROKIT_TRACE_TENSORS"] = options.tensors
    if options.interpret:
        env["TRITON_INTERPRET"] = "1"
    return env


def resolve(argv: tuple) -> list:
    """The command with its program found on PATH (one clear line when it is not there)."""
    if not argv:
        raise UsageError("trace: name the program after --, e.g. reprokit trace -- python script.py")
    exe = shutil.which(argv[0])
    if exe is None:
        raise UsageError(f"trace: {argv[0]}: no such program on PATH")
    return [argv[0], *argv[1:]]


def run(options: TraceOptions, trace_dir: Path, environ: dict) -> ProgramRun:
    """Run the program to its end, then parse its records."""
    argv = resolve(options.argv)
    trace_dir.mkdir(parents=True, exist_ok=True)
    env = child_env(trace_dir, options, environ)
    tail: list = []
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen(argv, env=env, stderr=subprocess.PIPE, text=True, errors="replace",
                                stdout=sys.stderr if options.stdout_to_stderr else None)
    except OSError as e:
        raise UsageError(f"trace: cannot start {argv[0]}: {e.strerror}") from None
    pump = threading.Thread(target=_pump, args=(proc.stderr, tail), daemon=True)
    pump.start()
    try:
        code = proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    pump.join()
    seconds = time.perf_counter() - t0
    return parse(trace_dir, code, seconds, "".join(tail))


def _pump(stream, tail: list) -> None:
    """Pass the program's stderr through, keeping its last 60 lines."""
    for line in stream:
        sys.stderr.write(line)
        tail.append(line)
        if len(tail) > 60:
            del tail[0]
    sys.stderr.flush()


def _read(path: Path) -> list:
    out = []
    for line in path.read_text().splitlines():
        try:
            out.append(json.loads(line))
        except json.JSONDecodeError:
            break  # a line cut short by a process killed mid-write: what came before stands
    return out


def merge(per_process: list) -> list:
    """One list of records from each process's (first the one that imported triton first): the
    specialisations numbered anew in that order, one that several processes launched kept once
    (same kernel file, same specialisation), and each process's later records following its
    own numbers."""
    merged: list = []
    known: dict = {}
    calls: dict = {}
    n = 0
    for proc, records in enumerate(per_process):
        local = {}

        def call_id(c, proc=proc):  # an autotuner call, numbered anew across processes
            return calls.setdefault((proc, c), len(calls) + 1)

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
            elif r["type"] in ("launched", "tensors", "digest"):
                if r["n"] in local:
                    merged.append({**r, "n": local[r["n"]]})
            elif r["type"] == "end":
                counts = {str(local[int(k)]): v for k, v in r["launches"].items() if int(k) in local}
                merged.append({**r, "launches": counts})
            else:
                merged.append(r)
    ends = [r for r in merged if r["type"] == "end"]
    if len(ends) > 1:  # launches summed over the processes
        total: dict = {}
        for e in ends:
            for k, v in e["launches"].items():
                total[k] = total.get(k, 0) + v
        merged = [r for r in merged if r["type"] != "end"] + [{"type": "end", "launches": total}]
    return merged


def parse(trace_dir: Path, exit_code: int, seconds: float, stderr_tail: str) -> ProgramRun:
    per_process = [recs for recs in (_read(f) for f in sorted(trace_dir.glob("records.*.jsonl"))) if recs]
    # the process that imported triton first comes first (each file begins with its start record)
    per_process.sort(key=lambda recs: recs[0].get("since", 0) if recs[0]["type"] == "start" else 0)
    records = merge(per_process)
    start = next((r for r in records if r["type"] == "start"), None)
    return ProgramRun(
        exit_code=exit_code, seconds=seconds, records=tuple(records), stderr_tail=stderr_tail, start=start,
        specs=tuple(r for r in records if r["type"] == "spec"),
        autotune=tuple(r for r in records if r["type"] == "autotune"),
        misses=tuple(r for r in records if r["type"] == "miss"),
        launched=frozenset(r["n"] for r in records if r["type"] == "launched"))
