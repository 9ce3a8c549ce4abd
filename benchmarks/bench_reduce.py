"""What `reprokit reduce` costs and gives, on the cases of issue 28:

    python benchmarks/bench_reduce.py [--cases crash,metric] [--workers N] [--time-limit S]

    crash   the control suite's experimental_descriptor.p1 from bundles/examples (SIGABRT in
            TritonGPUAttrDefs.cpp.inc on Triton 3.0.0), the default predicate (the same crash)
    metric  tests/data/persistent_matmul (regs 164 on 3.4.0, 154 on 3.6.0): metric:regs moved by
            at least 5 between triton-3.4-cu129 and triton-3.6-cu130

    scan    `bisect --scan` of tests/data/tf32x3 over 3.5.0..3.9.0 (smem), --jobs 1 against --jobs N:
            every release captured one after another, then N at once (venvs warm)

Each reduction runs from an empty cache (the stacks' venvs warm). Then, in the same run, every
candidate it compiled is compiled again by a bare `triton.compile` in each stack, one after another,
each in a forked child (benchmarks/_bare_reduce.py). Printed per case: compiles per second of the
reduction's search against the bare compiles' (the ratio is the parallel workers' gain less what
the harness adds), the reduction ratio in AST nodes and lines, and the wall time.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reprokit.bundle.reader import open_bundle  # noqa: E402
from reprokit.config import load_config  # noqa: E402
from reprokit.executors.venv import VenvExecutor  # noqa: E402
from reprokit.options import HostEnv  # noqa: E402
from reprokit.run.replay import write_kernels  # noqa: E402
from reprokit.userspec.plan import build_plan, stage_kernels  # noqa: E402
from reprokit.userspec.project import load  # noqa: E402

CASES = {
    "crash": {"args": [str(ROOT / "bundles/examples/triton-3.0-cu129-h100.tgz"), "--case", "experimental_descriptor.p1"],
              "stacks": ["triton-3.0-cu129"]},
    "metric": {"args": ["--project", str(ROOT / "tests/data/persistent_matmul"), "--gpu", "h100", "--case",
                        "matmul.persistent", "--stacks", "triton-3.4-cu129,triton-3.6-cu130", "--predicate",
                        "metric:regs", "--threshold", "5"],
               "stacks": ["triton-3.4-cu129", "triton-3.6-cu130"]},
}


def plan_and_kernels(name: str, where: Path) -> Path:
    kernels = where / "kernels"
    kernels.mkdir()
    if name == "crash":
        b = open_bundle(Path(CASES[name]["args"][0]))
        write_kernels(b, kernels)
        plan = b.plan
    else:
        project = load(ROOT / "tests/data/persistent_matmul/reprokit.toml")
        stage_kernels(project, kernels)
        plan = build_plan(project, load_config().gpu("h100"), only="matmul.persistent").for_stack(
            {"name": "bench"}).to_json()
    (where / "plan.json").write_text(json.dumps(plan))
    return kernels


def bench(name: str, workers: int, time_limit: float | None, executor: VenvExecutor) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-reduce-") as tmp:
        tmp = Path(tmp)
        argv = [sys.executable, "-m", "reprokit", "reduce", *CASES[name]["args"], "--workers", str(workers),
                "--work", str(tmp / "cache"), "--out", str(tmp / "out"), "--json"]
        if time_limit:
            argv += ["--time-limit", str(time_limit)]
        t0 = time.perf_counter()
        p = subprocess.run(argv, capture_output=True, text=True, cwd=tmp, env={**os.environ, "PYTHONPATH": str(ROOT)})
        wall = time.perf_counter() - t0
        if p.returncode != 0:
            raise SystemExit(f"{name}: reduce exited {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
        r = json.loads(p.stdout)
        kernels = plan_and_kernels(name, tmp)
        bare_s, bare_n = 0.0, 0
        cfg = load_config()
        for stack in CASES[name]["stacks"]:
            facts = executor.prepare(cfg.stack(stack))
            q = subprocess.run([facts["python"], str(ROOT / "benchmarks/_bare_reduce.py"), str(tmp / "plan.json"),
                                str(kernels), str(tmp / "cache" / "candidates.jsonl")], capture_output=True, text=True,
                               cwd=tmp, env={**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp)})
            if q.returncode != 0:
                raise SystemExit(f"{name}: bare compiles failed: {q.stderr.strip()[-500:]}")
            got = json.loads(q.stdout.strip().splitlines()[-1])
            bare_s += got["wall_s"]
            bare_n += got["compiled"] + got["failed"]
    return {"case": name, "line": r["line"], "compiles": r["compiles"], "search_s": r["seconds"], "wall_s": wall,
            "reduce_cps": r["compiles"] / r["seconds"], "bare_cps": bare_n / bare_s if bare_s else 0.0,
            "bare_compiles": bare_n, "nodes": (r["original"]["nodes"], r["reduced"]["nodes"]),
            "lines": (r["original"]["lines"], r["reduced"]["lines"]), "stopped": r["stopped"], "kernel": r["kernel"]}


def bench_scan(jobs: int) -> dict:
    walls = {}
    answer = ""
    for j in (1, jobs):
        with tempfile.TemporaryDirectory(prefix="bench-scan-") as tmp:
            argv = [sys.executable, "-m", "reprokit", "bisect", "--case", "dot.tf32x3", "--versions", "3.5.0..3.9.0",
                    "--gpu", "h100", "--metric", "smem", "--scan", "--jobs", str(j), "--out", tmp, "--json"]
            t0 = time.perf_counter()
            p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT / "tests/data/tf32x3",
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
            walls[j] = time.perf_counter() - t0
            if p.returncode != 0:
                raise SystemExit(f"scan exited {p.returncode}: {p.stderr.strip().splitlines()[-1:]}")
            answer = json.loads(p.stdout)["answer"]
    return {"jobs": jobs, "serial_s": walls[1], "parallel_s": walls[jobs], "answer": answer}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cases", default="crash,metric,scan")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--time-limit", type=float, default=None)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    executor = VenvExecutor(host=HostEnv.from_environ(os.environ))
    names = [n.strip() for n in args.cases.split(",") if n.strip()]
    rows = [bench(n, args.workers, args.time_limit, executor) for n in names if n != "scan"]
    sc = bench_scan(max(2, args.workers)) if "scan" in names else None
    if args.json:
        print(json.dumps({"reduce": rows, "scan": sc}, indent=1))
        return 0
    t = Table(title=f"reprokit reduce, {args.workers} workers, against bare triton.compile of the same candidates")
    for col in ("case", "compiles/s reduce", "compiles/s bare", "ratio", "nodes", "lines", "wall s"):
        t.add_column(col)
    for r in rows:
        t.add_row(r["case"], f"{r['reduce_cps']:.2f}", f"{r['bare_cps']:.2f}",
                  f"{r['reduce_cps'] / r['bare_cps']:.2f}x" if r["bare_cps"] else "-",
                  f"{r['nodes'][0]} -> {r['nodes'][1]} ({r['nodes'][1] / r['nodes'][0]:.0%})",
                  f"{r['lines'][0]} -> {r['lines'][1]}", f"{r['wall_s']:.1f}" + (" (time limit)" if r["stopped"] else ""))
    Console().print(t)
    for r in rows:
        print(f"{r['case']}: {r['line']}")
    if sc:
        print(f"scan: {sc['serial_s']:.1f} s one release after another, {sc['parallel_s']:.1f} s with {sc['jobs']} at once "
              f"({sc['serial_s'] / sc['parallel_s']:.2f}x): {sc['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
