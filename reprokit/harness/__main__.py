"""`python -m reprokit.harness --plan P --kernels K --out O [--workers N]`: the in-stack entry point."""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import os
import signal
import sys
import tempfile
import time

from reprokit.common.files import write_json
from reprokit.harness import PLAN_FORMAT


def _stop(signum, frame):
    # SIGTERM/SIGHUP (docker stop, a closed terminal) unwind like Ctrl-C: the runner's clean-up
    # then kills the case processes and removes their scratch folders.
    raise KeyboardInterrupt


def main(argv=None) -> int:
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _stop)
    argv = sys.argv[1:] if argv is None else list(argv)
    early = []  # what a prestarted harness did before its run was known: logged first
    if argv[:1] == ["--prestart"]:
        argv, early = _prestart(int(argv[1]))
        if argv is None:
            return 0  # called off: the host needs no run after all
    ap = argparse.ArgumentParser(prog="python -m reprokit.harness", description=__doc__)
    ap.add_argument("--plan", required=True, help="plan.json written by the host")
    ap.add_argument("--kernels", required=True, help="folder holding the kernel sources the plan names")
    ap.add_argument("--out", required=True, help="folder to write env.json, results.json, cases/ into")
    ap.add_argument("--workers", type=int, default=1, help="cases compiled at once (default 1)")
    args = ap.parse_args(argv)
    with open(args.plan) as f:
        plan = json.load(f)
    if plan.get("format") != PLAN_FORMAT:
        print(f"harness: plan format {plan.get('format')!r} is not {PLAN_FORMAT}", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(args.out, "logs"), exist_ok=True)
    log_file = open(os.path.join(args.out, "logs", "harness.log"), "a")

    def log(msg: str) -> None:
        line = f"{time.strftime('%H:%M:%S')} {msg}"
        print(line, file=log_file, flush=True)
        print(line, file=sys.stderr, flush=True)

    # the harness's parts load once its arguments are read (the runner imports Triton).
    from reprokit.harness import runner

    for line in early:
        log(line)
    log(f"harness: {len(plan['cases'])} cases for {plan['profile']['key']} ({plan['profile']['arch']}), "
        f"{args.workers} worker(s), mode {plan.get('mode', 'compile-only')}")
    # the harness's parts load once its arguments are read (the runner imports Triton).
    from reprokit.harness import nvml

    try:
        with _clocks(plan, log):  # a no-op unless the user asked for --lock-clocks
            # A resumed run keeps the snapshot its first run took: one run, one environment record.
            resumed = plan.get("resumable") and os.path.exists(os.path.join(args.out, "env.json"))
            index = ((plan.get("gpu") or {}).get("host") or {}).get("index", 0)
            pid = None if resumed else _fork_snapshot(os.path.abspath(args.out), plan.get("mode") == "gpu", index)
            # Kernels load by a path relative to their parent folder, so the source locations Triton
            # writes into every IR level read `kernels/<file>` on any host, container or venv.
            out, kernels = os.path.abspath(args.out), os.path.abspath(args.kernels)
            os.chdir(os.path.dirname(kernels))
            results = runner.run_plan(plan, os.path.basename(kernels), out, workers=args.workers, log=log)
            status = os.waitpid(pid, 0)[1] if pid else 0
    except nvml.NvmlError as e:  # only the lock raises it, before anything ran
        log(f"harness: {e}")
        return 4
    if not os.path.exists(os.path.join(out, "env.json")):
        log(f"harness: environment snapshot failed (status {status}); see logs/envsnap.log")
        return 4
    counts: dict[str, int] = {}
    for c in results["cases"]:
        counts[c["status"]] = counts.get(c["status"], 0) + 1
    sass = [c["sass_tool"] for c in results["cases"] if c.get("sass_tool")]
    cached = sum(1 for t in sass if t.get("cache"))
    log("harness: done in %.1f s: %s%s" % (
        results["wall_s"], ", ".join(f"{v} {k}" for k, v in sorted(counts.items())),
        f"; SASS of {cached} of {len(sass)} cubins from the cache" if cached else ""))
    faults = [c["id"] for c in results["cases"] if c["status"] == "harness_error"]
    if faults:
        # The results stand as written (the host exits non-zero on them); the log says it plainly.
        log(f"harness: {len(faults)} case(s) failed in the harness, not in the compiler: {', '.join(faults)}")
    return 0


def _prestart(capability: int):
    """`--prestart CAPABILITY`: load now what every run loads (Triton and its warm-up for the
    profile's capability, torch and numpy where installed), while the host is still busy (a
    traced program runs), then wait for the run: one JSON line on stdin, {"argv": [the usual
    arguments], "env": {variables the run sets, its TMPDIR}}. (argv, lines for the log), or
    (None, []) when stdin closes first: the host called the run off."""
    t0 = time.perf_counter()
    # the harness's parts load once they are needed (the runner imports Triton).
    from reprokit.harness import compat, runner  # noqa: F401

    warmed = compat.warm_up(capability)
    t1 = time.perf_counter()
    loaded = []
    for name in ("torch", "numpy"):  # the real ones only: a stand-in is the plan's to choose
        try:
            importlib.import_module(name)
            loaded.append(name)
        except ImportError:
            pass
    t2 = time.perf_counter()
    line = sys.stdin.readline()
    if not line.strip():
        return None, []
    told = json.loads(line)
    os.environ.update(told.get("env") or {})
    tempfile.tempdir = None  # the run's TMPDIR, not the one read at start-up
    early = [f"prestarted while the host was busy: Triton and its warm-up ({', '.join(warmed)}) "
             f"{t1 - t0:.2f} s, {' and '.join(loaded) or 'no torch'} {t2 - t1:.2f} s; the run came "
             f"{time.perf_counter() - t2:.2f} s later"]
    return list(told["argv"]), early


@contextlib.contextmanager
def _clocks(plan: dict, log):
    """--lock-clocks: the SM clock locked for the whole run and reset after, only when the user
    asked (plan.json's gpu.lock_clocks); NvmlError when NVML refuses, which stops the run."""
    gpu = plan.get("gpu") or {}
    if plan.get("mode") != "gpu" or not gpu.get("lock_clocks"):
        yield None
        return
    # the harness's parts load once its arguments are read (the runner imports Triton).
    from reprokit.harness import nvml

    index = (gpu.get("host") or {}).get("index", 0)
    with nvml.lock_clocks(index, gpu["lock_clocks"]) as rec:
        log(f"harness: GPU {index}'s SM clock locked at {rec['locked_mhz']} MHz (--lock-clocks {gpu['lock_clocks']})")
        yield rec
    log(f"harness: GPU {index}'s clocks reset" if rec["reset"] else f"harness: could not reset GPU {index}'s clocks")


def _fork_snapshot(out: str, gpu: bool, index: int = 0) -> int:
    """Take the environment snapshot in a child, beside the cases, so it costs no wall time."""
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            # the harness's parts load once its arguments are read (the runner imports Triton).
            from reprokit.harness.runner import die_with_parent

            die_with_parent(parent)
            os.nice(10)  # it only has to finish before the last case: let the compiles go first
            fd = os.open(os.path.join(out, "logs", "envsnap.log"), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.dup2(fd, 2)
            # the harness's parts load once its arguments are read (the runner imports Triton).
            from reprokit.harness import envsnap

            write_json(os.path.join(out, "env.json"), envsnap.snapshot(gpu=gpu, index=index))
            code = 0
        except BaseException:  # noqa: BLE001 - the snapshot's process reports any failure and exits, never unwinds
            import traceback

            traceback.print_exc()
        finally:
            os._exit(code)
    return pid


if __name__ == "__main__":
    sys.exit(main())
