"""make bench-capture: the harness's wall time against bare `triton.compile` of the same cases.

All figures come from one run on one stack (a cached venv). Every contender is a whole process
timed from outside, the baseline too: a bare `triton.compile` loop over the plan's cases in one
process. Runs are interleaved round by round, so that drift in the machine's speed falls on
every figure alike; each ratio is the median over rounds of the ratio within a round.

Contenders: the harness without SASS, and the full capture with SASS from a cold cache (every
cubin through the disassembler) and a warm one (a repeated capture of the same stack). Targets:
1 worker at most 10% over the baseline; 2 workers at least 1.7x faster than 1 worker. The
speed-up over the baseline is printed beside its Amdahl bound: the import and Triton's cache key
(a sha256 of libtriton) come before any compile, in the baseline as in the harness.
"""

from __future__ import annotations

import argparse
import json
import os
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
from reprokit.executors.local import LocalExecutor  # noqa: E402
from reprokit.options import HostEnv  # noqa: E402
from reprokit.run.execute import copy_kernels  # noqa: E402
from reprokit.suite import build_plan, kernels_dir  # noqa: E402

OVERHEAD_TARGET = 1.10
SPEEDUP_TARGET = 1.70


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--stack", default="triton-3.6-cu130")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    ap.add_argument("--python", help="an interpreter with Triton to use instead of the stack's venv "
                                     "(a host without a package index); its Triton is what is measured")
    args = ap.parse_args()
    cfg = load_config()
    stack, profile = cfg.stack(args.stack), cfg.gpu(args.gpu)
    if args.python:
        python = args.python
        version = subprocess.run([python, "-c", "import triton; print(triton.__version__)"], capture_output=True,
                                 text=True).stdout.strip()
        if not version:
            raise SystemExit(f"bench: {python} cannot import triton")
        label = f"{python} (triton {version})"
    else:
        from reprokit.executors.venv import VenvExecutor

        python = VenvExecutor(host=HostEnv.from_environ(os.environ)).prepare(stack)["python"]
        label = f"{stack.name} (triton {stack.triton})"
    work = Path(tempfile.mkdtemp(prefix="bench-capture-"))
    plan = build_plan(profile, stack.pins())
    (work / "plan.json").write_text(json.dumps(plan.to_json()))
    (work / "plan-nosass.json").write_text(json.dumps(build_plan(profile, stack.pins(), sass=False).to_json()))
    copy_kernels(plan, kernels_dir(), work / "kernels")
    warm_cache = work / "sass-warm"
    warm_cache.mkdir()

    def bare() -> tuple[float, float]:
        t0 = time.perf_counter()
        p = subprocess.run([python, str(ROOT / "benchmarks" / "_bare_compile.py"), str(work / "plan.json"),
                            str(work / "kernels")], capture_output=True, text=True,
                           env=harness_env(HostEnv.from_environ(os.environ)), check=True)
        seconds = time.perf_counter() - t0
        return seconds, json.loads(p.stdout.strip().splitlines()[-1])["serial_s"]

    def captured(workers: int, sass: str) -> float:
        out = work / "cap"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir()
        shutil.copy(work / ("plan-nosass.json" if sass == "off" else "plan.json"), out / "plan.json")
        shutil.copytree(work / "kernels", out / "kernels")
        (out / "logs").mkdir()
        cache = {"off": "off", "warm": str(warm_cache)}.get(sass)
        if sass == "cold":
            cache = str(work / "sass-cold")
            shutil.rmtree(cache, ignore_errors=True)
            os.mkdir(cache)
        executor = LocalExecutor(python, host=HostEnv.from_environ({**os.environ, "REPROKIT_SASS_CACHE": cache}))
        t0 = time.perf_counter()
        r = executor.run_harness(stack, out, workers=workers, timeout_s=1800, gpu=False)
        seconds = time.perf_counter() - t0
        if not r.ok:
            raise SystemExit(f"harness failed: {r.log_tail}")
        return seconds

    contenders = [(f"{sass}-{w}", w, sass) for sass in ("off", "cold", "warm") for w in (1, 2)]
    runs = {name: [] for name, _, _ in contenders}
    runs["base"], serial = [], []
    try:
        captured(1, "warm")  # fills the warm cache; not timed
        for i in range(args.rounds):
            seconds, serial_s = bare()
            runs["base"].append(seconds)
            serial.append(serial_s)
            for name, workers, sass in contenders:
                runs[name].append(captured(workers, sass))
            print(f"round {i + 1}/{args.rounds}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in runs.items()),
                  file=sys.stderr)
    finally:
        os.environ.pop("REPROKIT_SASS_CACHE", None)
        shutil.rmtree(work, ignore_errors=True)

    def ratio(a: str, b: str) -> float:  # median over rounds of a/b within a round
        return statistics.median(x / y for x, y in zip(runs[a], runs[b]))

    med = {k: statistics.median(v) for k, v in runs.items()}
    s = statistics.median(serial)
    bound = med["base"] / (s + (med["base"] - s) / 2)
    n = len(plan["cases"])
    print(f"stack {label}, profile {profile.key}, {n} cases, {args.rounds} rounds, {os.cpu_count()} CPUs; "
          "medians, whole processes timed from outside")
    print(f"  bare triton.compile, sequential  {med['base']:6.2f} s  baseline (import + cache key {s:.2f} s of it)")
    rows = (("the harness, no SASS", "off"), ("full capture, SASS cache cold", "cold"),
            ("full capture, SASS cache warm", "warm"))
    for title, sass in rows:
        one, two = f"{sass}-1", f"{sass}-2"
        over, par, vs_base = ratio(one, "base"), 1 / ratio(two, one), 1 / ratio(two, "base")
        print(f"  {title}:")
        print(f"    1 worker   {med[one]:6.2f} s  {100 * (over - 1):+6.1f}% over baseline "
              f"(target <= +{100 * (OVERHEAD_TARGET - 1):.0f}%: {'met' if over <= OVERHEAD_TARGET else 'MISSED'})")
        print(f"    2 workers  {med[two]:6.2f} s  {par:.2f}x faster than 1 worker "
              f"(target >= {SPEEDUP_TARGET:.1f}x: {'met' if par >= SPEEDUP_TARGET else 'MISSED'}); "
              f"{vs_base:.2f}x faster than baseline (Amdahl bound {bound:.2f}x)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
