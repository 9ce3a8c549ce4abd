"""A trace, from a command to a bundle: run the program under the recorder, build the trace's plan
from what it launched, capture that plan in the program's own Triton, and pack one bundle with the
trace's files (trace.json, the program's sources, kept tensors) beside the capture.

What the capture and the packing need is loaded while the program runs (the harness prestarted in
the program's Python: Triton, its warm-up, torch; the schemas and templates digest here): a
trace costs little more than the program itself (docs/performance.md, make bench-trace).

The verb (`commands/trace.py`) turns its arguments into a `TraceRequest` and shows the `Traced`
this returns; progress comes up through the Listener, as for every other run.
"""

from __future__ import annotations

import platform
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

from reprokit import locks
from reprokit.bundle import schemas, templates
from reprokit.common.redact import cut_values, redact_argv
from reprokit.config import Stack
from reprokit.errors import FileSystemError, UsageError
from reprokit.executors.local import LocalExecutor
from reprokit.options import SILENT, BundleOptions, GpuOptions, HostEnv, Listener, RunOptions
from reprokit.records import Results
from reprokit.run.capture import capture
from reprokit.run.publish import publish
from reprokit.trace import generated, program
from reprokit.trace import plan as trace_plan


@dataclass(frozen=True)
class TraceRequest:
    """What one trace asks for: the command as the user would run it, the GPU options (the host's
    GPU checked against the profile; none: the program runs under Triton's interpreter), which
    tensors to keep, and where and how the bundle is packed."""

    argv: tuple[str, ...]
    gpu: GpuOptions
    bundle: BundleOptions
    tensors: str = "none"
    workers: int = 2
    stdout_to_stderr: bool = False  # --json: the program's stdout must not reach ours

    @property
    def interpret(self) -> bool:
        return not self.gpu.on_gpu


@dataclass(frozen=True)
class Traced:
    """How the program ran (program.ProgramRun), the bundle, its results, the capture's seconds,
    and the stack the capture named for the program's own Triton."""

    ran: program.ProgramRun
    bundle: Path
    results: Results
    capture_s: float
    stack: str


def trace(req: TraceRequest, host: HostEnv, listener: Listener = SILENT) -> Traced:
    """Run req.argv with the recorder, capture what it launched, pack the bundle under
    req.bundle.out_dir. UsageError when the program never imported Triton or launched nothing."""
    program.resolve(req.argv)
    out = Path(req.bundle.out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(out, e, "cannot create the bundle folder") from None
    options = program.TraceOptions(req.argv, req.gpu.profile.to_dict(), req.interpret, req.tensors,
                                   stdout_to_stderr=req.stdout_to_stderr)
    command = " ".join(redact_argv(req.argv)[0])  # a secret option's value stays off the terminal and CI logs
    # A locked temporary folder of ours in the bundle folder (the records and the capture):
    # removed however the trace ends, and swept by the next writer there after a SIGKILL.
    locks.sweep(out)
    with locks.temp(out, ".trace", "run", is_dir=True) as tmp:
        scratch = tmp.path
        # The program's own compiles, for the capture to start from on the same release
        # (harness.kinds.generated.seeded): the speed of a trace is mostly not compiling everything again.
        # (the capture's environment only: the program runs in the user's own)
        harness_host = replace(host, environ={**(host.environ), "REPROKIT_TRACE_SEED": str(scratch / "seed")})
        # The capture's harness loads (Triton, its warm-up, torch) while the program runs, in the
        # program's own Python when the command names it; closed unused if the trace goes no further.
        python = program.interpreter(req.argv, host.environ)
        with LocalExecutor(python=python, host=harness_host) as early:
            if python is not None:
                early.prestart(req.gpu.profile.capability)
            threading.Thread(target=_ready_to_pack, daemon=True).start()
            listener.note(f"trace: running {command}" + (" under the interpreter (no GPU)" if req.interpret else ""))
            ran = program.run(options, scratch / "records", host.child_environ())
            if ran.start is None:
                raise UsageError(f"trace: {command} exited {ran.exit_code} without importing triton: nothing to trace")
            kernels = len(ran.specs) + len(generated.compiled(ran.records))
            if not kernels:
                # a program that fails before its first launch (a CUDA-only call on a CPU host) says why
                last = next((ln.strip() for ln in reversed(ran.stderr_tail.splitlines()) if ln.strip()), "")
                why = f": {cut_values(last, [v for _, v in redact_argv(req.argv)[1]])[:300]}" \
                    if ran.exit_code != 0 and last else ""
                raise UsageError(f"trace: {command} exited {ran.exit_code} and launched no Triton kernel"
                                 f"{ran.said_of_processes()}{why}")
            listener.note(f"trace: {kernels} specialisation(s) in {ran.seconds:.2f} s; capturing them")
            t0 = time.perf_counter()
            # the program's Python ran it (a launcher's, or another than the command named: a fresh harness)
            executor = early
            if ran.start["python"] != python:
                early.close()
                executor = LocalExecutor(python=ran.start["python"], host=harness_host)
            with executor:
                bundle, results, stack = _capture(req, ran, executor, scratch, listener)
            return Traced(ran, bundle, results, time.perf_counter() - t0, stack)


def _ready_to_pack() -> None:
    """What packing the bundle needs and this process can load while the program runs: the
    schemas' validators and the templates' digest (cached; packing asks again and says any fault)."""
    try:
        for document in schemas.SCHEMA_FILES:
            schemas.validator(document)
        templates.templates_sha256()
    except Exception:  # noqa: BLE001 - only a head start: the bundle's own step reports what fails
        pass


def _capture(req: TraceRequest, ran: program.ProgramRun, executor: LocalExecutor, scratch: Path,
             listener: Listener) -> tuple[Path, Results, str]:
    start = ran.start or {}
    argv = req.argv
    stem = Path(argv[1]).stem if len(argv) > 1 and argv[1].endswith(".py") else Path(argv[0]).name
    stack = Stack(name=f"trace-{stem}", triton=start["triton"], torch=start.get("torch"),
                  python=start.get("python_version") or platform.python_version())
    # The extracted kernel files are the plan's whole kernel folder. The capture compiles what
    # the program launched: compile-only, whatever GPU the program ran on.
    plan = trace_plan.build(ran, req.gpu.profile, kernels=scratch / "records" / "kernels")
    seed = scratch / "seed"
    seed.mkdir(exist_ok=True)
    generated.seed(ran.records, seed)
    host = executor.host
    # Captured inside the trace's own temporary folder (as `run` does): a user's <out>/<stack>-<gpu>
    # is never touched; a failed harness run's logs are kept as <out>/<stack>-<gpu>.failed.
    name = f"{stack.name}-{req.gpu.profile.key}"
    cap = capture(stack, executor, scratch / name, plan, RunOptions(workers=req.workers),
                  failed_as=Path(req.bundle.out_dir) / name)
    trace_plan.write_extras(ran, scratch / "records", cap.out_dir,
                            trace_plan.summary(ran, list(argv), req.interpret, req.tensors))
    for line in trace_plan.what_leaves(ran, cap.out_dir, req.tensors, host.environ):
        listener.note(line)
    # the values of secret-saying options, cut from every text file of the bundle
    secrets = {value: option for option, value in redact_argv(req.argv)[1]}
    bundle = publish(cap.out_dir, cap.origin(), replace(req.bundle, secret_options={**secrets, **req.bundle.secret_options}))
    return bundle, cap.results, stack.name
