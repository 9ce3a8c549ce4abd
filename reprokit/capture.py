"""One capture: plan the suite for a GPU profile, run the harness in a stack, collect the folder.

The folder appears under its final name only when the harness finished; a failed run is kept
beside it as `<name>.failed` with its logs, so nothing half-written passes for a capture.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from reprokit.config import GpuProfile, Stack
from reprokit.errors import HarnessError, UsageError
from reprokit.executors import Executor, RunResult
from reprokit.options import Origin, RunOptions
from reprokit.suite import build_plan, copy_kernels, kernels_dir


@dataclass(frozen=True)
class Capture:
    out_dir: Path
    stack: Stack
    profile: GpuProfile
    executor: str
    mode: str
    prepare_facts: dict
    run: RunResult
    results: dict

    def executor_facts(self) -> dict:
        return {"name": self.executor, **self.prepare_facts, **self.run.runtime}

    def origin(self) -> Origin:
        """What its bundle records about where it came from."""
        return Origin(stack=self.stack.pins(), profile=self.profile.to_dict(), executor=self.executor_facts(),
                      mode=self.mode)

    def warnings(self) -> list[str]:
        """What the user set that this stack ignores: knob-like variables its Triton never reads."""
        env = json.loads((self.out_dir / "env.json").read_text())
        return [f"{k['name']} is set, but {k['why'].split(';')[0]}" for k in env.get("unread_knobs") or []
                if k.get("set")]


def check_out_dir(out_dir: Path, force: bool) -> bool:
    """Refuse a non-empty out_dir unless forced; True when it holds something to replace."""
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise UsageError(f"{out_dir} exists and is not a folder")
    if out_dir.exists() and any(out_dir.iterdir()):
        if not force:
            raise UsageError(f"{out_dir} exists and is not empty (use --force to replace it)")
        return True
    return False


def capture(stack: Stack, executor: Executor, out_dir: Path, options: RunOptions) -> Capture:
    """Run the suite (or options.plan, for replay) in `stack` and leave a capture folder at out_dir."""
    out_dir = Path(out_dir)
    profile, mode = options.profile, options.mode
    if check_out_dir(out_dir, options.force):
        shutil.rmtree(out_dir)
    work = out_dir.with_name(out_dir.name + ".partial")
    shutil.rmtree(work, ignore_errors=True)
    (work / "logs").mkdir(parents=True)
    if options.plan is None:
        plan = build_plan(profile, stack.pins(), mode=mode, only=options.only, timeout_s=options.case_timeout_s)
    else:
        plan = dict(options.plan)
    (work / "plan.json").write_text(json.dumps(plan, indent=1, sort_keys=True) + "\n")
    copy_kernels(plan, Path(options.kernels or kernels_dir()), work / "kernels")
    try:
        facts = executor.prepare(stack)
        run = executor.run_harness(stack, work, workers=options.workers, timeout_s=options.run_timeout_s,
                                   gpu=options.gpu.on_gpu)
    except BaseException:
        # Nothing ran (the stack could not be prepared or started): nothing to keep.
        shutil.rmtree(work, ignore_errors=True)
        raise
    results_path = work / "results.json"
    if not run.ok or not results_path.is_file() or not (work / "env.json").is_file():
        failed = out_dir.with_name(out_dir.name + ".failed")
        shutil.rmtree(failed, ignore_errors=True)
        work.rename(failed)
        why = "timed out" if run.timed_out else f"exited {run.returncode}"
        last = (run.log_tail.strip().splitlines() or ["no output"])[-1]
        raise HarnessError(f"{stack.name}: harness {why} under {executor.name}: {last} (logs in {failed})")
    results = json.loads(results_path.read_text())
    if stack.name != "local" and results.get("triton") != stack.triton:
        # A mislabelled bundle is worse than none: the stack must be what really ran.
        failed = out_dir.with_name(out_dir.name + ".failed")
        shutil.rmtree(failed, ignore_errors=True)
        work.rename(failed)
        raise HarnessError(f"{stack.name} pins triton {stack.triton}, but the harness under {executor.name} ran "
                           f"triton {results.get('triton')} (logs in {failed})")
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    if out_dir.exists():
        out_dir.rmdir()
    work.rename(out_dir)
    return Capture(out_dir, stack, profile, executor.name, plan["mode"], facts, run, results)
