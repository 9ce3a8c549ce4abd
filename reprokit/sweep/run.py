"""Running a sweep: per target GPU and stack, a resumable work folder, the harness over the grid,
then the condensed bundle with its answers; and merging shards of one sweep into one bundle.

The work folder (`<work>/<sweep>/<stack>-<gpu>`) holds the plan, the kernels and one record per
finished point (cases/<id>/record.json, written by the harness as each point ends). Running the
same sweep again resumes there: the harness skips every point with a record and reruns none.
A folder whose plan differs (another grid, spec, shard or stack) is refused, never mixed; a work
folder carries reprokit's marker (kind "sweep-work"), and a folder under that name without it is
the user's: refused, never cleared. Each run has its own scratch folder (locks.run_scratch).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from reprokit import locks
from reprokit.common.files import write_json
from reprokit.config import Config, GpuProfile, Stack
from reprokit.errors import (
    FileSystemError,
    HarnessError,
    OutputBusy,
    OutputExists,
    ReprokitError,
    UsageError,
)
from reprokit.executors import Executor
from reprokit.options import SILENT, BundleOptions, GpuOptions, Listener, Origin, RunOptions
from reprokit.plan import Plan
from reprokit.records import parse_results
from reprokit.run.execute import copy_kernels, execute
from reprokit.run.publish import publish
from reprokit.suite import kernels_dir
from reprokit.sweep import answers as answers_mod
from reprokit.sweep.condense import RunPaths, condense, executor_facts, write_timings
from reprokit.sweep.spec import SweepSpec, build_sweep_plan

STATE = "sweep-state.json"
WORK = "sweep-work"  # the marker kind of a work folder (reprokit.locks.mark)


@dataclass(frozen=True)
class SweepOptions:
    """What a sweep runs besides the spec (where it packs is a BundleOptions beside it).

    work: the folder of resumable work folders; gpus/stacks: only these of the spec's targets
    (empty: all); reduced: the spec's reduced grid; shard: (i, n); sass: all | base | none
    (default: the spec's). mode "gpu": every point that compiles is also launched, checked and
    timed (reprokit.harness.kinds.launch), on the GPU that `gpu` checked against each target's
    profile (GpuOptions, one per profile); host_stack: the stack that runs every target instead
    of the spec's (the local executor: this interpreter's own Triton, as `run --executor local`)."""

    work: Path
    workers: int = 1
    gpus: tuple = ()
    stacks: tuple = ()
    reduced: bool = False
    shard: tuple | None = None
    sass: str | None = None
    run_timeout_s: float = 6 * 3600
    mode: str = "compile-only"
    gpu: tuple = ()
    host_stack: Stack | None = None

    def __post_init__(self):
        if self.workers < 1:
            raise UsageError(f"--workers must be at least 1, got {self.workers}")

    def gpu_for(self, profile: GpuProfile) -> GpuOptions:
        if self.mode != "gpu":
            return GpuOptions(profile, self.mode)
        found = next((g for g in self.gpu if g.profile.key == profile.key and g.on_gpu), None)
        if found is None:
            raise UsageError(f"--mode gpu: no GPU of this host was checked against the {profile.key} profile")
        return found


@dataclass(frozen=True)
class SweepOutcome:
    stack: str
    gpu: str
    bundle: Path | None
    answers: dict | None
    error: str | None
    ran: int = 0  # points compiled by this run (the others came from an earlier, interrupted one)

    @property
    def ok(self) -> bool:
        return self.error is None


def targets(spec: SweepSpec, cfg: Config, opts: SweepOptions) -> list[tuple[GpuProfile, Stack]]:
    out = []
    for t in spec.targets:
        if opts.gpus and t.gpu not in opts.gpus:
            continue
        if opts.host_stack is not None:  # one stack, this host's, for every GPU target chosen
            out.append((cfg.gpu(t.gpu), opts.host_stack))
            continue
        names = [s for s in t.stacks if not opts.stacks or s in opts.stacks]
        if opts.stacks and not t.stacks:
            names = list(opts.stacks)
        for name in names:
            out.append((cfg.gpu(t.gpu), cfg.stack(name)))
    if not out:
        raise UsageError(f"sweep {spec.name}: no target left after --gpus/--stacks "
                         f"(its targets: {', '.join(f'{t.gpu}: {len(t.stacks)} stacks' for t in spec.targets)})")
    if opts.shard:  # points are dealt by their place in the grid, the same for every target
        profile, stack = out[0]
        if not build_sweep_plan(spec, profile, stack.pins(), reduced=opts.reduced, shard=opts.shard, sass=opts.sass,
                                mode=opts.mode).cases:
            raise UsageError(f"--shard {opts.shard[0]}/{opts.shard[1]}: that shard of sweep {spec.name} holds no "
                             f"point; give fewer shards than the grid has points")
    return out


def work_dir(opts: SweepOptions, spec: SweepSpec, stack: Stack, profile: GpuProfile) -> Path:
    name = spec.name + ("-reduced" if opts.reduced else "") + ("-gpu" if opts.mode == "gpu" else "")
    if opts.shard:
        name += f"-shard{opts.shard[0]}of{opts.shard[1]}"
    return Path(opts.work) / name / f"{stack.name}-{profile.key}"


def run_sweep(spec: SweepSpec, cfg: Config, opts: SweepOptions, bundle: BundleOptions, executor: Executor, *,
              listener: Listener = SILENT) -> list[SweepOutcome]:
    """Every target of the spec; one stack's failure is recorded and the others go on.
    `listener.points(key, done, total, state)` hears points finish, where it listens for them."""
    progress = listener.points if listener.hears_points else None
    outcomes = []
    for profile, stack in targets(spec, cfg, opts):
        key = f"{stack.name}/{profile.key}"
        try:
            outcomes.append(run_one(spec, profile, stack, opts, bundle, executor,
                                    progress=(lambda d, t, s, k=key: progress(k, d, t, s)) if progress else None))
        except (FileSystemError, OutputBusy):
            raise  # the OS refused a folder (cache, work, out): every other target would fail the same way
        except ReprokitError as e:
            outcomes.append(SweepOutcome(stack.name, profile.key, None, None, str(e)))
            if progress:
                progress(key, 0, 0, "failed")
    return outcomes


def run_one(spec: SweepSpec, profile: GpuProfile, stack: Stack, opts: SweepOptions, bundle: BundleOptions,
            executor: Executor, progress=None) -> SweepOutcome:
    # On a GPU the plan records it as NVML names it (no serial, no UUID): the same on every machine
    # of its kind, so a sweep resumes on the next machine lent, and on no other kind of GPU.
    gpu = opts.gpu_for(profile)
    plan = build_sweep_plan(spec, gpu, stack.pins(), reduced=opts.reduced, shard=opts.shard, sass=opts.sass)
    work = work_dir(opts, spec, stack, profile)
    try:
        work.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(work.parent, e, "cannot make the sweep's work folder") from None
    with locks.hold(work, f"sweep {spec.name} on {stack.name}/{profile.key}"):
        epoch = _prepare_work(work, plan, bundle, Path(spec.kernels) if spec.kernels else kernels_dir())
        total = len(plan)
        before = _count_records(work)
        noted: dict = {}

        def note(scratch: Path) -> None:
            # The folders the harness ran with, so that its condensed records mask them.
            noted["paths"] = _note_run_paths(work, temp_roots=executor.temp_root(scratch),
                                             homes=executor.harness_home(), caches=str(executor.host.cache))

        stop = threading.Event()
        watcher = None
        if progress:
            progress(before, total, "resuming" if before else "compiling")
            watcher = threading.Thread(target=_watch, args=(work, total, progress, stop), daemon=True)
            watcher.start()
        options = RunOptions(workers=opts.workers, run_timeout_s=opts.run_timeout_s)
        try:
            # The spine's step: its own scratch folder (reprokit-cases-*, ptxas's temporary files),
            # removed however the run ends and swept by the next after a SIGKILL.
            cap = execute(plan, stack, executor, work, options,
                          failed=lambda: f"the records so far stay in {work}; run again to resume",
                          before_run=note,
                          scratch_name="sweep")
        finally:
            stop.set()
            if watcher:
                watcher.join()
        results, facts, run, paths = cap.results, cap.prepare_facts, cap.run, noted["paths"]
        write_timings(work, results)
        if progress:
            progress(total, total, "bundling")
        origin = Origin(stack=stack.pins(), profile=profile.to_dict(),
                        executor=executor_facts(executor.name, facts, run.runtime, paths), mode=plan.mode)
        path, answers = pack(work, origin, dataclasses.replace(bundle, source_date_epoch=epoch), executor.host.tmp)
        if progress:
            progress(total, total, "done")
        return SweepOutcome(stack.name, profile.key, path, answers, None, ran=total - before)


def _prepare_work(work: Path, plan: Plan, bundle: BundleOptions, kernels: Path) -> int:
    """Start a work folder, or check that an existing one holds this very grid; return the epoch."""
    plan_path = work / "plan.json"
    if plan_path.is_file() and not locks.marked(work, WORK):
        raise OutputExists(f"{work} holds a plan.json but is not a work folder reprokit made (no "
                           f"{locks.MARKER} of kind {WORK!r}); it is left as it is: pass another --work")
    if plan_path.is_file():
        old = json.loads(plan_path.read_text())
        if old != plan.to_json():
            raise UsageError(f"{work} holds another grid (spec, stack, shard or options changed); "
                             f"remove it to start over, or pass another --work")
        state = json.loads((work / STATE).read_text())
    else:
        # Only a start of ours that was cut short (marked, no plan yet) is cleared; anything else
        # under this name is the user's and is never touched.
        if work.is_symlink() or (work.exists() and not work.is_dir()):
            raise OutputExists(f"{work} exists and is not a folder; a sweep's work folder is a folder "
                               "(pass another --work)")
        if work.is_dir() and any(work.iterdir()):
            if not locks.marked(work, WORK):
                raise OutputExists(f"{work} holds files reprokit did not make (no {locks.MARKER} of kind "
                                   f"{WORK!r}); it is left as it is: pass another --work")
            shutil.rmtree(work)
        work.mkdir(parents=True, exist_ok=True)
        locks.mark(work, WORK)  # first: a start killed after this is known for ours and cleared
        (work / "logs").mkdir()
        copy_kernels(plan, kernels, work / "kernels")
        state = {"started": int(time.time())}
        (work / STATE).write_text(json.dumps(state) + "\n")
        write_json(str(plan_path), plan.to_json())  # last, whole: a folder with a plan is a complete start
    # The bundle's one time: SOURCE_DATE_EPOCH when given, else when the sweep first started.
    return bundle.source_date_epoch if bundle.source_date_epoch is not None else int(state["started"])


def _note_run_paths(work: Path, **paths: str | None) -> RunPaths:
    """Add the temp folder, HOME and cache this run's harness uses (RunPaths' fields) to the work
    folder's state, before it runs: records of every run that ever resumed here name their own,
    and packing masks them all. Returns every one noted so far."""
    state = json.loads((work / STATE).read_text())
    new = dict(state)
    for key, value in paths.items():
        if value and value not in state.get(key, []):
            new[key] = sorted([*state.get(key, []), value])
    if new != state:
        write_json(str(work / STATE), new)  # whole or not at all: a kill here must not lose the start
    return _run_paths(work)


def _run_paths(work: Path) -> RunPaths:
    state = Path(work) / STATE
    if not state.is_file():  # a merge's work folder: its records were masked in their shards
        return RunPaths()
    doc = json.loads(state.read_text())
    return RunPaths(**{f.name: tuple(doc.get(f.name, [])) for f in dataclasses.fields(RunPaths)})


def _count_records(work: Path) -> int:
    cases = work / "cases"
    return sum(1 for d in cases.iterdir() if (d / "record.json").is_file()) if cases.is_dir() else 0


def _watch(work: Path, total: int, progress, stop: threading.Event) -> None:
    """Progress from the records the harness streams to the disk (any executor, no second channel)."""
    last = -1
    while not stop.wait(0.5):
        n = _count_records(work)
        if n != last:
            progress(n, total, "compiling")
            last = n


def pack(work: Path, origin: Origin, bundle: BundleOptions, tmp_root: Path) -> tuple[Path, dict]:
    """Condense a finished work folder, answer it, and write the bundle (dated bundle.source_date_epoch)."""
    epoch = bundle.source_date_epoch
    if epoch is None:  # both callers date it: a run by its start, a merge by its shards' date
        raise ValueError("pack: the bundle's source_date_epoch is not set")
    plan = json.loads((Path(work) / "plan.json").read_text())
    answers: dict = {}

    def keep(canon: dict) -> set:
        answers.update(answers_mod.answer(plan, parse_results(canon, HarnessError, str(work))))
        return answers_mod.boundary_ids(answers)

    with locks.scratch(tmp_root, "sweep") as tmp:
        cap = Path(tmp) / "capture"
        condense(work, cap, epoch=epoch, keep=keep, paths=_run_paths(work))
        (cap / "sweep.json").write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
        path = publish(cap, origin, bundle)
    return path, answers
