"""The only code that talks to Slurm: sbatch to submit, squeue and sacct to ask, scancel to stop.

Array task N of a fleet is the fleet's task N (`--array=0,2,5`), so any Slurm id `J_N` names
its task directly. Where a cluster keeps no accounting database (`sacct` answers "accounting
storage is disabled"), finished jobs come from the job-completion log instead (`sacct -c`),
which knows only raw job ids: each task writes its raw id (SLURM_JOB_ID) into its attempt
record when it starts, and that maps the two.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from reprokit import proc
from reprokit.errors import ExecutorError, UsageError

# Slurm's job states, as reprokit counts them.
ACTIVE = {"PENDING", "RUNNING", "CONFIGURING", "COMPLETING", "REQUEUED", "RESIZING", "SUSPENDED", "STAGE_OUT"}
_TIMEOUT_S = 60


@dataclass(frozen=True)
class SlurmState:
    """What Slurm says of one array task (or of a raw job id, from the completion log)."""

    state: str          # PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, TIMEOUT, NODE_FAIL, OUT_OF_MEMORY...
    reason: str | None  # squeue's %r / sacct's Reason; None when Slurm gives none
    exit_code: str | None = None   # "3:0" (code:signal)

    @property
    def active(self) -> bool:
        return self.state in ACTIVE


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise UsageError(f"{name} not found: a fleet needs a Slurm client (sbatch, squeue, sacct, scancel) on PATH")
    return path


def require_client() -> None:
    for name in ("sbatch", "squeue", "sacct"):
        _tool(name)


def _run(argv: list[str]) -> proc.ProcResult:
    r = proc.run([_tool(argv[0]), *argv[1:]], timeout=_TIMEOUT_S)
    if r.timed_out:
        raise ExecutorError(f"{argv[0]} did not answer within {_TIMEOUT_S} s")
    return r


def submit(script: Path, tasks: list[int], sbatch_args: list[str], out_dir: Path, name: str) -> str:
    """Submit one array job running `script` for `tasks`; its job id."""
    array = ",".join(str(i) for i in sorted(tasks))
    r = _run(["sbatch", "--parsable", f"--array={array}", f"--job-name={name}",
              f"--output={out_dir}/%A_%a.out", *sbatch_args, str(script)])
    if not r.ok:
        raise ExecutorError(f"sbatch refused the fleet: {proc.last_line(r.stderr_tail)}")
    # --parsable prints "jobid" or "jobid;cluster"
    job_id = r.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise ExecutorError(f"sbatch printed {r.stdout.strip()!r}, not a job id")
    return job_id


def queued(job_ids: list[str]) -> dict[tuple[str, int], SlurmState]:
    """(array job id, task) -> state, for the tasks squeue still lists (pending or running)."""
    if not job_ids:
        return {}
    # All of this user's jobs, filtered here: `squeue -j` fails outright on an id it has forgotten.
    r = _run(["squeue", "--me", "-h", "-r", "-o", "%F|%K|%T|%r"])
    if not r.ok:
        raise ExecutorError(f"squeue failed: {proc.last_line(r.stderr_tail)}")
    wanted = set(job_ids)
    out = {}
    for line in r.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4 or parts[0] not in wanted or not parts[1].isdigit():
            continue
        out[(parts[0], int(parts[1]))] = SlurmState(parts[2], _reason(parts[3]))
    return out


def accounted(job_ids: list[str]) -> tuple[dict, dict]:
    """What sacct knows of finished (and running) tasks: ({(job, task): state}, {raw id: state}).

    The first map comes from the accounting database; where there is none, it is empty and the
    second comes from the job-completion log, keyed by raw job id.
    """
    if not job_ids:
        return {}, {}
    r = _run(["sacct", "-X", "-n", "-P", "-j", ",".join(job_ids), "-o", "JobID,State,ExitCode,Reason"])
    if r.ok:
        return parse_sacct(r.stdout), {}
    if "accounting storage is disabled" not in r.stderr_tail.lower() + r.stdout.lower():
        raise ExecutorError(f"sacct failed: {proc.last_line(r.stderr_tail)}")
    c = _run(["sacct", "-c", "-n", "-P", "-o", "JobIDRaw,State,ExitCode"])
    if not c.ok:
        raise ExecutorError("sacct has neither accounting nor job-completion data here: "
                            f"{proc.last_line(c.stderr_tail)}")
    return {}, parse_completion(c.stdout)


def parse_sacct(text: str) -> dict[tuple[str, int], SlurmState]:
    """`sacct -X -P -o JobID,State,ExitCode,Reason` lines: `12_3|FAILED|3:0|None`. A pending
    range (`12_[4-6]`) is squeue's business and skipped; `CANCELLED by 0` becomes CANCELLED."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 3 or "_" not in parts[0]:
            continue
        job, _, task = parts[0].partition("_")
        if not (job.isdigit() and task.isdigit()):
            continue
        out[(job, int(task))] = SlurmState(parts[1].split()[0], _reason(parts[3] if len(parts) > 3 else ""),
                                           parts[2] or None)
    return out


def parse_completion(text: str) -> dict[str, SlurmState]:
    """`sacct -c -P -o JobIDRaw,State,ExitCode` lines: raw job id -> state."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) >= 3 and parts[0].isdigit():
            out[parts[0]] = SlurmState(parts[1].split()[0], None, parts[2] or None)
    return out


def _reason(text: str) -> str | None:
    text = text.strip()
    return None if text in ("", "None", "(null)") else text


def cancel(job_ids: list[str]) -> None:
    if not job_ids:
        return
    r = _run(["scancel", *job_ids])
    if not r.ok:
        raise ExecutorError(f"scancel failed: {proc.last_line(r.stderr_tail)}")
