"""A run over several stacks: capture each, bundle each, and the cross-stack verdict grid.

One stack's failure (image build, harness crash, engine down) is recorded and the others go on.
Each capture is made in the bundles' own folder, as <out>/<stack>-<gpu>, and removed once
bundled; what failed stays there (<stack>-<gpu>.failed, or the capture the writer refused), so
the logs are where the error message says.
"""

from __future__ import annotations

import shutil
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
    harness_errors: tuple = ()  # cases that failed in the harness: the bundle holds them, the run exits 4

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
    for stack in stacks:
        if progress:
            progress(stack.name, "capturing")
        try:
            # Captured beside its bundle, so a failed run's logs stay where the error says.
            # The folder is ours (named for this stack and profile): a leftover of an earlier run goes.
            where = Path(bundle.out_dir) / f"{stack.name}-{options.profile.key}"
            cap = capture(stack, executor, where, replace(_options_for(options, stack), force=True))
            if progress:
                progress(stack.name, "bundling")
            path = write_bundle(cap.out_dir, cap.origin(), bundle)
            outcomes.append(StackOutcome(stack.name, path, cap.results, None, tuple(cap.warnings()),
                                         tuple(cap.harness_errors())))
            shutil.rmtree(cap.out_dir)
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
