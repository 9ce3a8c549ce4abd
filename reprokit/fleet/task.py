"""Submitting a fleet, and what one array task runs on its node.

A task runs the frozen plan bundle's own plan and kernel sources (never the node's checkout),
retargeted to its GPU profile and cut to its shard, on its stack with the executor its node
supports; its bundle names the plan bundle as parent, as a replay's does. It records its
attempt (Slurm's ids, then its outcome) in its own file, so status and collect know what it did
even when Slurm has forgotten it.
"""

from __future__ import annotations

import shutil
import socket
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from reprokit import locks
from reprokit.bundle.reader import open_bundle
from reprokit.config import Config, GpuProfile, Stack
from reprokit.errors import ReprokitError, UsageError
from reprokit.executors import make_executor
from reprokit.fleet import slurm, state
from reprokit.fleet.spec import FleetSpec
from reprokit.gpu import choose_gpu
from reprokit.options import BundleOptions, HostEnv, Report, RunOptions, quiet
from reprokit.plan import Plan
from reprokit.run.replay import write_kernels
from reprokit.run.stacks import run_stacks

# Array task N runs the fleet's task N. Before Python starts, the shell notes Slurm's raw job id
# for this attempt, so a task that dies at once (a wrong interpreter, a broken install) can still
# be matched to what the job-completion log says of it.
SCRIPT = """#!/bin/bash
# One task of a reprokit fleet (written by `reprokit fleet submit`).
mkdir -p {dir}/tasks/"$SLURM_ARRAY_TASK_ID"
echo "$SLURM_JOB_ID" > {dir}/tasks/"$SLURM_ARRAY_TASK_ID"/raw-"$SLURM_ARRAY_JOB_ID"
exec {python} -m reprokit fleet task {dir} "$SLURM_ARRAY_TASK_ID"
"""


def utcnow() -> str:
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def parse_shards(text: str | None) -> int:
    if text is None:
        return 1
    try:
        n = int(text)
    except ValueError:
        raise UsageError(f"--shards {text!r} is not a whole number") from None
    if n < 1:
        raise UsageError(f"--shards must be at least 1, got {n}")
    return n


def check_shards(plan: dict, shards: int) -> None:
    """Each shard holds at least one of the plan's cases (and so the task list stays the plan's size)."""
    n = len(plan.get("cases") or ())
    if shards > n:
        raise UsageError(f"--shards {shards}: the plan has {n} case(s), and each shard needs at least one")


def plan_tasks(stacks: list[Stack], profiles: list[GpuProfile], shards: int) -> tuple:
    """Every (stack x GPU profile x shard), numbered in that order."""
    tasks: list[state.Task] = []
    for stack in stacks:
        for profile in profiles:
            for shard in range(1, shards + 1):
                tasks.append(state.Task(len(tasks), stack.pins(), profile.to_dict(), (shard, shards)))
    return tuple(tasks)


def submit(directory: Path, plan: Path, tasks: tuple, spec: FleetSpec, mode: str, report: Report = quiet,
           bundle=None) -> state.Fleet:
    """Freeze the plan into `directory`, write fleet.json and submit one array job per distinct
    Slurm request (tasks of GPU profiles that ask for the same resources share one array)."""
    directory = Path(directory).resolve()
    # The user's inputs first, whatever this host has: a bad plan is the same error with or without Slurm.
    if bundle is None:  # the caller's own opening of `plan`, else verified here before anything is written
        bundle = open_bundle(plan, keep=lambda rel: False)
    check_shards(bundle.plan, max((t.shard[1] for t in tasks), default=1))
    if directory.exists() and (not directory.is_dir() or any(directory.iterdir())):
        raise UsageError(f"{directory}: exists and is not an empty folder; a fleet folder is new "
                         "(`fleet collect --resubmit` reruns what failed in an old one)")
    slurm.require_client()
    made = not directory.exists()
    directory.mkdir(parents=True, exist_ok=True)
    fleet = None
    try:
        with locks.hold(directory / state.FILE):
            shutil.copyfile(plan, directory / "plan.tgz")
            fleet = state.Fleet(directory, bundle.sha256, str(Path(plan).resolve()), spec.to_dict(), tasks, (), mode)
            state.save(fleet)
            return _submit_tasks(fleet, spec, [t.index for t in tasks], report)
    except BaseException:
        # Nothing queued: leave no folder that looks like a fleet. (Once a job is queued, its
        # record stays, so that the job can still be followed and cancelled.)
        queued = (directory / state.FILE).exists() and state.load(directory).jobs
        if not queued:
            if made:
                shutil.rmtree(directory, ignore_errors=True)
            else:  # the user's own empty folder: what submit put there goes, the folder stays
                for name in ("plan.tgz", state.FILE, "slurm"):
                    p = directory / name
                    if p.is_dir() and not p.is_symlink():
                        shutil.rmtree(p, ignore_errors=True)
                    elif p.exists() or p.is_symlink():
                        p.unlink()
        raise


def resubmit(fleet: state.Fleet, indices: list[int], report: Report = quiet) -> state.Fleet:
    with locks.hold(fleet.dir / state.FILE):
        return _submit_tasks(state.load(fleet.dir), FleetSpec.from_dict(fleet.spec), indices, report)


def _submit_tasks(fleet: state.Fleet, spec: FleetSpec, indices: list[int], report: Report) -> state.Fleet:
    groups: dict[tuple, list[int]] = {}
    for i in indices:
        req = spec.request(fleet.task(i).profile["key"])
        groups.setdefault((tuple(req.sbatch_args()), req.python or sys.executable), []).append(i)
    out = fleet.dir / "slurm"
    out.mkdir(exist_ok=True)
    jobs = list(fleet.jobs)
    for (args, python), group in groups.items():
        script = out / f"task-{len(jobs)}.sh"
        script.write_text(SCRIPT.format(python=python, dir=fleet.dir))
        script.chmod(0o755)
        job_id = slurm.submit(script, group, list(args), out, "reprokit-fleet")
        jobs.append(state.Job(job_id, tuple(sorted(group)), utcnow()))
        report(f"submitted job {job_id}: tasks {','.join(map(str, sorted(group)))} ({' '.join(args) or 'no options'})")
        # Saved after each job: an sbatch that fails next leaves the ones already queued on record.
        fleet = state.Fleet(fleet.dir, fleet.plan_sha256, fleet.plan_source, fleet.spec, fleet.tasks,
                            tuple(jobs), fleet.mode)
        state.save(fleet)
    return fleet


def run_task(directory: Path, index: int, host: HostEnv, config: Config, report: Report = quiet) -> int:
    """Run task `index` of the fleet in `directory` here; the exit status for Slurm."""
    fleet = state.load(directory)
    task = fleet.task(index)
    env = host.environ
    job = env.get("SLURM_ARRAY_JOB_ID") or env.get("SLURM_JOB_ID") or "local"
    attempt = fleet.task_dir(index) / f"attempt-{job}.json"
    record = {"task": index, "job_id": job, "raw_job_id": env.get("SLURM_JOB_ID"),
              "node": socket.gethostname(), "started": utcnow(), "started_unix": time.time()}
    state.write_json(attempt, record)
    try:
        bundle = open_bundle(fleet.plan)
        if bundle.sha256 != fleet.plan_sha256:
            raise UsageError(f"{fleet.plan}: its sha256 is not the one the fleet froze ({fleet.plan_sha256[:12]})")
        profile = GpuProfile.from_dict(task.profile, where=f"fleet task {index}: GPU profile")
        stack = Stack.from_pins(task.stack)
        recorded = Plan.from_json(bundle.plan, where=f"{fleet.plan}: plan.json")
        request = FleetSpec.from_dict(fleet.spec).request(profile.key)
        workers = request.cpus_per_task or int(env.get("SLURM_CPUS_PER_TASK") or 1)
        gpu, line = choose_gpu(profile, fleet.mode, env)
        if line:
            report(line)
        with locks.scratch(host.tmp, "fleet") as tmp, \
                make_executor(request.executor, host, with_torch=gpu.on_gpu, report=report, stacks=[stack]) as ex:
            kernels = Path(tmp) / "kernels"
            write_kernels(bundle, kernels)
            plan = recorded.with_gpu(gpu).for_stack(task.stack).shard(*task.shard).with_files(kernels=kernels)
            out = run_stacks([stack], ex, plan, RunOptions(workers=workers),
                             BundleOptions.from_host(host, fleet.bundle_dir(index), parent=bundle.sha256))[0]
        # A bundle whose cases failed in the harness is kept for its evidence, but the task is
        # not done: those results are reprokit's faults, not the compiler's verdicts.
        error = out.error or (f"cases failed in the harness: {', '.join(out.harness_errors)}"
                              if out.harness_errors else None)
        record.update(ended=utcnow(), ended_unix=time.time(), ok=error is None,
                      bundle=str(out.bundle) if out.bundle else None, error=error)
    except ReprokitError as e:
        record.update(ended=utcnow(), ended_unix=time.time(), ok=False, bundle=None, error=str(e))
    state.write_json(attempt, record)
    if not record["ok"]:
        report(f"task {index} ({task.label}) failed: {record['error']}")
        return 4 if record.get("bundle") else 3
    report(f"task {index} ({task.label}): {record['bundle']}")
    return 0
