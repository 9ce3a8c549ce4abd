"""A run over several stacks: capture each, bundle each, and say how each went (StackOutcome).
On a GPU the stacks' harnesses run side by side and take their benchmarks' rounds in turn
(reprokit.harness.turns), so that every stack is measured under the same drift; else one after
another.

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

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from reprokit import locks
from reprokit.config import Stack
from reprokit.errors import CaptureInvalid, FileSystemError, OutputBusy, ReprokitError
from reprokit.executors import Executor
from reprokit.harness import turns
from reprokit.options import SILENT, BundleOptions, Listener, RunOptions, Seat
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
    """Capture `plan` on each stack and bundle each (into bundle.out_dir); `listener.stack(name,
    state)` hears capturing, bundling, then done or failed. On a GPU, several stacks' harnesses
    run side by side, their benchmarks' rounds in turn (side_by_side); else one stack after
    another."""
    out = Path(bundle.out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(out, e, "cannot create the bundle folder") from None
    locks.check_writable(out, "probe")  # before any suite runs, not after
    # Held for the whole run: a second run into this folder stops here, not after its work.
    with locks.hold(out / RUN_LOCK, "a run", shown=out):
        locks.sweep(out)  # what killed runs left here
        if side_by_side(stacks, plan):
            return _in_turns(stacks, executor, plan, options, bundle, listener)
        return [_one(stack, executor, plan, options, bundle, listener) for stack in stacks]


def side_by_side(stacks: list[Stack], plan: Plan) -> bool:
    """Whether the stacks measure side by side: a plan that runs on the GPU, on two or more
    stacks. Their times are compared, so drift and clock changes must hit each alike: round
    by round, in turn (reprokit.harness.turns), rather than one stack's whole run after another's."""
    return plan.gpu.on_gpu and len(stacks) > 1


def _in_turns(stacks: list[Stack], executor: Executor, plan: Plan, options: RunOptions, bundle: BundleOptions,
              listener: Listener) -> list[StackOutcome]:
    """Every stack made ready first (a side's harness must not wait while another's image
    builds), then their captures at once, one thread each, in a folder they share for turns."""
    outcomes: dict[str, StackOutcome] = {}
    ready = []
    for stack in stacks:
        try:
            executor.prepare(stack)
            ready.append(stack)
        except (FileSystemError, OutputBusy):
            raise
        except ReprokitError as e:
            listener.stack(stack.name, "failed")
            outcomes[stack.name] = StackOutcome(stack.name, None, None, str(e))
    heard = _Serial(listener)
    if len(ready) > 1:
        listener.note(f"{len(ready)} stacks measured side by side on the GPU, their benchmarks' rounds in turn")
    with locks.scratch(executor.host.tmp, "turns") as folder:
        seats = [Seat(Path(folder), i, len(ready)) for i in range(len(ready))]
        with ThreadPoolExecutor(max_workers=max(1, len(ready))) as pool:
            futures = [pool.submit(_one, stack, executor, plan,
                                   replace(options, turns=seat) if len(ready) > 1 else options, bundle, heard)
                       for stack, seat in zip(ready, seats)]
            for stack, future in zip(ready, futures):
                outcomes[stack.name] = future.result()  # FileSystemError and OutputBusy go up from here
    return [outcomes[stack.name] for stack in stacks]


class _Serial(Listener):
    """A listener the stacks' threads share: one call at a time."""

    def __init__(self, inner: Listener):
        self.inner, self.lock = inner, threading.Lock()

    def stack(self, name: str, state: str) -> None:
        with self.lock:
            self.inner.stack(name, state)

    def note(self, line: str) -> None:
        with self.lock:
            self.inner.note(line)


def _one(stack: Stack, executor: Executor, plan: Plan, options: RunOptions, bundle: BundleOptions,
         listener: Listener) -> StackOutcome:
    out = Path(bundle.out_dir)
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
            outcome = StackOutcome(stack.name, path, cap.results, None, tuple(cap.warnings()),
                                   tuple(cap.harness_errors()))
    except (FileSystemError, OutputBusy):
        raise  # the output itself is unusable: every other stack would fail the same way
    except ReprokitError as e:
        outcome = StackOutcome(stack.name, None, None, str(e))
    finally:
        if options.turns is not None:  # however this side ended, the others no longer wait for it
            turns.end_side(str(options.turns.folder), options.turns.side)
    listener.stack(stack.name, "done" if outcome.ok else "failed")
    return outcome
