"""The fleet folder, on storage every node shares:

    fleet.json           what was submitted: the plan bundle's sha256, every task, every Slurm job
    plan.tgz             the frozen plan bundle (a copy of --plan): every task runs its plan and kernels
    slurm/array.sh       the batch script; slurm/JOB_TASK.out the tasks' output
    tasks/N/attempt-J.json   task N's own word on its attempt under Slurm job J (started, ended, outcome)
    bundles/task-N/      task N's bundle, named by its content like any other

fleet.json is rewritten whole under a lock (submit and resubmit), never edited in place; a task
writes only its own files.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from reprokit.common import files
from reprokit.errors import FileSystemError, UsageError

FORMAT = 1
FILE = "fleet.json"


@dataclass(frozen=True)
class Task:
    index: int
    stack: dict          # the stack's pins, frozen at submit
    profile: dict        # the GPU profile, frozen at submit
    shard: tuple = (1, 1)

    @property
    def label(self) -> str:
        shard = f" shard {self.shard[0]}/{self.shard[1]}" if self.shard[1] > 1 else ""
        return f"{self.stack['name']}@{self.profile['key']}{shard}"

    def to_dict(self) -> dict:
        return {"index": self.index, "stack": self.stack, "profile": self.profile, "shard": list(self.shard)}

    @classmethod
    def from_dict(cls, d: dict) -> Task:
        return cls(int(d["index"]), dict(d["stack"]), dict(d["profile"]), tuple(d.get("shard") or (1, 1)))


@dataclass(frozen=True)
class Job:
    job_id: str
    tasks: tuple         # task indices this array job runs
    submitted: str

    def to_dict(self) -> dict:
        return {"job_id": self.job_id, "tasks": list(self.tasks), "submitted": self.submitted}


@dataclass(frozen=True)
class Fleet:
    dir: Path
    plan_sha256: str
    plan_source: str
    spec: dict
    tasks: tuple
    jobs: tuple
    mode: str = "auto"

    @property
    def plan(self) -> Path:
        return self.dir / "plan.tgz"

    def task(self, index: int) -> Task:
        for t in self.tasks:
            if t.index == index:
                return t
        raise UsageError(f"{self.dir}: the fleet has no task {index} (tasks 0..{len(self.tasks) - 1})")

    def latest_job(self, index: int) -> Job | None:
        """The newest job that ran (or runs) task `index`."""
        return next((j for j in reversed(self.jobs) if index in j.tasks), None)

    def task_dir(self, index: int) -> Path:
        return self.dir / "tasks" / str(index)

    def bundle_dir(self, index: int) -> Path:
        return self.dir / "bundles" / f"task-{index}"

    def to_dict(self) -> dict:
        return {"format": FORMAT, "plan_sha256": self.plan_sha256, "plan_source": self.plan_source,
                "mode": self.mode, "spec": self.spec, "tasks": [t.to_dict() for t in self.tasks],
                "jobs": [j.to_dict() for j in self.jobs]}


def write_json(path: Path, data) -> None:
    """Whole or not at all (reprokit.common.files, the one JSON writer): a reader on another node never sees half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    files.write_json(str(path), data)


def save(fleet: Fleet) -> None:
    write_json(fleet.dir / FILE, fleet.to_dict())


def load(directory: Path) -> Fleet:
    path = Path(directory) / FILE
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        raise UsageError(f"{directory}: not a fleet folder (no {FILE}; `reprokit fleet submit` makes one)") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a folder, not a fleet's {FILE}") from None
    except OSError as e:  # no permission, an I/O error: the system's refusal, exit 5
        raise FileSystemError.of(path, e, "cannot be read") from None
    except ValueError as e:
        raise UsageError(f"{path}: unreadable ({e})") from None
    fmt = raw.get("format") if isinstance(raw, dict) else None
    if fmt != FORMAT:
        older = isinstance(fmt, int) and fmt < FORMAT
        raise UsageError(f"{path}: fleet format {fmt!r} is {'too old' if older else 'too new or unknown'} "
                         f"for this reprokit (reads {FORMAT})")
    return Fleet(Path(directory), raw["plan_sha256"], raw.get("plan_source", ""), raw.get("spec") or {},
                 tuple(Task.from_dict(t) for t in raw["tasks"]),
                 tuple(Job(str(j["job_id"]), tuple(j["tasks"]), j.get("submitted", "")) for j in raw["jobs"]),
                 raw.get("mode", "auto"))


def attempts(fleet: Fleet, index: int) -> dict:
    """job id -> task `index`'s own record of its attempt under that job (at least Slurm's raw
    job id, which the batch script notes before Python starts)."""
    out = {}
    for p in sorted(fleet.task_dir(index).glob("raw-*")):
        raw = p.read_text().strip()
        if raw.isdigit():
            out[p.name[len("raw-"):]] = {"raw_job_id": raw}
    for p in sorted(fleet.task_dir(index).glob("attempt-*.json")):
        try:
            rec = json.loads(p.read_text())
        except (OSError, ValueError):
            continue  # a record being written right now: the next look sees it whole
        out[p.stem[len("attempt-"):]] = {**out.get(p.stem[len("attempt-"):], {}), **rec}
    return out
