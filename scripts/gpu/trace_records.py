"""Diagnose a trace that fell short: run a program under the recorder (reprokit.trace.program.run,
as `reprokit trace` does) and print, per recording process, its start record and how many records
of each type it wrote, with the first few. Usage: trace_records.py OUT -- python program.py ...
With --probe, the program runs through a wrapper that says at its exit whether Inductor's
CachingAutotuner.run was wrapped, and how Inductor was set to compile (worker start, threads)."""

from __future__ import annotations

import collections
import json
import os
import sys
from pathlib import Path

from reprokit.trace import program
PROBE = r'''
import atexit, os, runpy, sys
def _report():
    th = sys.modules.get("torch._inductor.runtime.triton_heuristics")
    cls = getattr(th, "CachingAutotuner", None)
    try:
        from torch._inductor import config
        how = (config.worker_start_method, config.compile_threads)
    except Exception as e:
        how = repr(e)
    print("PROBE pid", os.getpid(), "heuristics loaded", th is not None, "run wrapped",
          getattr(getattr(cls, "run", None), "_reprokit_wrapped", None), "inductor", how,
          "meta_path", [type(f).__name__ for f in sys.meta_path], file=sys.stderr)
atexit.register(_report)
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(os.path.abspath(sys.argv[0])))
runpy.run_path(sys.argv[0], run_name="__main__")
'''


def main() -> int:
    out = Path(sys.argv[1])
    argv = sys.argv[sys.argv.index("--") + 1:]
    if "--probe" in sys.argv[:sys.argv.index("--")]:
        out.mkdir(parents=True, exist_ok=True)
        (out / "probe.py").write_text(PROBE)
        argv = [argv[0], str(out / "probe.py"), *argv[1:]]
    opts = program.TraceOptions(tuple(argv), {"capability": 90, "name": "h100"}, False)
    ran = program.run(opts, out / "records", dict(os.environ))
    print("exit", ran.exit_code, "processes", ran.processes)
    for folder in sorted((out / "records").iterdir()):
        if not folder.is_dir():
            continue
        recs = program._read(folder / "records.jsonl")
        start = next((r for r in recs if r["type"] == "start"), {})
        kinds = collections.Counter(r["type"] for r in recs)
        print(folder.name, "pid", start.get("pid"), "forked_from", start.get("forked_from"), dict(kinds))
        for r in [r for r in recs if r["type"] != "start"][:4]:
            print("   ", json.dumps({k: r[k] for k in list(r)[:8]}, default=str)[:300])
    return 0


if __name__ == "__main__":
    sys.exit(main())
