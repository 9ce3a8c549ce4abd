"""make bench-trace (side by side): one program run plain, under `reprokit trace --tensors none`,
under `reprokit trace --tensors small`, and under tritonparse's structured logging (its defaults,
launch tracing on), interleaved for --rounds rounds (at least 5), with medians and ratios to the
plain run of the same rounds.

For reprokit the whole command is timed from outside, and its two phases apart as the verb reports
them (`--json`: the program's seconds and the capture's). Targets: the whole `reprokit trace` at
most 1.10x the plain run with `--tensors none`, at most 1.20x with `--tensors small`.

    python benchmarks/bench_trace_side.py --python PY [--rounds 5] [--out DIR] -- PROGRAM.py ARGS

PY is the interpreter whose Triton (and torch) run the program (a GPU host's). tritonparse is
skipped, and said so, where PY cannot import it. `--out DIR` keeps each contender's last bundle
or trace folder there and writes DIR/bench-trace.json with every time, after every round (a run
cut off by a time limit keeps the rounds it finished); each round's line gives reprokit's two
phases too. Without a GPU every run
is under Triton's interpreter, as `reprokit trace` runs there: the ratios then say little about
a GPU host's.
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
TARGETS = {"reprokit-none": 1.10, "reprokit-small": 1.20}
# tritonparse's own setup, then the program as `python PROGRAM ARGS` would run it: its own folder
# first on sys.path, as Python puts it (a program beside its helpers imports them).
_TRITONPARSE = r"""
import os, runpy, sys
import tritonparse.structured_logging as sl
sl.init(sys.argv[1], enable_trace_launch=True)
sys.argv = sys.argv[2:]
sys.path[0] = os.path.dirname(os.path.abspath(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def _run(argv: list, env: dict, cwd: Path) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    return time.perf_counter() - t0, p


def _fail(name: str, p: subprocess.CompletedProcess) -> None:
    raise SystemExit(f"bench-trace: the {name} run exited {p.returncode}:\n{p.stderr[-3000:]}")


def has_tritonparse(python: str) -> bool:
    p = subprocess.run([python, "-c", "import tritonparse.structured_logging"], capture_output=True, check=False)
    return p.returncode == 0


def contenders(python: str, program: list, gpu: str, scratch: Path, with_tp: bool) -> dict:
    """name -> (argv, folder to clear before each run)."""
    out: dict = {"plain": ([python, *program], None)}
    for tensors in ("none", "small"):
        folder = scratch / f"reprokit-{tensors}"
        out[f"reprokit-{tensors}"] = ([sys.executable, "-m", "reprokit", "trace", "--json", "--gpu", gpu,
                                       "--tensors", tensors, "--out", str(folder), "--", python, *program], folder)
    if with_tp:
        folder = scratch / "tritonparse"
        out["tritonparse"] = ([python, "-c", _TRITONPARSE, str(folder), *program], folder)
    return out


def _report(program: list, python: str, rounds: int, times: dict, phases: dict) -> dict:
    """bench-trace.json after `rounds` rounds: every time, the medians and their ratios to plain."""
    base = statistics.median(times["plain"])
    medians = {name: statistics.median(t) for name, t in times.items()}
    return {"program": program, "python": python, "rounds": rounds, "times": times, "phases": phases,
            "medians": medians, "ratios": {n: m / base for n, m in medians.items()}, "targets": TARGETS}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="the interpreter that runs the program (default: the interpreter venv)")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5, at least 5)")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--out", type=Path, help="keep the last bundles and traces, and bench-trace.json, here")
    ap.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM.py ARGS")
    args = ap.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        ap.error("name the program after --")
    if args.rounds < 5:
        ap.error("--rounds: at least 5")
    sys.path.insert(0, str(ROOT))
    from reprokit.gpu import detect
    from reprokit.options import HostEnv

    if args.python is None:
        from tests.helpers.interp import interpreter_python

        args.python = str(interpreter_python(HostEnv.from_environ(os.environ)))
    with_tp = has_tritonparse(args.python)
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    # Without a GPU the plain and tritonparse runs go under the interpreter, as `reprokit trace`
    # runs the program itself; reprokit's own runs never get it (its capture would inherit it).
    interpret = not detect()[0]
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    scratch = Path(tempfile.mkdtemp(prefix="bench-trace-side-"))
    try:
        runs = contenders(args.python, program, args.gpu, scratch, with_tp)
        print(f"bench-trace: {' '.join(program)} with {args.python}; contenders: {', '.join(runs)}"
              + ("" if with_tp else " (tritonparse is not importable there: skipped)"))
        _run(runs["plain"][0], {**env, "TRITON_INTERPRET": "1"} if interpret else env, ROOT)  # warm-up: the caches
        times: dict = {name: [] for name in runs}
        phases: dict = {name: {"program": [], "capture": []} for name in runs if name.startswith("reprokit")}
        for r in range(args.rounds):
            # a different order each round, so that no contender always follows the same one
            order = list(runs)[r % len(runs):] + list(runs)[:r % len(runs)]
            for name in order:
                argv, folder = runs[name]
                if folder is not None and folder.exists():
                    shutil.rmtree(folder)
                own = {**env, "TRITON_INTERPRET": "1"} if interpret and not name.startswith("reprokit") else env
                t, p = _run(argv, own, ROOT)
                if p.returncode != 0 and not (name.startswith("reprokit") and p.returncode == 7):
                    _fail(name, p)
                times[name].append(t)
                if name in phases:
                    doc = json.loads(p.stdout)
                    phases[name]["program"].append(doc["program"]["seconds"])
                    phases[name]["capture"].append(doc["capture_s"])
            # each round's figures, phases included, and the JSON so far: a run cut off by a time
            # limit (a device command's 10 minutes) keeps every round it finished
            print(f"  round {r + 1}: " + ", ".join(
                f"{n} {times[n][-1]:.2f} s" + (f" (program {phases[n]['program'][-1]:.2f} s, capture "
                                               f"{phases[n]['capture'][-1]:.2f} s)" if n in phases else "")
                for n in runs), flush=True)
            report = _report(program, args.python, r + 1, times, phases)
            if args.out is not None:
                args.out.mkdir(parents=True, exist_ok=True)
                (args.out / "bench-trace.json").write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
        base = report["medians"]["plain"]
        for name in runs:
            med = report["medians"][name]
            line = f"{name:15s} median {med:7.2f} s  {med / base:5.3f}x plain"
            if name in phases:
                prog, cap = (statistics.median(phases[name][k]) for k in ("program", "capture"))
                line += f"  (program {prog:.2f} s = {prog / base:.3f}x, capture {cap:.2f} s)"
            if name in TARGETS:
                line += f"  target <= {TARGETS[name]}x {'MET' if med / base <= TARGETS[name] else 'NOT MET'}"
            print(line)
        if args.out is not None:
            for name, (_, folder) in runs.items():
                if folder is not None and folder.exists():
                    shutil.copytree(folder, args.out / name, dirs_exist_ok=True)
        return 0 if all(report["ratios"][n] <= t for n, t in TARGETS.items()) else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
