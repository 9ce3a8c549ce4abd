"""Where every task of a fleet stands, from Slurm's word (squeue, sacct) and the task's own record.

    pending / running   squeue lists it (with its reason: Resources, Priority, ...)
    done                its latest attempt ended with a bundle
    failed              Slurm says it ended badly (FAILED, CANCELLED, TIMEOUT, NODE_FAIL, ...) or
                        it ended without a bundle; the reason names both sides where both speak
    missing             never submitted, or Slurm has no word on it and it left no record
"""

from __future__ import annotations

from dataclasses import dataclass

from reprokit.fleet import slurm, state

STATES = ("pending", "running", "done", "failed", "missing")


@dataclass(frozen=True)
class TaskStatus:
    index: int
    label: str
    state: str
    job_id: str | None
    slurm_state: str | None
    reason: str | None
    exit_code: str | None
    bundle: str | None
    attempts: int

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in ("index", "label", "state", "job_id", "slurm_state", "reason",
                                              "exit_code", "bundle", "attempts")}


def status(fleet: state.Fleet) -> list[TaskStatus]:
    job_ids = [j.job_id for j in fleet.jobs]
    queue = slurm.queued(job_ids)
    by_task, by_raw = slurm.accounted(job_ids)
    return [_one(fleet, t, queue, by_task, by_raw) for t in fleet.tasks]


def _one(fleet: state.Fleet, task: state.Task, queue: dict, by_task: dict, by_raw: dict) -> TaskStatus:
    job = fleet.latest_job(task.index)
    tries = state.attempts(fleet, task.index)
    rec = tries.get(job.job_id) if job else None

    def make(st: str, sl: slurm.SlurmState | None, reason: str | None = None) -> TaskStatus:
        return TaskStatus(task.index, task.label, st, job.job_id if job else None, sl.state if sl else None,
                          reason if reason is not None else (sl.reason if sl else None),
                          sl.exit_code if sl else None, (rec or {}).get("bundle") if st == "done" else None,
                          len(tries))

    if job is None:
        return make("missing", None, "never submitted")
    queued = queue.get((job.job_id, task.index))
    if queued is not None:
        return make("running" if queued.state != "PENDING" else "pending", queued)
    acct = by_task.get((job.job_id, task.index))
    if acct is None and rec and rec.get("raw_job_id"):
        acct = by_raw.get(str(rec["raw_job_id"]))
    if acct is not None and acct.active:
        return make("running" if acct.state != "PENDING" else "pending", acct)
    ended = rec if rec is not None and "ended" in rec else None  # the record of an attempt that ended
    if ended is not None and ended.get("ok") and (acct is None or acct.state == "COMPLETED"):
        return make("done", acct)
    if acct is not None:
        why = [f"Slurm: {acct.state}" + (f" ({acct.reason})" if acct.reason else "")
               + (f", exit {acct.exit_code}" if acct.exit_code not in (None, "0:0") else "")]
        if ended is not None and ended.get("error"):
            why.append(f"task: {ended['error']}")
        elif rec is not None and ended is None:
            why.append(_died(fleet, job.job_id, task.index, rec))
        return make("failed", acct, "; ".join(why))
    if ended is not None:
        return make("failed", None, f"task: {ended.get('error') or 'ended without a bundle'}")
    if rec is not None:
        return make("failed", None, _died(fleet, job.job_id, task.index, rec) + "; Slurm no longer lists it")
    return make("missing", None, "Slurm no longer lists it and it left no record (cancelled before it started?)")


def _died(fleet: state.Fleet, job_id: str, index: int, rec: dict) -> str:
    """Why a task that started left no outcome: the last line of its output says most."""
    out = fleet.dir / "slurm" / f"{job_id}_{index}.out"
    try:
        lines = [ln.strip() for ln in out.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        lines = []
    what = "the task started but never finished" if "started" in rec else "reprokit never got going on the node"
    return f"{what}" + (f" (last output: {lines[-1][:200]})" if lines else "") + f"; see {out}"


def counts(statuses: list[TaskStatus]) -> dict:
    out = dict.fromkeys(STATES, 0)
    for st in statuses:
        out[st.state] += 1
    return out
