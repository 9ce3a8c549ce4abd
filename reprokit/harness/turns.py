"""The GPU, one case at a time, and rounds taken in turn across stacks.

Cases compile side by side but touch the GPU one at a time (`GpuLock`: an exclusive lock on the
file the runner names in REPROKIT_GPU_LOCK), so a benchmark never shares the GPU with another
case's launches; a case with long work after its turn may ask to go first (`take_gpu`).

Where several stacks are measured on one GPU (a replay on another board measures the bundle's
own stack beside the others; `run --stacks A,B` on a GPU), their harnesses run side by side and
their benchmarks' rounds interleave, A, B, A, B, so that drift and clock changes hit every side
alike; tritonbench's A/B does the same. The host names a folder the harnesses share
(REPROKIT_TURNS), each harness's side in it (REPROKIT_TURN_SIDE, from 0) and how many sides there
are (REPROKIT_TURN_SIDES). In it:

    gpu.lock             every side's GPU lock: one case of one side on the GPU at a time
    <side>/cases         the case ids the side runs, one per line (written as its harness starts)
    <side>/<case id>     how far the side's case has come: "<benchmark> <rounds done>"
    <side>/<case id>.done    the case's process has ended, however it ended
    <side>/end           the side's harness has ended (its runner writes it, and the host after it)

Side i takes round r of its case's benchmark b once every side before it has done round r of
it and every side after it round r - 1 (before round 0: the last of benchmark b - 1), or has
passed it, ended the case, does not run it, or has ended. A case waits without holding the GPU
(the lock is given up and taken again), so the other side's same case can take its round.
Waiting ends for good for a case when no side it waits for has moved for STALL_S, or when it
has waited half its timeout: its rounds then go on alone, and the benchmark says so
(`interleave.alone`). Every side's cases start in the same order (the plan's), so the case a
side waits for is running on the other side, or starts once one of that side's running cases,
which are the ones this side has started too, is done: no side waits on a cycle.

Standard library only, Python >= 3.9: it runs in every stack.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
import time

ENV_FOLDER, ENV_SIDE, ENV_SIDES = "REPROKIT_TURNS", "REPROKIT_TURN_SIDE", "REPROKIT_TURN_SIDES"
POLL_S = 0.002
STALL_S = 60.0


def _first_in_line(path: str) -> bool:
    """Whether a case asked to take the GPU first (a file in `<lock>.first/` its process holds a
    shared flock on): one whose work after the GPU is long, so that it overlaps the others'. A
    file no one holds was left by a process killed while it waited: removed, not waited for.
    (A flock, not a pid: the sides may be containers, each with its own pids.)"""
    folder = f"{path}.first"
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    for name in names:
        if name.startswith("."):
            continue  # being made: shown once its process holds it
        try:
            fd = os.open(os.path.join(folder, name), os.O_RDWR)
        except OSError:
            continue  # served and gone meanwhile
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
        try:
            os.unlink(os.path.join(folder, name))
        except OSError:
            pass
    return False


def take_gpu(fd: int, path: str, first: bool = False) -> None:
    """The GPU lock on `fd` (the file at `path`), blocking. `first`: ahead of every case that
    waits without asking to (an Inductor case: seconds of disassembly follow its turn, which
    then overlap the benchmarks instead of coming after them all). flock itself keeps no order,
    so the others try without blocking, and stand back while someone asked to go first."""
    if first:
        folder = f"{path}.first"
        os.makedirs(folder, exist_ok=True)
        fd_m, tmp = tempfile.mkstemp(dir=folder, prefix=".")
        try:
            fcntl.flock(fd_m, fcntl.LOCK_SH)  # held until served: a dead process's file is seen for one
            marker = os.path.join(folder, os.path.basename(tmp)[1:])
            os.rename(tmp, marker)  # shown only once held
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
            finally:
                os.unlink(marker)
        finally:
            os.close(fd_m)
        return
    while True:
        if not _first_in_line(path):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
        time.sleep(POLL_S)


class GpuLock:
    """The GPU: an exclusive lock on REPROKIT_GPU_LOCK (none where it is unset), for a block
    (`with`) or from `take()` to `give()` (an Inductor case takes it from its autotuning on);
    `first`: ahead of the cases waiting without asking to (take_gpu). `waited` and `held` are
    the seconds spent waiting for it and holding it. `GpuLock.current` is the one this process
    holds, which a turn gives up while it waits."""

    current: GpuLock | None = None

    def __init__(self, first: bool = False):
        self.path = os.environ.get("REPROKIT_GPU_LOCK")
        self.first = first
        self.fd: int | None = None
        self.waited = self.held = 0.0
        self._since = 0.0

    def take(self) -> None:
        """Wait for the GPU and hold it; taken once, it stays held until give()."""
        GpuLock.current = self
        if self.fd is not None or not self.path:
            return
        t0 = time.perf_counter()
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        take_gpu(fd, self.path, self.first)
        self.fd, self._since = fd, time.perf_counter()
        self.waited += self._since - t0

    def give(self) -> None:
        if GpuLock.current is self:
            GpuLock.current = None
        if self.fd is not None:
            os.close(self.fd)  # closing releases the lock
            self.fd = None
            self.held += time.perf_counter() - self._since

    def give_up(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)

    def take_again(self) -> None:
        if self.fd is not None and self.path:
            take_gpu(self.fd, self.path)

    def __enter__(self):
        self.take()
        return self

    def __exit__(self, *exc):
        self.give()
        return False


def seat():
    """(folder, side, sides) where this harness shares the GPU with other stacks' in turns, else None."""
    folder = os.environ.get(ENV_FOLDER)
    try:
        side, sides = int(os.environ.get(ENV_SIDE, "")), int(os.environ.get(ENV_SIDES, ""))
    except ValueError:
        return None
    if not folder or not os.path.isdir(folder) or sides < 2 or not 0 <= side < sides:
        return None
    return folder, side, sides


def _write(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, path)  # a reader sees the old line or the new one, never half of one


def start_side(case_ids) -> None:
    """The runner, as it starts: which cases this side runs."""
    s = seat()
    if s:
        folder, side, _ = s
        os.makedirs(os.path.join(folder, str(side)), exist_ok=True)
        _write(os.path.join(folder, str(side), "cases"), "".join(f"{c}\n" for c in case_ids))


def end_case(case_id: str) -> None:
    """The runner, once a case's process has ended (a crash, a timeout, anything)."""
    s = seat()
    if s:
        _write(os.path.join(s[0], str(s[1]), f"{case_id}.done"), "")


def end_side(folder: str, side: int) -> None:
    """The harness has ended: no side waits for it again (the runner, and the host after it)."""
    os.makedirs(os.path.join(folder, str(side)), exist_ok=True)
    _write(os.path.join(folder, str(side), "end"), "")


class Turns:
    """One case's rounds in turn with the other sides' same case. `Turns.of(case_id, timeout_s)`
    is None where this harness takes no turns. `round(b, r, rounds)` is the block that takes
    round r of the case's b-th benchmark (a context manager); `record(b)` what it records."""

    def __init__(self, folder: str, side: int, sides: int, case_id: str, budget_s: float):
        self.folder, self.side, self.sides, self.case_id = folder, side, sides, case_id
        self.deadline = time.monotonic() + budget_s
        self.waited: dict[int, list] = {}  # benchmark -> [times it waited, seconds]
        self.rounds = 0  # rounds per benchmark (the budget's)
        # [benchmark, round, when it began]: CLOCK_MONOTONIC seconds, one clock for every process
        # of the host, so the sides' records together show the order the rounds ran in
        self.began: list = []
        self.alone: str | None = None  # why this case's rounds went on without waiting, once they did
        self._runs: dict[int, bool] = {}  # side -> whether it runs this case (read once its list is there)

    @classmethod
    def of(cls, case_id: str, timeout_s: float):
        s = seat()
        return cls(s[0], s[1], s[2], case_id, timeout_s / 2) if s else None

    def _path(self, side: int, name: str) -> str:
        return os.path.join(self.folder, str(side), name)

    def _runs_case(self, side: int):
        if side not in self._runs:
            try:
                with open(self._path(side, "cases")) as f:
                    self._runs[side] = self.case_id in f.read().split("\n")
            except OSError:
                return None  # not started yet: it may
        return self._runs[side]

    def _state(self, side: int):
        """("passed", None) when the side will never be waited for in this case again, else
        ("at", (benchmark, rounds done)) or ("at", None) before it has begun the case's rounds."""
        if os.path.exists(self._path(side, "end")) or os.path.exists(self._path(side, f"{self.case_id}.done")):
            return "passed", None
        if self._runs_case(side) is False:
            return "passed", None
        try:
            with open(self._path(side, self.case_id)) as f:
                b, r = f.read().split()
            return "at", (int(b), int(r))
        except (OSError, ValueError):
            return "at", None

    def _ready(self, bench: int, r: int):
        """(ready, what the sides waited for are at now)."""
        seen = []
        ok = True
        for j in range(self.sides):
            if j == self.side or (j > self.side and r == 0 and bench == 0):
                continue
            kind, at = self._state(j)
            seen.append((j, kind, at))
            # after this side's round r - 1, the later sides' (the first round of a benchmark:
            # after their last of the one before, so that no side runs ahead to the next size)
            need = (bench, r + 1) if j < self.side else (bench, r) if r else (bench - 1, self.rounds)
            if kind == "at" and (at is None or at < need):
                ok = False
        return ok, seen

    def _wait(self, bench: int, r: int) -> bool:
        """Wait for the turn; True when it waited (the GPU was given up meanwhile)."""
        if self.alone is not None:
            return False
        ready, seen = self._ready(bench, r)
        if ready:
            return False
        lock = GpuLock.current
        if lock is not None:
            lock.give_up()
        t0 = moved = time.monotonic()
        try:
            while True:
                time.sleep(POLL_S)
                ready, now = self._ready(bench, r)
                if ready:
                    break
                t = time.monotonic()
                if now != seen:
                    seen, moved = now, t
                if t - moved > STALL_S:
                    self.alone = f"no other side moved for {STALL_S:g} s (at benchmark {bench}, round {r})"
                    break
                if t > self.deadline:
                    self.alone = f"waited half the case's timeout for the other sides (at benchmark {bench}, round {r})"
                    break
        finally:
            w = self.waited.setdefault(bench, [0, 0.0])
            w[0], w[1] = w[0] + 1, w[1] + time.monotonic() - t0
            if lock is not None:
                lock.take_again()
        return True

    def round(self, bench: int, r: int, rounds: int):
        """Round r of the case's bench-th benchmark, of `rounds`."""
        self.rounds = rounds
        return _Round(self, bench, r)

    def done(self, bench: int, rounds: int) -> None:
        _write(self._path(self.side, self.case_id), f"{bench} {rounds}")

    def record(self, bench: int) -> dict:
        """What the case's bench-th benchmark records: its side, how often and how long its rounds
        waited, whether the case's rounds went on alone (and why), and when each round began."""
        waits, waited_s = self.waited.get(bench, (0, 0.0))
        return {"sides": self.sides, "side": self.side, "waits": waits, "waited_s": round(waited_s, 3),
                "alone": self.alone, "began": [[r, t] for b, r, t in self.began if b == bench]}


class _Round:
    """The block of one round: enter waits for the turn (`waited` says whether the GPU was given
    up meanwhile: the caller warms its kernels again); a clean exit tells the other sides."""

    def __init__(self, turns: Turns, bench: int, r: int):
        self.turns, self.bench, self.r, self.waited = turns, bench, r, False

    def __enter__(self):
        # Where this side is, before it waits: a side still at an earlier benchmark of the case
        # (one this side could not launch) then knows it is passed, and does not wait for it.
        self.turns.done(self.bench, self.r)
        self.waited = self.turns._wait(self.bench, self.r)
        self.turns.began.append([self.bench, self.r, round(time.monotonic(), 4)])
        return self

    def __exit__(self, *exc):
        self.turns.done(self.bench, self.r + 1)
        return False
