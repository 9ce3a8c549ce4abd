"""What a replay costs over a fresh capture of the same plan, and what a bisect costs in captures.

    python benchmarks/bench_replay.py [--stack triton-3.6-cu130] [--gpu h100] [--rounds 5]
                                      [--bisect-case experimental_descriptor.p0] [--versions 3.0.0..3.9.0]
    python benchmarks/bench_replay.py --executor local [--rounds 2]     # a GPU host, no index

With `--executor local` (this interpreter's triton and torch: on a GPU host, the suite on the
GPU) nothing needs a package index: no venv, no bisect. Both commands then run with their
default options (workers included), as a user types them, and the suite's own run is timed
cold (an empty reprokit cache: no SASS cached) and then warm, before the interleaved rounds.

One untimed `reprokit run` makes the bundle B (and warms the stack's venv and the SASS cache).
Then, in interleaved rounds, two whole processes are timed from outside:

    fresh:   reprokit run    --stacks STACK --cases ... --executor venv   (capture + bundle)
    replay:  reprokit replay B              --executor venv               (verify B + the same
             capture + bundle + read the new bundle back + the comparison grid)

so the ratio is what judging costs on top of the capture both do. The headline is the median of
the per-round ratios (rounds alternate which goes first); the best runs' ratio is printed beside
it. Target: at most 1.1x (`--check` exits 1 above it).

Then one `reprokit bisect` over the release range reports its captures against the number of
releases (a linear scan's captures) and the bound 2 + ceil(log2(n - 1)).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

TARGET = 1.1


def reprokit(*args, check: bool = True, env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    started = time.perf_counter()
    p = subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                       env={**os.environ, **(env or {})})
    wall = time.perf_counter() - started
    if check and p.returncode not in (0, 1):
        raise SystemExit(f"reprokit {' '.join(map(str, args[:3]))} ... exited {p.returncode}: "
                         f"{(p.stderr.strip().splitlines() or ['no output'])[-1]}")
    return wall, p


def judging_s(original: Path, replayed: Path) -> float:
    """What a replay adds to the capture, timed in this process: both bundles read and verified,
    and the grid built (best of 3)."""
    from reprokit.bundle.reader import open_bundle
    from reprokit.compare.grid import compare
    from reprokit.compare.sources import ResultSet, open_result_set

    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        rec = ResultSet.from_bundle(open_bundle(original), role="recorded", key="recorded")
        compare([rec, open_result_set(replayed, role="replay")]).to_dict()
        best = min(best, time.perf_counter() - started)
    return best


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stack", default="triton-3.6-cu130")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--cases", default=None, metavar="GLOBS", help="only these cases (default: the whole suite)")
    ap.add_argument("--executor", choices=("venv", "local"), default="venv",
                    help="venv: the pinned stack, compile-only; local: this interpreter, on its GPU where it has one")
    ap.add_argument("--workers", type=int, default=None, help="default: venv one per CPU; local the commands' own default")
    ap.add_argument("--rounds", type=int, default=None, help="interleaved rounds (default 5; 2 with --executor local)")
    ap.add_argument("--bisect-case", default="experimental_descriptor.p0")
    ap.add_argument("--versions", default="3.0.0..3.9.0")
    ap.add_argument("--no-bisect", action="store_true")
    ap.add_argument("--json", action="store_true", help="print the numbers as JSON on stdout")
    ap.add_argument("--check", action="store_true", help=f"exit 1 when the ratio is above {TARGET}")
    args = ap.parse_args(argv)
    local = args.executor == "local"
    rounds = args.rounds or (2 if local else 5)
    if local:
        args.no_bisect = True  # a bisect installs releases from the index
    err = Console(stderr=True, highlight=False)
    out = Console(highlight=False)
    cases = ["--cases", args.cases] if args.cases else []
    workers = ["--workers", args.workers] if args.workers else [] if local else ["--workers", os.cpu_count() or 1]
    where = ["--executor", "local"] if local else ["--stacks", args.stack, "--mode", "compile-only", "--executor", "venv"]
    run_args = ["--gpu", args.gpu, *where, *cases, *workers, "--json"]
    replay_args = ["--executor", args.executor, *workers, "--json"]
    times: dict[str, list[float]] = {"fresh": [], "replay": []}
    suite: dict[str, float] = {}
    with tempfile.TemporaryDirectory(prefix="bench-replay-") as tmp:
        root = Path(tmp)
        # Cold: an empty reprokit cache (no SASS cached); warm: the same command again.
        cache = {"REPROKIT_CACHE": str(root / "cache")} if local else None
        wall, p = reprokit("run", *run_args, "--out", root / "base", env=cache)
        (bundle,) = (root / "base").glob("*.tgz")
        n_cases = len(json.loads(reprokit("show", bundle, "--json")[1].stdout)["cases"])
        mode = json.loads(reprokit("show", bundle, "--json")[1].stdout).get("mode", "?")
        suite["cold_s"] = wall
        err.print(f"bundle {bundle.name}: {n_cases} cases, {mode}, made in {wall:.2f} s"
                  + (" (cold: an empty reprokit cache)" if local else " (untimed warm-up)"))
        if local:
            suite["warm_s"], _ = reprokit("run", *run_args, "--out", root / "warm", env=cache)
            err.print(f"  the suite's run again, warm: {suite['warm_s']:.2f} s")
        else:
            reprokit("replay", bundle, *replay_args, "--out", root / "w")
        for i in range(rounds):
            order = ("fresh", "replay") if i % 2 == 0 else ("replay", "fresh")
            for name in order:
                dest = root / f"{name}-{i}"
                if name == "fresh":
                    wall, p = reprokit("run", *run_args, "--out", dest, env=cache)
                else:
                    wall, p = reprokit("replay", bundle, *replay_args, "--out", dest, env=cache)
                    # On a GPU a time may move between two runs of one board; only compile-only
                    # replays must reproduce exactly.
                    if p.returncode != 0 and not (local and p.returncode == 1):
                        raise SystemExit(f"the replay on its own stack did not reproduce (exit {p.returncode})")
                times[name].append(wall)
                err.print(f"  round {i + 1} {name:6s} {wall:6.2f} s")
        judging = judging_s(bundle, next((root / "replay-0").glob("*.tgz")))
    paired = [r / f for r, f in zip(times["replay"], times["fresh"])]
    ratio = statistics.median(paired)
    best = min(times["replay"]) / min(times["fresh"])
    report = {"stack": "local" if local else args.stack, "executor": args.executor, "mode": mode,
              "profile": args.gpu, "cases": n_cases, "workers": args.workers or "default",
              "rounds": rounds, "suite_s": {k: round(v, 3) for k, v in suite.items()}, "wall_s": {k: [round(v, 3) for v in t] for k, t in times.items()},
              "median_s": {k: round(statistics.median(t), 3) for k, t in times.items()},
              "ratio": round(ratio, 3), "best_ratio": round(best, 3), "target": TARGET,
              "within_target": ratio <= TARGET, "judging_s": round(judging, 3)}
    table = Table(title=f"replay vs fresh capture: {report['stack']}, {args.gpu} {mode}, {n_cases} cases, "
                        f"workers {report['workers']}")
    for col in ("", "best s", "median s", "runs"):
        table.add_column(col)
    for k in ("fresh", "replay"):
        table.add_row(k, f"{min(times[k]):.2f}", f"{statistics.median(times[k]):.2f}",
                      " ".join(f"{v:.2f}" for v in times[k]))
    out.print(table)
    verdict = "[green]within[/]" if ratio <= TARGET else "[red]above[/]"
    out.print(f"replay/fresh = [bold]{ratio:.3f}x[/] (median of paired rounds; best runs {best:.3f}x), "
              f"{verdict} the {TARGET}x target")
    if local:
        out.print(f"the suite's run on this host: cold {suite['cold_s']:.2f} s, warm {suite['warm_s']:.2f} s "
                  f"(targets on the H100: <= 60 s cold, <= 45 s warm)")
    out.print(f"judging alone (read B and the replay back, verified, and build the grid), in-process: "
              f"{judging:.3f} s = {judging / statistics.median(times['fresh']):.1%} of the median fresh capture")
    if not args.no_bisect:
        with tempfile.TemporaryDirectory(prefix="bench-bisect-") as tmp:
            wall, p = reprokit("bisect", "--case", args.bisect_case, "--versions", args.versions, "--gpu", args.gpu,
                               "--out", tmp, "--json")
        if p.returncode != 0:
            raise SystemExit(f"bisect exited {p.returncode}: {p.stderr.strip()}")
        b = json.loads(p.stdout)
        n = len(b["releases"])
        bound = 2 + max(0, (n - 2).bit_length())
        report["bisect"] = {"case": args.bisect_case, "versions": args.versions, "releases": n,
                            "skipped": b["skipped"], "captures": b["captures"], "bound": bound,
                            "linear_captures": n, "wall_s": round(wall, 2), "answer": b["answer"]}
        out.print(f"bisect {args.bisect_case} over {args.versions}: [bold]{b['captures']} captures[/] for {n} "
                  f"releases (a linear scan: {n}; bound 2 + ceil(log2({n - 1})) = {bound}), {wall:.1f} s"
                  + (f"; skipped for this Python: {', '.join(b['skipped'])}" if b["skipped"] else ""))
        out.print(f"  {b['answer']}")
    if args.json:
        print(json.dumps(report, indent=1))
    return 1 if args.check and ratio > TARGET else 0


if __name__ == "__main__":
    sys.exit(main())
