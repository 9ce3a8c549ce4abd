"""make bench-sweep: `reprokit sweep` over 1,200 points against bare `triton.compile` of the
same points in 2 plain processes (target: at most 1.25x).

Both contenders are whole processes timed from outside, on one stack's venv, with 2 workers:
the sweep (plan, harness with a process per point, records streamed to disk, condensing,
answers, bundle) under the shipped SASS policy (`base`: SASS of each group's base point; the
others are judged at PTX; tests/integration/test_sweep.py checks that every verdict equals a
full-SASS run's) with the SASS cache off; the baseline is benchmarks/_bare_compile.py over each
half of the same plan, two processes at once, its wall time that of the slower one. Rounds
alternate baseline and sweep, so that drift in the machine's speed falls on both alike.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reprokit.config import load_config  # noqa: E402
from reprokit.run.execute import copy_kernels  # noqa: E402
from reprokit.suite import kernels_dir  # noqa: E402
from reprokit.sweep.spec import build_sweep_plan, load_spec  # noqa: E402

TARGET = 1.25
SPEC = ROOT / "benchmarks" / "sweep-bench.toml"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack", default="triton-3.5-cu130")
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds (default 1)")
    ap.add_argument("--spec", type=Path, default=SPEC, help="another grid, for a quicker look (default: %(default)s)")
    args = ap.parse_args()
    from reprokit.executors.venv import VenvExecutor
    from reprokit.options import HostEnv

    cfg = load_config()
    stack, profile = cfg.stack(args.stack), cfg.gpu("h100")
    venv = VenvExecutor(host=HostEnv.from_environ(os.environ))
    venv.prepare(stack)
    python = str(venv.venv_dir(stack) / "bin" / "python")
    spec = load_spec(args.spec)
    plan = build_sweep_plan(spec, profile, stack.pins())
    n = len(plan)
    env = {**os.environ, "REPROKIT_SASS_CACHE": "off", "PYTHONPATH": str(ROOT)}
    env.pop("SOURCE_DATE_EPOCH", None)
    tmp = Path(tempfile.mkdtemp(prefix="bench-sweep-"))
    try:
        copy_kernels(plan, kernels_dir(), tmp / "kernels")
        halves = []
        for i in (0, 1):
            p = tmp / f"half{i}.json"
            p.write_text(json.dumps(plan.with_cases(plan.cases[i::2]).to_json()))
            halves.append(p)
        bare_t, sweep_t = [], []
        for r in range(args.rounds):
            load = os.getloadavg()[0]
            c0, t0 = _children_cpu(), time.perf_counter()
            procs = [subprocess.Popen([python, str(ROOT / "benchmarks" / "_bare_compile.py"), str(h),
                                       str(tmp / "kernels")], stdout=subprocess.PIPE, text=True, env=env)
                     for h in halves]
            outs = [json.loads(p.communicate()[0]) for p in procs]
            bare_t.append(time.perf_counter() - t0)
            bare_cpu = _children_cpu() - c0
            compiled = sum(o["compiled"] + o["failed"] for o in outs)
            work = tmp / f"work{r}"
            c0, t0 = _children_cpu(), time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "reprokit", "sweep", str(args.spec), "--stacks", stack.name,
                                "--workers", "2", "--work", str(work), "--out", str(work / "out"), "--json"],
                               capture_output=True, text=True, cwd=ROOT, env=env)
            sweep_t.append(time.perf_counter() - t0)
            sweep_cpu = _children_cpu() - c0
            if p.returncode != 0:
                raise SystemExit(f"bench: the sweep failed: {p.stderr.strip().splitlines()[-1:]}")
            (outcome,) = json.loads(p.stdout)["outcomes"]
            size = Path(outcome["bundle"]).stat().st_size
            print(f"round {r + 1} (load {load:.2f} before, {os.getloadavg()[0]:.2f} after): "
                  f"bare {bare_t[-1]:.1f} s, {bare_cpu:.0f} CPU s ({compiled} compiles in 2 processes), "
                  f"sweep {sweep_t[-1]:.1f} s, {sweep_cpu:.0f} CPU s ({outcome['ran']} points, bundle "
                  f"{size / 1e6:.2f} MB): {sweep_t[-1] / bare_t[-1]:.3f}x", flush=True)
            shutil.rmtree(work)
        ratio = statistics.median(s / b for s, b in zip(sweep_t, bare_t))
        print(f"bench-sweep: {n} points of {spec.name} on {stack.name} ({profile.arch}), 2 workers, SASS policy "
              f"base, cache off: sweep / bare triton.compile in 2 processes = {ratio:.3f}x "
              f"(target <= {TARGET}x) {'MET' if ratio <= TARGET else 'NOT MET'}")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _children_cpu() -> float:
    """User + system CPU seconds of the finished child processes (and theirs) so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


if __name__ == "__main__":
    sys.exit(main())
