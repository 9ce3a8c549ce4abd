"""What the docker executor costs over the local one: the same suite, same Triton, warm image, as a ratio.

    python benchmarks/bench_stacks.py [--stack triton-3.5-cu130] [--gpu h100] [--repeat 5]

The local side runs the harness as a host subprocess of a Python that has the stack's Triton
(the stack's cached venv, built on first use); the docker side runs it in the stack's image
(built before timing; BASE_IMAGE / WITH_TORCH as for `make bundle`). Both go through
reprokit.run.capture.capture into fresh folders, alternating, after one untimed warm-up each, so
the ratio is container start/stop, mounts and logs over identical compile work.

The headline ratio is of the fastest runs (timeit's rule: interference only ever adds time,
and on a small shared machine compile times drift by seconds); the ratio of medians, the
pairwise median (runs alternate) and the time spent outside the harness are printed beside it.
Target: at most 1.15x. `--check` exits 1 above it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from reprokit.config import load_config
from reprokit.errors import ReprokitError
from reprokit.executors.docker import DockerExecutor
from reprokit.executors.local import LocalExecutor
from reprokit.executors.venv import VenvExecutor
from reprokit.options import GpuOptions, HostEnv, RunOptions
from reprokit.run.capture import capture
from reprokit.suite import build_plan

TARGET = 1.15


def timed_capture(stack, profile, executor, root: Path, tag: str, args) -> tuple[float, float]:
    """One capture into a fresh folder: (wall seconds, harness-reported seconds)."""
    out = root / tag
    started = time.perf_counter()
    cap = capture(stack, executor, out, build_plan(GpuOptions(profile), only=args.cases),
                  RunOptions(workers=args.workers))
    wall = time.perf_counter() - started
    shutil.rmtree(out)
    return wall, float(cap.results["wall_s"])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack", default="triton-3.5-cu130")
    ap.add_argument("--gpu", default="h100", help="GPU profile (the suite runs compile-only for its target)")
    ap.add_argument("--repeat", type=int, default=5, help="timed runs per executor (default 5)")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--cases", default=None, metavar="GLOBS", help="only cases whose id matches")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON on stdout")
    ap.add_argument("--check", action="store_true", help=f"exit 1 when the ratio is above {TARGET}")
    args = ap.parse_args(argv)
    console = Console(stderr=True, highlight=False)

    cfg = load_config()
    stack, profile = cfg.stack(args.stack), cfg.gpu(args.gpu)
    try:
        host = HostEnv.from_environ(os.environ)
        venv = VenvExecutor(host=host, with_torch=False)
        local = LocalExecutor(python=venv.prepare(stack)["python"], host=host)
        docker_ex = DockerExecutor(host=host, with_torch=host.with_torch is True)
        image = docker_ex.prepare(stack)
        console.print(f"stack {stack.name}: image {image['image']} ({'built' if image['built'] else 'warm'}), "
                      f"local python {local.python}; {args.repeat} runs each, {args.workers} workers")
        times: dict[str, list[tuple[float, float]]] = {"local": [], "docker": []}
        with tempfile.TemporaryDirectory(prefix="bench-stacks-") as tmp:
            root = Path(tmp)
            for name, ex in (("local", local), ("docker", docker_ex)):
                timed_capture(stack, profile, ex, root, f"warm-{name}", args)
            for i in range(args.repeat):
                for name, ex in (("local", local), ("docker", docker_ex)):
                    times[name].append(timed_capture(stack, profile, ex, root, f"{name}-{i}", args))
                    console.print(f"  run {i + 1} {name:6s} {times[name][-1][0]:7.2f} s")
    except ReprokitError as e:
        console.print(f"[red]error:[/] {e}")
        return e.exit_code

    med = {n: statistics.median(w for w, _ in t) for n, t in times.items()}
    harness = {n: statistics.median(h for _, h in t) for n, t in times.items()}
    best = {n: min(w for w, _ in t) for n, t in times.items()}
    ratio = best["docker"] / best["local"]
    paired = statistics.median(d[0] / l[0] for d, l in zip(times["docker"], times["local"]))
    outside = {n: statistics.median(w - h for w, h in t) for n, t in times.items()}
    report = {
        "stack": stack.name, "profile": profile.key, "repeat": args.repeat, "workers": args.workers,
        "image": image["image"], "local_python": local.python,
        "wall_s": {n: [round(w, 3) for w, _ in t] for n, t in times.items()},
        "best_wall_s": {n: round(v, 3) for n, v in best.items()},
        "median_wall_s": {n: round(v, 3) for n, v in med.items()},
        "median_harness_s": {n: round(v, 3) for n, v in harness.items()},
        "median_outside_harness_s": {n: round(v, 3) for n, v in outside.items()},
        "overhead_s": round(med["docker"] - med["local"], 3),
        "ratio": round(ratio, 3), "median_ratio": round(med["docker"] / med["local"], 3),
        "paired_ratio": round(paired, 3),
        "target": TARGET, "within_target": ratio <= TARGET,
    }
    table = Table(title=f"docker vs local: {stack.name}, {profile.key} compile-only, {args.repeat} runs each")
    for col in ("executor", "best wall s", "median wall s", "median harness s", "outside harness s", "runs"):
        table.add_column(col)
    for n in ("local", "docker"):
        table.add_row(n, f"{best[n]:.2f}", f"{med[n]:.2f}", f"{harness[n]:.2f}", f"{outside[n]:.2f}",
                      " ".join(f"{w:.2f}" for w, _ in times[n]))
    Console(highlight=False).print(table)
    verdict = "[green]within[/]" if ratio <= TARGET else "[red]above[/]"
    Console(highlight=False).print(
        f"docker/local = [bold]{ratio:.3f}x[/] (best runs; medians {med['docker'] / med['local']:.3f}x, "
        f"pairwise median {paired:.3f}x; "
        f"outside the harness docker {outside['docker']:.2f} s vs local {outside['local']:.2f} s), "
        f"{verdict} the {TARGET}x target")
    if args.json:
        print(json.dumps(report, indent=1))
    return 1 if args.check and ratio > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
