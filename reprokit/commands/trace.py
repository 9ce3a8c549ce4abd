"""`reprokit trace -- python script.py ARGS`: run a program, record every distinct kernel
specialisation it launched, capture each as a call case, and pack the whole as one bundle."""

from __future__ import annotations

import argparse
import json
import platform
import time
from dataclasses import replace
from pathlib import Path

from reprokit import locks
from reprokit.commands import argtypes
from reprokit.commands._common import harness_error_message, say
from reprokit.config import Stack
from reprokit.errors import FileSystemError, HarnessError, ProgramFailed, UsageError
from reprokit.executors.local import LocalExecutor
from reprokit.gpu import HostGpus, gpu_options
from reprokit.options import BundleOptions, GpuOptions, RunOptions
from reprokit.records import Results
from reprokit.run.capture import capture
from reprokit.run.publish import publish
from reprokit.trace import plan as trace_plan
from reprokit.trace import program


def add_parser(sub) -> None:
    p = sub.add_parser(
        "trace", help="run your program, record the Triton kernels it launches, and bundle them as cases",
        description="Run a program with a recorder in its own Triton, keep every distinct kernel specialisation "
                    "it compiled and launched (source, signature, constexprs, options, grid, arguments), then "
                    "capture each as a call case (IR at every level, SASS, TMA counts) and pack one bundle. "
                    "With no GPU the program runs under Triton's interpreter (TRITON_INTERPRET=1). A program "
                    f"that fails still gives a bundle of what it launched; trace then exits "
                    f"{ProgramFailed.exit_code}.",
        epilog="example: reprokit trace --gpu h100 --out bundles -- python my_kernels.py --size 4096",
    )
    p.add_argument("--gpu", type=argtypes.gpu_profile, default="h100", help="GPU profile to compile for (default h100); on a GPU host it "
                                                 "must match the GPU, as for run")
    p.add_argument("--out", type=argtypes.out_dir, default=Path("bundles"), help="folder for the bundle (default bundles/)")
    p.add_argument("--tensors", choices=program.TENSORS, default="none",
                   help="also keep each specialisation's input and output tensors: small (up to 1 MiB each), "
                        "all (up to 1 GiB each); default none")
    p.add_argument("--workers", type=argtypes.positive_int, default=2, help="parallel compiles in the capture (default 2)")
    p.add_argument("--allow-gpu-mismatch", action="store_true",
                   help="trace on a GPU whose name or memory is not the profile's (same capability)")
    p.add_argument("--share", action="store_true", help="also scrub host name, user, home paths and GPU serials")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.add_argument("command", type=argtypes.command_word, nargs=argparse.REMAINDER, metavar="-- COMMAND",
                   help="the program to run, after --, as you would run it")
    p.set_defaults(func=run)


def run(args) -> int:
    argv = list(args.command)
    if argv and argv[0] == "--":
        argv = argv[1:]
    program.resolve(tuple(argv))
    profile = args.gpu
    gpu = _gpu(args, profile)
    interpret = not gpu.on_gpu
    out = Path(args.out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(out, e, "cannot create the bundle folder") from None
    options = program.TraceOptions(tuple(argv), profile.to_dict(), interpret, args.tensors,
                                   stdout_to_stderr=args.json)
    # A locked temporary folder of ours in --out (the records and the capture): removed however
    # the trace ends, and swept by the next writer there after a SIGKILL.
    locks.sweep(out)
    with locks.temp(out, ".trace", "run", is_dir=True) as tmp:
        scratch = tmp.path
        say(f"trace: running {' '.join(argv)}" + (" under the interpreter (no GPU)" if interpret else ""))
        ran = program.run(options, scratch / "records", args.host.child_environ())
        if ran.start is None:
            raise UsageError(f"trace: {' '.join(argv)} exited {ran.exit_code} without importing triton: "
                             "nothing to trace")
        if not ran.specs:
            # a program that fails before its first launch (a CUDA-only call on a CPU host) says why
            last = next((ln.strip() for ln in reversed(ran.stderr_tail.splitlines()) if ln.strip()), "")
            why = f": {last[:300]}" if ran.exit_code != 0 and last else ""
            raise UsageError(f"trace: {' '.join(argv)} exited {ran.exit_code} and launched no Triton kernel{why}")
        say(f"trace: {len(ran.specs)} specialisation(s) in {ran.seconds:.2f} s; capturing them")
        t0 = time.perf_counter()
        bundle, results = _capture(args, ran, profile, gpu, scratch, argv, interpret)
        capture_s = time.perf_counter() - t0
    return _report(args, ran, bundle, results, capture_s)


def _gpu(args, profile) -> GpuOptions:
    """The host's GPU checked against the profile as `run` does; a host without one traces under
    the interpreter (the capture is compile-only either way)."""
    environ = args.host.environ or {}
    return gpu_options(profile, "auto", HostGpus.detect(environ.get("CUDA_VISIBLE_DEVICES")),
                       allow_mismatch=args.allow_gpu_mismatch)


def _capture(args, ran, profile, gpu, scratch: Path, argv: list, interpret: bool):
    start = ran.start
    stem = Path(argv[1]).stem if len(argv) > 1 and argv[1].endswith(".py") else Path(argv[0]).name
    stack = Stack(name=f"trace-{stem}", triton=start["triton"], torch=start.get("torch"),
                  python=start.get("python_version") or platform.python_version())
    plan = trace_plan.build(ran, profile, stack.pins())
    kernels = scratch / "records" / "kernels"  # the extracted kernel files, the plan's whole kernel folder
    executor = LocalExecutor(python=start["python"], host=args.host)
    options = RunOptions(replace(gpu, mode="compile-only"), workers=args.workers, plan=plan, kernels=kernels)
    # Captured inside the trace's own temporary folder (as `run` does): a user's <out>/<stack>-<gpu>
    # is never touched; a failed harness run's logs are kept as <out>/<stack>-<gpu>.failed.
    name = f"{stack.name}-{profile.key}"
    cap = capture(stack, executor, scratch / name, options, failed_as=Path(args.out) / name)
    trace_plan.write_extras(ran, scratch / "records", cap.out_dir,
                            trace_plan.summary(ran, argv, interpret, args.tensors))
    bundle = publish(cap.out_dir, cap.origin(), BundleOptions.from_host(args.host, args.out, share=args.share))
    if cap.harness_errors():
        say(f"reprokit: {harness_error_message(stack.name, cap.harness_errors())}")
    return bundle, cap.results


def _report(args, ran, bundle: Path, results: Results, capture_s: float) -> int:
    cases = results.cases
    if args.json:
        print(json.dumps({"bundle": str(bundle), "program": {"exit_code": ran.exit_code, "seconds": round(ran.seconds, 3)},
                          "capture_s": round(capture_s, 3),
                          "cases": [{"id": c.id, "status": c.status, "verdict": c.verdict,
                                     "tma": c.raw.get("tma")} for c in cases]}, indent=1))
    else:
        for c in cases:
            say(f"  {c.id}: {c.status}, {c.verdict}")
        say(f"trace: {bundle} (program {ran.seconds:.2f} s, capture {capture_s:.2f} s)")
    if ran.exit_code != 0:
        say(f"reprokit: trace: the program exited {ran.exit_code}; the bundle holds the "
            f"{len(ran.specs)} specialisation(s) it launched before, and its failure (trace/trace.json)")
        return ProgramFailed.exit_code
    if results.harness_errors():
        return HarnessError.exit_code
    return 0
