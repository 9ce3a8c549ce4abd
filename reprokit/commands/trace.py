"""`reprokit trace -- python script.py ARGS`: run a program, record every distinct kernel
specialisation it launched, capture each as a call case, and pack the whole as one bundle."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from reprokit.commands import argtypes
from reprokit.commands._common import default_workers, harness_error_message, say
from reprokit.errors import HarnessError, NotFaithful, ProgramFailed
from reprokit.gpu import choose_gpu
from reprokit.options import BundleOptions, GpuOptions, Listener
from reprokit.run.trace import Traced, TraceRequest, trace
from reprokit.trace import program

# statuses that say reprokit, not the compiler, failed to capture what the program compiled
UNFAITHFUL = ("not_reproduced", "capture_failed")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "trace", help="run your program, record the Triton kernels it launches, and bundle them as cases",
        description="Run a program with a recorder in its own Triton, keep every distinct kernel specialisation "
                    "it compiled and launched (source, signature, constexprs, options, grid, arguments), then "
                    "capture each as a call case (IR at every level, SASS, TMA counts) and pack one bundle. "
                    "With no GPU the program runs under Triton's interpreter (TRITON_INTERPRET=1). A program "
                    f"that fails still gives a bundle of what it launched; trace then exits "
                    f"{ProgramFailed.exit_code}; when a specialisation was not captured faithfully (its IR is not the "
                    f"program's own compile), {NotFaithful.exit_code}.",
        epilog="example: reprokit trace --gpu h100 --out bundles -- python my_kernels.py --size 4096",
    )
    p.add_argument("--gpu", type=argtypes.gpu_profile, default="h100", help="GPU profile to compile for (default h100); on a GPU host it "
                                                 "must match the GPU, as for run")
    p.add_argument("--out", type=argtypes.out_dir, default=Path("bundles"), help="folder for the bundle (default bundles/)")
    p.add_argument("--tensors", choices=program.TENSORS, default="none",
                   help="also keep each specialisation's input and output tensors (your data, packed byte-exact and "
                        "never scanned for secrets): small (up to 1 MiB each), all (up to what a bundle reader "
                        "takes: 511 MiB a launch, 1.75 GiB in all); default none")
    p.add_argument("--workers", type=argtypes.positive_int, default=None,
                   help="parallel compiles in the capture (default one per CPU, as run's)")
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
    req = TraceRequest(tuple(argv), _gpu(args, args.gpu), BundleOptions.from_host(args.host, args.out, share=args.share),
                       tensors=args.tensors, workers=default_workers(args.workers), stdout_to_stderr=args.json)
    traced = trace(req, args.host, _Lines())
    if traced.results.harness_errors():
        say(f"reprokit: {harness_error_message(traced.stack, traced.results.harness_errors())}")
    return _report(args, traced)


class _Lines(Listener):
    def note(self, line: str) -> None:
        say(line)


def _gpu(args, profile) -> GpuOptions:
    """The host's GPU checked against the profile as `run` does; a host without one traces under
    the interpreter (the capture is compile-only either way)."""
    gpu, _ = choose_gpu(profile, "auto", args.host.environ, allow_mismatch=args.allow_gpu_mismatch)
    return gpu


def _report(args, traced: Traced) -> int:
    ran, bundle, results, capture_s = traced.ran, traced.bundle, traced.results, traced.capture_s
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
    unfaithful = [c.id for c in cases if c.status in UNFAITHFUL]
    if unfaithful:
        say(f"reprokit: trace: {len(unfaithful)} specialisation(s) not captured faithfully "
            f"({', '.join(unfaithful[:5])}{', ...' if len(unfaithful) > 5 else ''}): see their status and error")
    if ran.misses:  # launches or compiles the recorder could not describe: no case holds them
        say(f"reprokit: trace: {len(ran.misses)} kernel(s) the program ran could not be recorded "
            f"({', '.join(sorted({m['kernel'] for m in ran.misses})[:5])}): trace/trace.json says why")
    if unfaithful or ran.misses:
        return NotFaithful.exit_code
    return 0
