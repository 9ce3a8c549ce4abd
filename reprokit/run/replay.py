"""Replaying a bundle: its own plan and kernel sources run on stacks, each run packed as a new
bundle whose parent is the original's sha256, then judged in one grid against what the bundle
recorded (column 0).

`request()` says, before anything runs, what a replay of a bundle would run: the cases chosen,
the bundle's GPU profile, the mode it asks for, and the stacks (its own unless others are
chosen). `replay()` runs that Request and returns a Replay: the grid, the new bundles, and which
stacks could not run. The verb turns it into an exit code: 0 nothing moved (on its own stack: it
*reproduces*), 1 a cell moved, 3 a stack could not run.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from reprokit import locks
from reprokit.compare import boards
from reprokit.compare.grid import Column, Grid, compare
from reprokit.compare.sources import ResultSet, open_result_set
from reprokit.compare.timing import DEFAULT, TimingOptions
from reprokit.config import GpuProfile, Stack, stack_fields
from reprokit.errors import BundleUnusable, ExecutorError, HarnessError, UsageError
from reprokit.options import SILENT, BundleOptions, GpuOptions, Listener, RunOptions
from reprokit.plan import Plan
from reprokit.run.stacks import run_stacks


@dataclass(frozen=True)
class Replay:
    parent: str                # sha256 of the replayed bundle
    bundle: str                # its root name
    grid: Grid
    outcomes: tuple            # reprokit.run.stacks.StackOutcome per stack
    own_stack: bool            # replayed on the stack the bundle recorded

    @property
    def reproduced(self) -> bool:
        return not self.grid.moved and not self.grid.failed

    @property
    def exit_code(self) -> int:
        return self.exit_code_for(strict=False)

    def exit_code_for(self, strict: bool) -> int:
        """3 when a stack could not run, 4 when cases failed in the harness, 1 when a verdict or a
        metric moved (with `strict`, normalised IR too), else 0."""
        if self.grid.failed:
            return ExecutorError.exit_code
        if any(o.harness_errors for o in self.outcomes):
            return HarnessError.exit_code  # cases failed in the harness, not the compiler: no evidence
        return 1 if self.grid.significant(strict) else 0


def bundle_stack(manifest: dict) -> Stack:
    """The stack a bundle recorded, from its manifest's pins."""
    pins = manifest.get("stack") or {}
    if "name" not in pins or "triton" not in pins:
        raise UsageError("the bundle's manifest names no stack with a triton pin; pass --stacks")
    # Only the pins a stack knows: facts the manifest adds (image_digest) are not pins to rebuild from.
    return Stack.from_pins({k: v for k, v in pins.items() if k in stack_fields() | {"name"}})


def _recorded(bundle, case_ids: set) -> ResultSet:
    rs = ResultSet.from_bundle(bundle, role="recorded", key="recorded",
                               label=f"recorded ({bundle.records.triton})")
    if len(case_ids) == len(rs.cases):
        return rs
    return replace(rs, results=rs.results.only(case_ids))


def write_kernels(bundle, dest: Path) -> None:
    """The bundle's own kernels/ (kernels/cuda/ included) into dest; the reader has already
    refused any path that could leave it."""
    for rel in bundle.data:
        parts = rel.split("/")[1:]
        if rel.startswith("kernels/") and parts and not any(p in ("", ".", "..") for p in parts):
            target = dest.joinpath(*parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(bundle.read(rel))


TENSORS = "trace/tensors/"


def write_tensors(bundle, plan: Plan, dest: Path) -> bool:
    """The tensors a trace kept (trace/tensors/) for the plan's cases into dest, each checked
    first: every file trace/trace.json lists must be in the bundle, and each must be a whole
    archive as torch.save writes it (a zip whose members' CRCs hold), else BundleUnusable in one
    line before anything runs. False when the bundle kept none for these cases."""
    listed = []
    if "trace/trace.json" in bundle.data:
        try:
            summary = json.loads(bundle.read("trace/trace.json"))
        except (ValueError, RecursionError):
            summary = None
        files = summary.get("tensor_files") if isinstance(summary, dict) else None
        if not isinstance(summary, dict) or not isinstance(files, (list, type(None))):
            raise BundleUnusable(f"{bundle.root}: trace/trace.json is not the trace record a trace writes "
                                 "(a JSON object with tensor_files)")
        listed = [f for f in files or [] if isinstance(f, str)]
    wanted = {f"{TENSORS}{c.trace_n:04d}.{when}.pt" for c in plan.cases
              if c.trace_n is not None for when in ("inputs", "outputs")}
    missing = sorted(f for f in listed if f in wanted and f not in bundle.data)
    if missing:
        raise BundleUnusable(f"{bundle.root}: trace/trace.json lists the recorded tensors {missing[0]}, "
                             "which the bundle does not hold")
    names = sorted(rel for rel in bundle.data if rel in wanted)
    for rel in names:
        data = bundle.read(rel)
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as z:
                bad = z.testzip()
        except (zipfile.BadZipFile, EOFError, ValueError) as e:
            raise BundleUnusable(f"{bundle.root}: recorded tensors {rel} are corrupt ({e}); "
                                 "replay it with --cases that leave the case out") from None
        if bad is not None:
            raise BundleUnusable(f"{bundle.root}: recorded tensors {rel} are corrupt (member {bad} "
                                 "fails its CRC); replay it with --cases that leave the case out")
    for rel in names:
        target = dest / rel.removeprefix(TENSORS)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(bundle.read(rel))
    return bool(names)


def replay_mode(plan: Plan) -> str:
    """The mode a replay asks for: a compile-only bundle replays compile-only, anything else
    "auto" (launched on a GPU host). A trace's plan is compile-only, since its capture only
    compiles, but its cases are launches the program made: on a GPU a replay launches them."""
    return "compile-only" if plan.mode == "compile-only" and plan.source != "trace" else "auto"


@dataclass(frozen=True)
class Request:
    """What a replay of `bundle` (a reprokit.bundle.Bundle read with every member) runs."""

    bundle: Any
    plan: Plan                 # the bundle's own plan, with only the cases chosen
    profile: GpuProfile        # the GPU profile it recorded
    mode: str                  # the mode it asks for (replay_mode)
    stacks: tuple[Stack, ...]  # where it runs: the stacks chosen, else the one it recorded
    own: bool                  # on the stack it recorded
    reference: str | None = None  # the stack whose column judges the others' times (same_board_reference)
    # (chosen config, the one run instead): choices no GPU of the profile could launch
    instead: tuple[tuple[str, str], ...] = ()


def winners(plan: Plan, fits: Mapping[str, bool] | None = None) -> tuple[Plan, tuple[tuple[str, str], ...]]:
    """A traced plan without the autotune configs the program's autotuner did not choose
    (trace.autotune.chosen false) and the generated kernels it compiled only to compare
    (trace.candidate): what a replay runs unless asked for every candidate. And the choices
    replaced: where the recorded capture says a chosen config does not fit the profile's GPU
    (`fits`: case id -> launch.fits), which a GPU's autotuner never picks (its launch fails, its
    time is inf) but a trace under the interpreter does (it cannot time: the first config), the
    call's first config that fits runs instead: (chosen id, the one run instead)."""
    fits = fits or {}
    calls: dict[Any, list[Any]] = {}
    for c in plan.cases:
        tuned = (c.get("trace") or {}).get("autotune")
        if tuned:  # an @autotune call's configs; a generated kernel's (Inductor's), by the kernel
            calls.setdefault(("call", tuned["call"]) if "call" in tuned else ("kernel", c.get("family")), []).append(c)
    instead = []
    swap: dict[str, str] = {}
    for configs in calls.values():
        for c in configs:
            if c["trace"]["autotune"].get("chosen") and fits.get(c.id) is False:
                other = next((o for o in configs if fits.get(o.id) is True), None)
                if other is not None:
                    swap[c.id] = other.id
                    instead.append((c.id, other.id))
    keep = set(swap.values())
    kept = [c.id for c in plan.cases if c.id not in swap and not (c.get("trace") or {}).get("candidate")
            and (c.id in keep or ((c.get("trace") or {}).get("autotune") or {}).get("chosen", True))]
    return (plan.only(kept) if kept and len(kept) < len(plan.cases) else plan), tuple(instead)


def request(bundle: Any, stacks: list[Stack] | None = None, cases: str | None = None,
            candidates: bool = False) -> Request:
    """The Request for replaying `bundle` on `stacks` (None: its own), only the `cases` globs (of
    a traced bundle, only its autotuners' chosen configs unless `cases` or `candidates` says
    otherwise); UsageError, before anything runs, for globs that match nothing or a bundle that
    names no stack."""
    recorded = Plan.from_json(bundle.plan, where=f"{bundle.root}: plan.json")
    plan = recorded.select(cases, what="the bundle's plan")
    instead: tuple[tuple[str, str], ...] = ()
    if cases is None and not candidates:
        fits = {c["id"]: c["launch"]["fits"] for c in (bundle.results or {}).get("cases", [])
                if isinstance(c.get("launch"), dict) and isinstance(c["launch"].get("fits"), bool)}
        plan, instead = winners(plan, fits)
    chosen = (bundle_stack(bundle.manifest),) if stacks is None else tuple(stacks)
    return Request(bundle, plan, recorded.profile, replay_mode(recorded), chosen, stacks is None, instead=instead)


def same_board_reference(req: Request, executor_name: str, on_gpu: bool, host_board: str | None) -> Request:
    """The request with its same-board reference: the stacks to run and `reference`, the stack
    whose column judges the others' times (None: column 0 judges them, as on one board).

    Times are judged on one board: a GPU replay on a board other than the recording one (or
    where either board is unknown) also measures the bundle's own stack here, first, unless the
    stacks already hold it, and every replayed column's times are labelled against that column;
    the recorded column is then judged only against the cross-board tolerance. The local
    executor runs this interpreter's own stack: that column is the reference. A replay on the
    recording board keeps today's labels (None)."""
    recorded = boards.board_identity(getattr(req.bundle, "env", None))
    if not on_gpu or (recorded is not None and recorded == host_board):
        return replace(req, reference=None)
    if req.own or executor_name == "local":
        return replace(req, reference=req.stacks[0].name)
    own = bundle_stack(req.bundle.manifest)
    if any(s.name == own.name for s in req.stacks):
        return replace(req, reference=own.name)
    return replace(req, stacks=(own, *req.stacks), reference=own.name)


def replay(req: Request, executor, gpu: GpuOptions, options: RunOptions, out: BundleOptions, *,
           listener: Listener = SILENT, timing_options: TimingOptions = DEFAULT) -> Replay:
    """Run the request's plan, with the bundle's own kernels, on its stacks, on `gpu` (the GPU
    this host checked, and the mode); pack each run under out.out_dir with the bundle's sha256
    as parent, and compare. Times are judged against req.reference's column where it has one
    (same_board_reference)."""
    with locks.scratch(executor.host.tmp, "replay") as tmp:
        kernels = Path(tmp) / "kernels"
        kernels.mkdir()
        write_kernels(req.bundle, kernels)
        # On a GPU a traced call launches from the tensors the trace kept (harness.kinds.callgpu);
        # compile-only there is nothing to launch, so they stay out of the new bundles.
        tensors = Path(tmp) / "tensors"
        kept = gpu.on_gpu and write_tensors(req.bundle, req.plan, tensors)
        plan = req.plan.with_gpu(gpu).with_files(kernels=kernels, tensors=tensors if kept else None)
        outcomes = run_stacks(list(req.stacks), executor, plan, options, replace(out, parent=req.bundle.sha256),
                              listener)
    columns: list[ResultSet | Column] = [_recorded(req.bundle, set(req.plan.ids))]
    for o in outcomes:
        columns.append(open_result_set(o.bundle, role="replay", key=o.stack, label=_label(o.stack))
                       if o.bundle is not None else Column.failed(o.stack, _label(o.stack), o.error or "no bundle"))
    ran = {o.stack for o in outcomes if o.bundle is not None}
    grid = compare(columns, timing_options=timing_options, time_reference=req.reference if req.reference in ran else None)
    return Replay(req.bundle.sha256, req.bundle.root, grid, tuple(outcomes), req.own)


def _label(stack: str) -> str:
    return stack.removeprefix("triton-")
