"""A run over several stacks: capture each, bundle each, and the cross-stack verdict grid.

One stack's failure (image build, harness crash, engine down) is recorded and the others go on.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

from reprokit import locks
from reprokit.capture import capture
from reprokit.config import Stack
from reprokit.errors import FileSystemError, OutputBusy, ReprokitError
from reprokit.executors import Executor
from reprokit.options import BundleOptions, RunOptions

# progress(stack name, state): how run_stacks tells its caller where it is.
Progress = Callable[[str, str], None]


@dataclass(frozen=True)
class StackOutcome:
    stack: str
    bundle: Path | None
    results: dict | None
    error: str | None
    warnings: tuple = ()

    @property
    def ok(self) -> bool:
        return self.error is None


def run_stacks(stacks: list[Stack], executor: Executor, options: RunOptions, bundle: BundleOptions,
               progress: Progress | None = None) -> list[StackOutcome]:
    """Capture and bundle each stack in turn (into bundle.out_dir); `progress(stack, state)` hears
    capturing, bundling, then done or failed."""
    from reprokit.bundle.writer import write_bundle

    outcomes = []
    try:
        Path(bundle.out_dir).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(bundle.out_dir, e, "cannot create the bundle folder") from None
    locks.check_writable(bundle.out_dir, "probe")  # before any suite runs, not after
    with locks.run_scratch("run") as scratch:
        for stack in stacks:
            if progress:
                progress(stack.name, "capturing")
            try:
                cap = capture(stack, executor, scratch / stack.name, _options_for(options, stack))
                if progress:
                    progress(stack.name, "bundling")
                path = write_bundle(cap.out_dir, cap.origin(), bundle)
                outcomes.append(StackOutcome(stack.name, path, cap.results, None, tuple(cap.warnings())))
            except (FileSystemError, OutputBusy):
                raise  # the output itself is unusable: every other stack would fail the same way
            except ReprokitError as e:
                outcomes.append(StackOutcome(stack.name, None, None, str(e)))
            if progress:
                progress(stack.name, "done" if outcomes[-1].ok else "failed")
    return outcomes


def _options_for(options: RunOptions, stack: Stack) -> RunOptions:
    """A replayed plan runs as recorded, but names the stack it now runs on."""
    if options.plan is None:
        return options
    return replace(options, plan={**options.plan, "stack": stack.pins()})


def grid(outcomes: list[StackOutcome]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(stack names, [(case id, one cell per stack)]): verdict, with the status when it says more."""
    stacks = [o.stack for o in outcomes]
    order, cells = [], {}
    for o in outcomes:
        for c in (o.results or {}).get("cases", []):
            if c["id"] not in cells:
                order.append(c["id"])
                cells[c["id"]] = {}
            text = c["verdict"]
            if c.get("launch") and not c["launch"]["fits"]:
                text += " (no launch)"
            cells[c["id"]][o.stack] = text
    rows = []
    for cid in order:
        rows.append((cid, [cells[cid].get(o.stack, "-" if o.ok else "failed") for o in outcomes]))
    return stacks, rows
