"""A run over several stacks: capture each, bundle each, and say how each went (StackOutcome).

One stack's failure (image build, harness crash, engine down) is recorded and the others go on.
Each capture is made in a locked temporary folder of this run inside the bundles' folder
(`.<stack>-<gpu>.reprokit-<pid>-<hex>.run`), so a user's `<out>/<stack>-<gpu>` is never needed,
never replaced; the folder goes once bundled, and a killed run's is swept by the next writer.
What failed is kept beside the bundles as `<stack>-<gpu>.failed[-N]` (a harness failure, or the
capture the writer refused), never over anything, so the logs are where the error message says.

One run at a time per bundle folder: a second `run` or `replay` into the same --out is refused
at the start (OutputBusy, exit 2), before it does any work.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reprokit import locks
from reprokit.config import Stack
from reprokit.errors import CaptureInvalid, FileSystemError, OutputBusy, ReprokitError
from reprokit.executors import Executor
from reprokit.options import SILENT, BundleOptions, Listener, RunOptions
from reprokit.plan import Plan
from reprokit.records import Results
from reprokit.run.capture import capture, keep_failed
from reprokit.run.publish import publish

# The lock a run holds on its bundle folder (as `<out>/.run.lock`).
RUN_LOCK = "run"

@dataclass(frozen=True)
class StackOutcome:
    stack: str
    bundle: Path | None
    results: Results | None
    error: str | None
    warnings: tuple[str, ...] = ()
    harness_errors: tuple[str, ...] = ()  # cases that failed in the harness: the bundle holds them, the run exits 4

    @property
    def ok(self) -> bool:
        return self.error is None


def run_stacks(stacks: list[Stack], executor: Executor, plan: Plan, options: RunOptions, bundle: BundleOptions,
               listener: Listener = SILENT) -> list[StackOutcome]:
    """Capture `plan` on each stack in turn and bundle each (into bundle.out_dir);
    `listener.stack(name, state)` hears capturing, bundling, then done or failed."""
    outcomes = []
    out = Path(bundle.out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(out, e, "cannot create the bundle folder") from None
    locks.check_writable(out, "probe")  # before any suite runs, not after
    # Held for the whole run: a second run into this folder stops here, not after its work.
    with locks.hold(out / RUN_LOCK, "a run", shown=out):
        locks.sweep(out)  # what killed runs left here
        for stack in stacks:
            listener.stack(stack.name, "capturing")
            name = f"{stack.name}-{plan.profile.key}"
            try:
                with locks.temp(out, f".{name}", "run", is_dir=True) as tmp:
                    cap = capture(stack, executor, tmp.path / name, plan, options, failed_as=out / name)
                    listener.stack(stack.name, "bundling")
                    try:
                        path = publish(cap.out_dir, cap.origin(), bundle)
                    except CaptureInvalid as e:
                        raise CaptureInvalid(f"{e} (the capture is kept in {keep_failed(cap.out_dir, out / name)})",
                                             e.problems) from None
                    # Read while the capture is still there: the temporary folder goes next.
                    outcomes.append(StackOutcome(stack.name, path, cap.results, None, tuple(cap.warnings()),
                                                 tuple(cap.harness_errors())))
            except (FileSystemError, OutputBusy):
                raise  # the output itself is unusable: every other stack would fail the same way
            except ReprokitError as e:
                outcomes.append(StackOutcome(stack.name, None, None, str(e)))
            listener.stack(stack.name, "done" if outcomes[-1].ok else "failed")
    return outcomes
