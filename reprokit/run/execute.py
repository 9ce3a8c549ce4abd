"""The spine's one step: a plan's harness run in a stack, over a work folder, to checked results.

    stage(workdir, plan, kernels, kind)                 plan.json, kernels/ and the folder's marker
    copy_kernels(plan, src, dest)                       the kernel sources a plan names, into a folder
    execute(plan, stack, executor, workdir, options)    -> Capture (results parsed once, here)

`execute` prepares the stack, gives the run one scratch folder of its own for every temporary
file (the harness's and the compilers' TMPDIR on this host; removed however the run ends, swept
after a kill), resets GPU clocks the harness may have locked, and reads results.json into typed
records (reprokit.records). Where the work folder lives and what becomes of it is the caller's:
a capture writes it aside and publishes it atomically (capture.py), a sweep keeps a resumable
one (reprokit.sweep.run), a run, replay, bisect, fleet task or trace publish it as a bundle
(stacks.py, publish.py).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from reprokit import locks
from reprokit.config import GpuProfile, Stack
from reprokit.errors import ConfigError, FileSystemError, HarnessError
from reprokit.executors import Executor, RunResult
from reprokit.options import GpuOptions, Origin, RunOptions
from reprokit.plan import Plan
from reprokit.proc import last_line
from reprokit.records import Results, parse_results


@dataclass(frozen=True)
class Capture:
    out_dir: Path
    stack: Stack
    profile: GpuProfile
    executor: str
    mode: str
    prepare_facts: dict[str, Any]
    run: RunResult
    results: Results

    def executor_facts(self) -> dict[str, Any]:
        return {"name": self.executor, **self.prepare_facts, **self.run.runtime}

    def origin(self) -> Origin:
        """What its bundle records about where it came from."""
        return Origin(stack=self.stack.pins(), profile=self.profile.to_dict(), executor=self.executor_facts(),
                      mode=self.mode)

    def harness_errors(self) -> list[str]:
        """Ids of the cases that failed in the harness itself: a fault of ours, not a result."""
        return self.results.harness_errors()

    def warnings(self) -> list[str]:
        """What the user set that this stack ignores: knob-like variables its Triton never reads."""
        env = json.loads((self.out_dir / "env.json").read_text())
        return [f"{k['name']} is set, but {k['why'].split(';')[0]}" for k in env.get("unread_knobs") or []
                if k.get("set")]


def harness_results(stack: Stack, executor: str, run: RunResult, work: Path) -> tuple[Results | None, str | None]:
    """(results, None) of a harness run that finished, parsed once here, or (None, why) when it
    did not, or when it ran another Triton than the stack pins: a mislabelled bundle is worse than
    none. HarnessError when results.json has not the harness's shape."""
    results_path = work / "results.json"
    if not run.ok or not results_path.is_file() or not (work / "env.json").is_file():
        how = "timed out" if run.timed_out else f"exited {run.returncode}"
        return None, f"{stack.name}: harness {how} under {executor}: {last_line(run.log_tail)}"
    results = json.loads(results_path.read_text())
    if stack.name != "local" and results.get("triton") != stack.triton:
        return None, (f"{stack.name} pins triton {stack.triton}, but the harness under {executor} ran "
                      f"triton {results.get('triton')}")
    return parse_results(results, HarnessError, f"{stack.name} under {executor}"), None


def stage(workdir: Path, plan: Plan, kernels: Path, kind: str) -> None:
    """A fresh work folder ready for the harness: reprokit's marker of `kind` first (whatever of
    the folder survives is known for ours), then logs/, plan.json and the plan's kernel files."""
    workdir = Path(workdir)
    locks.mark(workdir, kind)
    try:
        (workdir / "logs").mkdir(exist_ok=True)
        (workdir / "plan.json").write_text(json.dumps(plan.to_json(), indent=1, sort_keys=True) + "\n")
        copy_kernels(plan, Path(kernels), workdir / "kernels")
    except OSError as e:
        raise FileSystemError.of(workdir, e, "cannot write") from None


# The modification time of every kernel file reprokit stages for a compile (1970-01-01T00:00:00Z).
KERNEL_MTIME = 0


def copy_kernels(plan: Plan, src: Path, dest: Path) -> list[str]:
    """Copy the kernel sources the plan names (and the suite definition) into dest. A plan of
    declared or traced calls (kind "call") or generated kernels takes the whole folder: a user's
    kernel may import the modules beside it, a generated one its carried helpers."""
    dest.mkdir(parents=True, exist_ok=True)
    if any(c.kind in ("call", "generated") for c in plan.cases):
        names = sorted(p.relative_to(src).as_posix() for p in Path(src).rglob("*")
                       if p.is_file() and "__pycache__" not in p.relative_to(src).parts)
        missing = sorted({c.kernel_file for c in plan.cases} - set(names))
        if missing:
            raise ConfigError(f"kernel source {src / missing[0]} named by the plan does not exist")
    else:
        names = sorted({c.kernel_file for c in plan.cases} | {"suite.toml"})
    for name in names:
        if not (src / name).is_file():
            raise ConfigError(f"kernel source {src / name} named by the plan does not exist")
        (dest / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src / name, dest / name)
        # ptxas writes the modification time of the source file into the cubin's line table:
        # a copy made now would give every compile of an unchanged kernel new bytes
        os.utime(dest / name, (KERNEL_MTIME, KERNEL_MTIME))
    for stale in sorted(dest.rglob("__pycache__")):
        # bytecode is checked against the source's mtime and size, which no longer tell an
        # edited kernel from the one compiled before: none is kept beside the copies
        shutil.rmtree(stale)
    return names


def execute(plan: Plan, stack: Stack, executor: Executor, workdir: Path, options: RunOptions, *,
            failed: Callable[[], str] | None = None,
            before_run: Callable[[Path], None] | None = None, scratch_name: str = "run") -> Capture:
    """Run the harness over `workdir` (plan.json and kernels/ already there) in `stack`, and read
    its results. HarnessError when the harness did not finish or ran another Triton than the stack
    pins; `failed()` says, in the message's parentheses, where its logs are (and may move them).
    `before_run(scratch)` hears the run's scratch folder once the stack is ready (a sweep notes
    it, so that its condensed records mask the temporary paths it gave the harness).
    Nothing ran when the stack could not be prepared: the executor's error goes up as it is."""
    workdir = Path(workdir)
    with locks.run_scratch(executor.host.tmp, scratch_name) as scratch:
        try:
            facts = executor.prepare(stack)
            if before_run:
                before_run(scratch)
            run = executor.run_harness(stack, workdir, workers=options.workers, timeout_s=options.run_timeout_s,
                                       gpu=plan.gpu.on_gpu, scratch=scratch, turns=options.turns)
        finally:
            # The harness resets clocks it locked; this covers a harness killed before it could.
            reset_locked_clocks(plan.gpu)
    results, why = harness_results(stack, executor.name, run, workdir)
    if why:
        raise HarnessError(f"{why} ({failed() if failed else f'logs in {workdir}'})")
    assert results is not None
    return Capture(workdir, stack, plan.profile, executor.name, plan.mode, facts, run, results)


def reset_locked_clocks(gpu: GpuOptions) -> bool:
    """After a run with --lock-clocks, reset the GPU's SM clock from the host as well: the harness
    resets what it locked, but a harness killed by a timeout or a signal never gets to. True when
    NVML took the reset; a host without NVML, or one that refuses, leaves the harness's own."""
    if not gpu.on_gpu or not gpu.lock_clocks:
        return False
    try:
        import pynvml  # optional: nvidia-ml-py, the `gpu` extra; a host without it resets nothing
    except ImportError:
        return False
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return False
    try:
        pynvml.nvmlDeviceResetGpuLockedClocks(pynvml.nvmlDeviceGetHandleByIndex((gpu.host or {}).get("index", 0)))
        return True
    except pynvml.NVMLError:
        return False
    finally:
        pynvml.nvmlShutdown()
