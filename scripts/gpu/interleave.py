"""Rounds in turn across stacks, on a GPU: what they change, measured.

    .reprokit/host-local/bin/python scripts/gpu/interleave.py BUNDLE OUT [--workers N]

BUNDLE is a suite GPU bundle (its plan.json and kernels/ are run again). The harness of this
interpreter's stack runs the plan four times: twice one after the other ("seq-a", "seq-b"), as
two stacks ran before, and twice side by side with their rounds in turn ("turn-a", "turn-b",
reprokit.harness.turns), as two stacks now run on one GPU. Both pairs measure the same stack, so
every ratio between a pair's two sides should be 1: how far each is from 1 is what drift and
clock changes cost a comparison, one way and the other. Also checked from the records: every
benchmark's rounds ran A, B, A, B (their `began` times), none went on alone, and the wall time
of each way. Writes OUT/interleave.json and OUT/runs.tgz (each run's results.json and harness log); prints
a summary.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path


def harness(plan: Path, kernels: Path, out: Path, workers: int, env: dict | None = None) -> subprocess.Popen:
    out.mkdir(parents=True)
    argv = [sys.executable, "-m", "reprokit.harness", "--plan", str(plan), "--kernels", str(kernels),
            "--out", str(out), "--workers", str(workers)]
    return subprocess.Popen(argv, env={**os.environ, **(env or {})}, stdout=subprocess.DEVNULL,
                            stderr=open(out / "stderr.log", "w"))


def medians(results: dict) -> dict:
    """(case, size, contender) -> median ms, and (case, size) -> the interleave record."""
    times, turns = {}, {}
    for c in results["cases"]:
        for row in (c.get("gpu") or {}).get("bench") or []:
            size = json.dumps(row["size"], sort_keys=True)
            for who in ("kernel", "baseline"):
                if isinstance(row.get(who), dict) and row[who].get("median_ms"):
                    times[(c["id"], size, who)] = row[who]["median_ms"]
            if "interleave" in (row.get("method") or {}):
                turns[(c["id"], size)] = row["method"]["interleave"]
    return times, turns


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("bundle", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="interleave-"))
    with tarfile.open(args.bundle) as t:
        t.extractall(work, filter="data")
    (root,) = [p for p in work.iterdir() if p.is_dir()]
    plan, kernels = root / "plan.json", root / "kernels"
    runs = work / "runs"
    walls = {}
    for name in ("seq-a", "seq-b"):
        t0 = time.monotonic()
        rc = harness(plan, kernels, runs / name, args.workers).wait()
        walls[name] = round(time.monotonic() - t0, 2)
        print(f"{name}: exit {rc}, {walls[name]} s", flush=True)
    folder = work / "turns"
    folder.mkdir()
    t0 = time.monotonic()
    procs = [harness(plan, kernels, runs / name, args.workers,
                     {"REPROKIT_TURNS": str(folder), "REPROKIT_TURN_SIDE": str(i), "REPROKIT_TURN_SIDES": "2"})
             for i, name in enumerate(("turn-a", "turn-b"))]
    codes = [p.wait() for p in procs]
    walls["turns"] = round(time.monotonic() - t0, 2)
    print(f"turn-a, turn-b side by side: exits {codes}, {walls['turns']} s", flush=True)
    got = {}
    args.out.mkdir(parents=True, exist_ok=True)
    with tarfile.open(args.out / "runs.tgz", "w:gz") as kept:  # one file: each run's results and log
        for name in ("seq-a", "seq-b", "turn-a", "turn-b"):
            results = json.loads((runs / name / "results.json").read_text())
            kept.add(runs / name / "results.json", f"{name}/results.json")
            kept.add(runs / name / "logs" / "harness.log", f"{name}/harness.log")
            got[name] = medians(results)
    cells = sorted(set(got["seq-a"][0]) & set(got["seq-b"][0]) & set(got["turn-a"][0]) & set(got["turn-b"][0]))
    rows = []
    for cell in cells:
        seq = got["seq-b"][0][cell] / got["seq-a"][0][cell]
        turn = got["turn-b"][0][cell] / got["turn-a"][0][cell]
        rows.append({"case": cell[0], "size": json.loads(cell[1]), "contender": cell[2],
                     "seq_ratio": round(seq, 5), "turn_ratio": round(turn, 5)})
    # the order the rounds ran in, from both sides' records
    order_ok, alone, waits = 0, [], 0
    for key, rec_a in got["turn-a"][1].items():
        rec_b = got["turn-b"][1].get(key)
        if rec_b is None:
            continue
        began = sorted([(t, "A", r) for r, t in rec_a["began"]] + [(t, "B", r) for r, t in rec_b["began"]])
        order_ok += [(s, r) for _, s, r in began] == [(s, r) for r in range(len(rec_a["began"])) for s in "AB"]
        alone += [f"{key}: {rec['alone']}" for rec in (rec_a, rec_b) if rec["alone"]]
        waits += rec_a["waits"] + rec_b["waits"]
    dev = {way: [abs(r[f"{way}_ratio"] - 1) for r in rows] for way in ("seq", "turn")}
    summary = {
        "cells": len(rows), "walls_s": walls, "benchmarks_in_turns": len(got["turn-a"][1]),
        "benchmarks_in_order": order_ok, "alone": alone, "waits": waits,
        "seq": {"median_abs_dev": statistics.median(dev["seq"]), "max_abs_dev": max(dev["seq"]),
                "over_1pct": sum(d > 0.01 for d in dev["seq"])},
        "turn": {"median_abs_dev": statistics.median(dev["turn"]), "max_abs_dev": max(dev["turn"]),
                 "over_1pct": sum(d > 0.01 for d in dev["turn"])},
        "rows": rows,
    }
    (args.out / "interleave.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    print(json.dumps({k: v for k, v in summary.items() if k != "rows"}, indent=1, sort_keys=True))
    for r in rows:
        print(f"  {r['case']:45s} {json.dumps(r['size']):38s} {r['contender']:8s} seq {r['seq_ratio']:.4f}  "
              f"turns {r['turn_ratio']:.4f}")
    return 0 if not alone and order_ok == len(got["turn-a"][1]) and codes == [0, 0] else 1


if __name__ == "__main__":
    sys.exit(main())
