"""make bench-fleet: what going through Slurm costs one small run.

The same work both ways, rounds interleaved: the plan of one small bundle (2 cases) replayed on
one stack, directly (`reprokit replay PLAN --stacks S`) and as a one-task fleet (`reprokit fleet
submit` + polling `fleet status` until the task is done). The fleet's time is split into
submit (sbatch's answer), queue (submit to the task's first record: scheduling, batch script,
interpreter start), run (the task's own work) and notice (task end to status seeing it).
Needs root and Debian's slurm-wlm/munge (scripts/slurm-local.sh starts a one-host cluster).
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

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str) -> subprocess.CompletedProcess:
    p = subprocess.run([sys.executable, "-m", "reprokit", *args], capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        sys.exit(f"bench-fleet: reprokit {' '.join(args[:2])} failed: {p.stderr.strip()[-400:]}")
    return p


def via_fleet(plan: Path, stack: str, gpu: str, work: Path, poll_s: float) -> dict:
    d = work / f"fleet-{time.monotonic_ns()}"
    t0 = time.time()
    cli("fleet", "submit", "--plan", str(plan), "--stacks", stack, "--gpus", gpu, "--dir", str(d),
        "--mode", "compile-only", "--json")
    t_submitted = time.time()
    while True:
        st = json.loads(cli("fleet", "status", str(d), "--json").stdout)["tasks"][0]
        if st["state"] in ("done", "failed", "missing"):
            break
        time.sleep(poll_s)
    t_seen = time.time()
    if st["state"] != "done":
        sys.exit(f"bench-fleet: the fleet task ended {st['state']}: {st['reason']}")
    rec = next((d / "tasks" / "0").glob("attempt-*.json"))
    rec = json.loads(rec.read_text())
    started, ended = rec["started_unix"], rec["ended_unix"]
    return {"total": t_seen - t0, "submit": t_submitted - t0, "queue": max(0.0, started - t_submitted),
            "run": ended - started, "notice": max(0.0, t_seen - ended)}


def direct(plan: Path, stack: str, work: Path) -> float:
    out = work / f"direct-{time.monotonic_ns()}"
    t0 = time.time()
    cli("replay", str(plan), "--stacks", stack, "--executor", "venv", "--out", str(out), "--json")
    return time.time() - t0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stack", default="triton-3.6-cu130")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--poll", type=float, default=0.5, help="seconds between `fleet status` polls")
    args = ap.parse_args()
    script = ROOT / "scripts" / "slurm-local.sh"
    started = not os.environ.get("SLURM_CONF")
    if started:
        up = subprocess.run([str(script), "up"], capture_output=True, text=True)
        if up.returncode != 0:
            sys.exit(f"bench-fleet: no Slurm: {up.stderr.strip()[-400:]}")
        os.environ["SLURM_CONF"] = up.stdout.strip().split("=", 1)[1]
    try:
        return measure(args)
    finally:
        if started:
            subprocess.run([str(script), "down"], capture_output=True)


def measure(args) -> int:
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        work = Path(tmp)
        r = cli("run", "--gpu", args.gpu, "--stacks", args.stack, "--executor", "venv", "--cases",
                "tensor_descriptor.p0,host_descriptor.p1", "--out", str(work / "plan"), "--json")
        plan = Path(json.loads(r.stdout)["stacks"][0]["bundle"])
        direct(plan, args.stack, work)          # warm: the venv and the SASS cache, for both sides
        rows_d, rows_f = [], []
        for i in range(args.rounds):
            rows_d.append(direct(plan, args.stack, work))
            rows_f.append(via_fleet(plan, args.stack, args.gpu, work, args.poll))
            print(f"round {i + 1}: direct {rows_d[-1]:.2f} s, fleet {rows_f[-1]['total']:.2f} s", file=sys.stderr)
    med = {k: statistics.median(r[k] for r in rows_f) for k in rows_f[0]}
    d = statistics.median(rows_d)
    print(f"bench-fleet: {args.rounds} interleaved rounds, one task ({args.stack}, {args.gpu}, 2 cases), medians")
    print(f"  direct `reprokit replay`         {d:6.2f} s   1.00x")
    print(f"  through Slurm, submit to seen    {med['total']:6.2f} s   {med['total'] / d:.2f}x")
    print(f"    sbatch answers                 {med['submit']:6.2f} s")
    print(f"    queued, script, interpreter    {med['queue']:6.2f} s")
    print(f"    the task's own work            {med['run']:6.2f} s   {med['run'] / d:.2f}x of direct")
    print(f"    status sees it (poll {args.poll:g} s)     {med['notice']:6.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
