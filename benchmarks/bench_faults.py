"""make bench-faults: kill `run`, `capture`, `bundle`, `prepare`, `replay`, `sweep` and `trace` at
random moments and count what the kills left behind.

For each verb: one clean run first (its wall time bounds the kill moments), then --count times:
start the verb as a real process, wait a random moment within that time, send it a random one of
SIGINT, SIGTERM, SIGHUP and SIGKILL, then run the verb again unkilled, as the user would next.
Printed per verb, all of which must be 0:

  partial   files a half-done run left: after a clean exit (SIGINT/TERM/HUP) anything at all in
            the run's TMPDIR and any temp name, *.partial or stale lock in its output folders; after
            the next run, the same again (what a SIGKILL left must be gone by then)
  mixed     an output that is not whole: a capture whose plan and results name different cases,
            a bundle that does not verify
  orphans   kills after which a process of the run (it carries a marker in its environment)
            was still alive 3 s later
  failed    next runs that failed (a leftover in the way, a lock never released)
  temp_bytes  bytes left under the run's TMPDIR after the next run (a killed run's scratch folder,
            the harness's reprokit-cases-*, ptxas temps: the next run must have removed them)
  user_bytes  bytes left in a folder of the user's that the run does not own (trace: the folder
            its program's subprocess runs in); anything at all there also counts as partial

trace runs tests/data/trace/processes.py under Triton's interpreter (the interpreter venv of
tests/helpers/interp.py) from the work folder with a relative --out, in its `cwd` way: the
program launches a kernel, then a subprocess started in the user's folder launches another, so
that a kill lands in the program, in its child, or in the capture; an orphan is the program or
its child still running.

replay starts from a bundle made once beforehand; sweep runs a 12-point grid of its own and starts
each kill from an empty work folder, so that the kill lands mid-grid, and the next run resumes
from what the killed one recorded.

Everything happens in a fresh folder: capture and run use the pinned stack's cached venv;
prepare builds its venv in a cache of its own, from a small local stand-in wheel of the pinned
triton (PIP_NO_INDEX), so that a build takes seconds and nothing of the shared cache is touched.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from reprokit.bundle.reader import verify
from reprokit.config import load_config
from tests.helpers.fake_capture import make_capture
from tests.helpers.faults import Watched, half_done
from tests.helpers.wheels import stand_in_wheel

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL)
CASES = "block_ptr.p0,tensor_descriptor.p0"


class Verb:
    """One verb's command, the folders its leftovers may sit in, and how to judge its output."""

    def __init__(self, name: str, args: list, outputs: list[Path], env: dict, reset=None, whole=None, again=None,
                 cwd: Path = ROOT, user: Path | None = None):
        self.name, self.args, self.outputs, self.env = name, args, outputs, env
        self.cwd, self.user = cwd, user           # where it starts; a folder of the user's it must leave as it was
        self.reset = reset or (lambda: None)      # drop the finished output, so the next run writes again
        self.again = again or self.reset          # before the run after a kill (a sweep keeps its work to resume)
        self.whole = whole or (lambda: True)      # is what stands at the output whole?


def _capture_whole(out: Path) -> bool:
    if not out.exists():
        return True
    try:
        plan, results = (json.loads((out / n).read_text()) for n in ("plan.json", "results.json"))
    except (OSError, ValueError):
        return False
    return [c["id"] for c in plan["cases"]] == [c["id"] for c in results["cases"]]


def _bundles_whole(folder: Path) -> bool:
    return all(verify(p) == [] for p in folder.glob("*.tgz"))


def _drop(paths) -> None:
    for p in paths:
        shutil.rmtree(p) if p.is_dir() else p.unlink()


SWEEP_SPEC = """
[sweep]
name = "bench-faults"
timeout_s = 120
[[sweep.targets]]
gpu = "h100"
stacks = ["{stack}"]

[[groups]]
name = "copy"
family = "tensor_descriptor"
file = "sweep_tma.py"
function = "tensor_desc_copy"
requires = ["tl.make_tensor_descriptor|tl._experimental_make_tensor_descriptor"]
signature = {{ src = "*{{dtype}}", dst = "*{{dtype}}", M = "i32", N = "i32" }}
divisible_by_16 = ["src", "dst", "M", "N"]
constexprs = ["BM", "BN", "INNER", "BOUNDARY"]
base = {{ dtype = "fp16", BM = 64, BN = 64, INNER = 1, BOUNDARY = 0, num_warps = 4, num_stages = 2 }}
[groups.axes]
num_warps = [1, 2, 4, 8]
BN = [32, 64, 128]
"""


def _sweep_whole(work: Path, out: Path) -> bool:
    """The bundles verify, and each record in the work folder names a case of its plan."""
    for plan in work.glob("*/*/plan.json"):
        try:
            ids = {c["id"] for c in json.loads(plan.read_text())["cases"]}
        except (OSError, ValueError):
            return False
        if any(r.parent.name not in ids for r in plan.parent.glob("cases/*/record.json")):
            return False
    return _bundles_whole(out)


def _a_bundle(folder: Path, stack: str, workers: int) -> Path:
    """One bundle of the stack, for replay to start from (made once, outside the measurement)."""
    subprocess.run([sys.executable, "-m", "reprokit", "run", "--gpu", "h100", "--executor", "venv", "--stacks",
                    stack, "--cases", CASES, "--workers", str(workers), "--out", str(folder)],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    (b,) = folder.glob("*.tgz")
    return b


def verbs(work: Path, stack: str, workers: int, wanted: set) -> list[Verb]:
    tmp = work / "tmp"
    tmp.mkdir()
    env = {"TMPDIR": str(tmp)}
    cap, bundles, run_out = work / "cap", work / "bundles", work / "run-bundles"
    synthetic = make_capture(work / "synthetic", gemm_cases=3, ir_bytes=1 << 20, cubin_size=1 << 20)
    cfg = load_config()
    wheels = work / "wheels"
    stand_in_wheel(wheels, cfg.stack(stack).triton)
    prep_cache = work / "prepare-cache"
    prep_env = {**env, "REPROKIT_CACHE": str(prep_cache), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(wheels)}
    venvs = prep_cache / "venvs"
    out = [
        Verb("run", ["run", "--gpu", "h100", "--executor", "venv", "--stacks", stack, "--cases", CASES,
                     "--workers", workers, "--out", run_out], [run_out, tmp], env,
             reset=lambda: _drop(run_out.glob("*.tgz")), whole=lambda: _bundles_whole(run_out)),
        Verb("capture", ["capture", "--gpu", "h100", "--executor", "venv", "--stack", stack, "--cases", CASES,
                         "--workers", workers, "--out", cap, "--force"], [work, tmp], env,
             whole=lambda: _capture_whole(cap)),
        Verb("bundle", ["bundle", synthetic, "--out", bundles], [bundles, tmp], env,
             reset=lambda: _drop(bundles.glob("*.tgz")), whole=lambda: _bundles_whole(bundles)),
        Verb("prepare", ["prepare", "--stacks", stack, "--executor", "venv"], [venvs, tmp], prep_env,
             reset=lambda: _drop(p for p in venvs.glob(f"{stack}-*") if p.is_dir() and "reprokit-" not in p.name)),
    ]
    if "replay" in wanted:
        original = _a_bundle(work / "original", stack, workers)
        replays = work / "replays"
        out.append(Verb("replay", ["replay", original, "--executor", "venv", "--workers", workers, "--out", replays],
                        [replays, tmp], env, reset=lambda: _drop(replays.glob("*.tgz")),
                        whole=lambda: _bundles_whole(replays)))
    if "sweep" in wanted:
        spec = work / "bench-faults.toml"
        spec.write_text(SWEEP_SPEC.format(stack=stack))
        sweep_work, sweep_out = work / "sweep-work", work / "sweep-out"
        cell = sweep_work / "bench-faults"
        # Each kill starts from nothing (the work folder goes too), so that it lands mid-grid;
        # a SIGKILL's leftovers in the work folder are what the next run resumes from, not debris.
        out.append(Verb("sweep", ["sweep", spec, "--workers", workers, "--work", sweep_work, "--out", sweep_out],
                        [sweep_out, cell, tmp], env,
                        reset=lambda: _drop([*sweep_out.glob("*.tgz"), *([cell] if cell.exists() else [])]),
                        again=lambda: _drop(sweep_out.glob("*.tgz")),
                        whole=lambda: _sweep_whole(sweep_work, sweep_out)))
    if "trace" in wanted:
        from tests.helpers.interp import interpreter_python
        from tests.helpers.runs import host

        python = str(interpreter_python(host()))
        user, traced = work / "user-folder", work / "trace-out"
        user.mkdir()
        trace_env = {**env, "PYTHONPATH": str(ROOT)}
        out.append(Verb("trace", ["trace", "--tensors", "small", "--out", traced.name, "--", python,
                                  ROOT / "tests" / "data" / "trace" / "processes.py", "cwd", user],
                        [traced, tmp, user], trace_env, reset=lambda: _drop(traced.glob("*.tgz")),
                        whole=lambda: _bundles_whole(traced), cwd=work, user=user))
    return out


def _user_left(v: Verb) -> list[str]:
    return [] if v.user is None else sorted(str(p) for p in v.user.iterdir())


def _tmp_left(tmp: Path) -> list[str]:
    return sorted(str(tmp / n) for n in os.listdir(tmp))


def _bytes_under(folder: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(folder):
        for f in files:
            try:
                total += os.lstat(os.path.join(dirpath, f)).st_size
            except OSError:
                pass
    return total


def one_verb(v: Verb, count: int, rng: random.Random, say) -> dict:
    v.reset()
    t0 = time.monotonic()
    rc, _, err = Watched(v.args, env=v.env, cwd=v.cwd).wait(timeout=900)
    span = time.monotonic() - t0
    if rc != 0:
        raise SystemExit(f"{v.name}: the clean run failed ({rc}): {err.strip().splitlines()[-1:]}")
    tally = {"kills": 0, "partial": 0, "mixed": 0, "orphans": 0, "failed": 0, "temp_bytes": 0, "user_bytes": 0,
             "span_s": round(span, 2)}
    tmp = Path(v.env["TMPDIR"])
    for i in range(count):
        v.reset()
        at, signum = rng.uniform(0, span), rng.choice(SIGNALS)
        run = Watched(v.args, env=v.env, cwd=v.cwd)
        time.sleep(at)
        run.signal(signum)
        run.wait(timeout=900)
        tally["kills"] += 1
        if run.orphans():
            tally["orphans"] += 1
            say(f"  {v.name} #{i} {signal.Signals(signum).name} at {at:.2f}s: orphans {run.orphans()}")
        left = _user_left(v) + ([] if signum == signal.SIGKILL else half_done(*v.outputs) + _tmp_left(tmp))
        if not v.whole():
            tally["mixed"] += 1
            say(f"  {v.name} #{i}: output not whole after {signal.Signals(signum).name} at {at:.2f}s")
        v.again()
        again = Watched(v.args, env=v.env, cwd=v.cwd)
        rc, _, err = again.wait(timeout=900)
        if rc != 0:
            tally["failed"] += 1
            say(f"  {v.name} #{i}: the next run failed ({rc}): {err.strip().splitlines()[-1:]}")
        left += half_done(*v.outputs) + _tmp_left(tmp) + _user_left(v)
        tally["temp_bytes"] += _bytes_under(tmp)  # what the kill and the next run left in $TMPDIR
        tally["user_bytes"] += _bytes_under(v.user) if v.user is not None else 0
        if left:
            tally["partial"] += len(set(left))
            say(f"  {v.name} #{i} {signal.Signals(signum).name} at {at:.2f}s left: {sorted(set(left))}")
        if not v.whole():
            tally["mixed"] += 1
    return tally


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--count", type=int, default=int(os.environ.get("BENCH_FAULTS_COUNT") or 50),
                    help="kills per verb (default 50, or $BENCH_FAULTS_COUNT)")
    ap.add_argument("--verbs", default="run,capture,bundle,prepare,replay,sweep,trace")
    ap.add_argument("--stack", default="triton-3.6-cu130")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(1 << 30)
    rng = random.Random(seed)

    def say(msg):
        print(msg, flush=True)

    # The pinned stack's venv, built once outside the measurement (capture and run reuse it).
    subprocess.run([sys.executable, "-m", "reprokit", "prepare", "--stacks", args.stack, "--executor", "venv"],
                   cwd=ROOT, check=True, stdout=subprocess.DEVNULL)
    say(f"bench-faults: {args.count} kills per verb, seed {seed}, stack {args.stack}")
    totals = {}
    with tempfile.TemporaryDirectory(prefix="bench-faults-") as d:
        work = Path(d)
        for v in verbs(work, args.stack, args.workers, set(args.verbs.split(","))):
            if v.name not in args.verbs.split(","):
                continue
            t0 = time.monotonic()
            totals[v.name] = one_verb(v, args.count, rng, say)
            say(f"{v.name:8s} " + "  ".join(f"{k} {val}" for k, val in totals[v.name].items())
                + f"  ({time.monotonic() - t0:.0f} s)")
    bad = {k: sum(t[k] for t in totals.values())
           for k in ("partial", "mixed", "orphans", "failed", "temp_bytes", "user_bytes")}
    say("total    " + "  ".join(f"{k} {v}" for k, v in bad.items()) + ("  OK" if not any(bad.values()) else "  FAIL"))
    return 1 if any(bad.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
