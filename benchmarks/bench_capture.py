"""make bench-capture: the harness's wall time against bare `triton.compile` of the same cases.

All figures come from one run on one stack (a cached venv), as ratios against the baseline
measured here: overhead of a sequential capture (target <= 1.10x), and the speed-up of a
capture with 2 workers over the sequential baseline (target >= 1.7x). Runs are interleaved;
each figure is the best of --repeat runs, and the medians follow.
"""

from __future__ import annotations

import argparse
import json
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
from reprokit.executors import harness_env  # noqa: E402
from reprokit.executors.local import run_python_harness  # noqa: E402
from reprokit.executors.venv import VenvExecutor  # noqa: E402
from reprokit.suite import build_plan, copy_kernels, kernels_dir  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--stack", default="triton-3.6-cu130")
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    cfg = load_config()
    stack, profile = cfg.stack(args.stack), cfg.gpu(args.gpu)
    ex = VenvExecutor()
    python = ex.prepare(stack)["python"]
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    plan = build_plan(profile, stack.pins())
    (work / "plan.json").write_text(json.dumps(plan))
    (work / "plan-nosass.json").write_text(json.dumps({**plan, "sass": False}))
    copy_kernels(plan, kernels_dir(), work / "kernels")

    def bare() -> float:
        p = subprocess.run([python, str(ROOT / "benchmarks" / "_bare_compile.py"), str(work / "plan.json"),
                            str(work / "kernels")], capture_output=True, text=True, env=harness_env(), check=True)
        return json.loads(p.stdout.strip().splitlines()[-1])["seconds"]

    def captured(workers: int, sass: bool = True) -> float:
        out = work / f"cap-{workers}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        shutil.copy(work / ("plan.json" if sass else "plan-nosass.json"), out / "plan.json")
        shutil.copytree(work / "kernels", out / "kernels")
        (out / "logs").mkdir()
        t0 = time.perf_counter()
        r = run_python_harness("venv", python, out, workers=workers, timeout_s=1800)
        seconds = time.perf_counter() - t0
        if not r.ok:
            raise SystemExit(f"harness failed: {r.log_tail}")
        return seconds

    runs = {"base": [], "seq_nosass": [], "par_nosass": [], "seq": [], "par": []}
    try:
        # Interleaved, so that drift in the machine's speed falls on every figure alike.
        for _ in range(args.repeat):
            runs["base"].append(bare())
            runs["seq_nosass"].append(captured(1, sass=False))
            runs["par_nosass"].append(captured(2, sass=False))
            runs["seq"].append(captured(1))
            runs["par"].append(captured(2))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    base, seq_nosass, par_nosass, seq, par = (min(runs[k]) for k in ("base", "seq_nosass", "par_nosass", "seq", "par"))
    med = {k: statistics.median(v) for k, v in runs.items()}
    n = len(plan["cases"])
    print(f"stack {stack.name} (triton {stack.triton}), profile {profile.key}, {n} cases, best of {args.repeat}")
    print(f"  bare triton.compile, sequential   {base:7.2f} s   1.00x (baseline)")
    print("  the harness alone (isolation, fresh caches, IR + metadata + ptxas records, oracle), no SASS:")
    print(f"    capture, 1 worker               {seq_nosass:7.2f} s   overhead {100 * (seq_nosass / base - 1):+.1f}% "
          "(target <= +10%)")
    print(f"    capture, 2 workers              {par_nosass:7.2f} s   {base / par_nosass:.2f}x faster than baseline "
          "(target >= 1.70x)")
    print("  the full capture, SASS included (one disassembler start-up per cubin):")
    print(f"    capture, 1 worker               {seq:7.2f} s   overhead {100 * (seq / base - 1):+.1f}%")
    print(f"    capture, 2 workers              {par:7.2f} s   {base / par:.2f}x of baseline; "
          f"{seq / par:.2f}x faster than its own 1-worker run")
    print(f"  medians: baseline {med['base']:.2f} s; no SASS {med['seq_nosass']:.2f} s "
          f"({100 * (med['seq_nosass'] / med['base'] - 1):+.1f}%) and {med['par_nosass']:.2f} s "
          f"({med['base'] / med['par_nosass']:.2f}x); with SASS {med['seq']:.2f} s and {med['par']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
