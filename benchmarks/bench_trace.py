"""make bench-trace: a program's wall time traced by `reprokit trace --tensors none` over its
plain wall time (target: at most 1.2x), then the capture that follows, timed apart.

The program is benchmarks/trace_program.py (six kernels, one autotuned, each launched many times
at a few shapes). Both contenders are the same command timed from outside, from start to exit,
alternating rounds so that drift in the machine's speed falls on both alike (the headline is the
median of the rounds' ratios), after one plain warm-up run (a warm Triton cache on a GPU; warm files on a CPU). Without a GPU both run under
Triton's interpreter (TRITON_INTERPRET=1) in the interpreter venv (triton 3.6.0, the CPU torch),
built once under $REPROKIT_CACHE; --python runs them under another interpreter (a GPU host's).
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
sys.path.insert(0, str(ROOT))

from reprokit.config import load_config  # noqa: E402
from reprokit.gpu import detect  # noqa: E402
from reprokit.options import HostEnv  # noqa: E402
from reprokit.trace import program  # noqa: E402

TARGET = 1.2
PROGRAM = ROOT / "benchmarks" / "trace_program.py"


def plain(python: str, rounds: str, env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([python, str(PROGRAM), rounds], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def traced(python: str, rounds: str, env: dict, profile: dict, interpret: bool) -> tuple[float, int]:
    with tempfile.TemporaryDirectory(prefix="bench-trace-") as tmp:
        opts = program.TraceOptions((python, str(PROGRAM), rounds), profile, interpret, "none",
                                    stdout_to_stderr=False)
        devnull = os.open(os.devnull, os.O_WRONLY)
        saved = os.dup(1)
        os.dup2(devnull, 1)  # the program's stdout, as plain() drops it
        try:
            ran = program.run(opts, Path(tmp) / "records", env)
        finally:
            os.dup2(saved, 1)
            os.close(devnull)
            os.close(saved)
        if ran.exit_code != 0:
            raise SystemExit(f"traced run failed ({ran.exit_code}): {ran.stderr_tail[-2000:]}")
        return ran.seconds, len(ran.specs)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--python", help="the interpreter to run the program with (default: the interpreter venv)")
    ap.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    ap.add_argument("--launch-rounds", default="20", help="the program's own loop count (default 20)")
    ap.add_argument("--gpu", default="h100")
    ap.add_argument("--no-capture", action="store_true", help="skip the capture that follows")
    args = ap.parse_args()
    host = HostEnv.from_environ(os.environ)
    gpus, _ = detect()
    interpret = not gpus
    python = args.python
    if python is None:
        from tests.helpers.interp import interpreter_python

        python = str(interpreter_python(host))
    profile = load_config().gpu(args.gpu).to_dict()
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    where = "CPU, Triton's interpreter" if interpret else f"GPU {gpus[0].describe()}"
    print(f"bench-trace: {PROGRAM.name} ({args.launch_rounds} loops) on {where}, {python}")
    plain(python, args.launch_rounds, env)  # warm-up: Triton's cache, the file cache
    p_times, t_times = [], []
    for r in range(args.rounds):
        p_times.append(plain(python, args.launch_rounds, env))
        t, specs = traced(python, args.launch_rounds, env, profile, interpret)
        t_times.append(t)
        print(f"  round {r + 1}: plain {p_times[-1]:.2f} s, traced {t:.2f} s ({t / p_times[-1]:.3f}x), "
              f"{specs} specialisations")
    # Each round's two runs are neighbours in time, so their ratio cancels the machine's drift
    # (a shared host's load moves plain times by 2x between rounds); the median of those is the
    # headline, the ratio of the medians is printed beside it.
    ratio = statistics.median(t / p for t, p in zip(t_times, p_times))
    print(f"traced / plain wall time: {ratio:.3f}x (median of {args.rounds} rounds' ratios; ratio of the medians "
          f"{statistics.median(t_times) / statistics.median(p_times):.3f}x; target <= {TARGET}x) "
          f"{'MET' if ratio <= TARGET else 'NOT MET'}")
    if not args.no_capture:
        with tempfile.TemporaryDirectory(prefix="bench-trace-out-") as out:
            t0 = time.perf_counter()
            p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--gpu", args.gpu, "--out", out,
                                "--", python, str(PROGRAM), args.launch_rounds], cwd=ROOT, env=env,
                               capture_output=True, text=True, check=False)
            whole = time.perf_counter() - t0
            if p.returncode != 0:
                print(p.stderr[-2000:], file=sys.stderr)
                return p.returncode
            doc = json.loads(p.stdout)
            print(f"capture, apart: {doc['capture_s']:.2f} s for {len(doc['cases'])} cases "
                  f"(the whole `reprokit trace`: {whole:.2f} s, of which the program {doc['program']['seconds']:.2f} s)")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
