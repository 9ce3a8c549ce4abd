"""One writer per output, and what a killed writer left behind.

Locks: `hold(target)` takes an flock on `.<name>.lock` beside `target` (a capture folder, a
bundle file, a sweep point, a venv), so a second writer is told at once (OutputBusy, exit 2)
instead of mixing its files with the first's. The kernel drops an flock when its holder dies,
however it dies, so "can I take the lock?" also answers "is its owner dead?". Lock files are
removed on release; a taker checks that the file it locked is still the one under the name.

Temporary things (a capture written aside, a bundle being packed, a per-run scratch folder, a
half-built venv) get names no user picks by accident, `<stem>.reprokit-<pid>-<8 hex>.<kind>`,
and each is covered by its own lock while its owner lives. `sweep(folder)` removes those whose
owner is dead, and only those: nothing without that token in its name is ever touched.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import secrets
import shutil
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from reprokit.errors import FileSystemError, OutputBusy

_MARK = "reprokit-lock"
_TOKEN = re.compile(r"\.?reprokit-(\d+)-([0-9a-f]{8})\b")


def lock_file(target: Path) -> Path:
    target = Path(target)
    return target.parent / f".{target.name}.lock"


@dataclass
class Lock:
    """A held lock; release() (or the end of `hold`) removes its file and lets go."""

    path: Path
    fd: int | None

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.close(self.fd)
        self.fd = None


def _owner(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "another reprokit"
    m = re.search(r"pid=(\d+)", text)
    return f"another reprokit (pid {m.group(1)})" if m else "another reprokit"


def try_acquire(target: Path, what: str = "") -> Lock | None:
    """The lock on `target`, or None when a live process holds it. FileSystemError when the
    lock file cannot be made (a read-only or missing folder): the output could not be written either."""
    path = lock_file(target)
    while True:
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as e:
            # Name the folder: the lock file is ours, the folder is what the user chose.
            raise FileSystemError(f"{path.parent}: cannot write {what or Path(target).name} here: "
                                  f"{e.strerror or e}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise FileSystemError.of(path, e, "cannot lock") from None
        # The previous holder may have removed the file between our open and our flock.
        st = os.fstat(fd)
        try:
            cur = os.stat(path)
        except FileNotFoundError:
            cur = None
        if cur is None or (cur.st_dev, cur.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            continue
        os.ftruncate(fd, 0)
        os.write(fd, f"{_MARK} pid={os.getpid()} {what}\n".encode())
        return Lock(path, fd)


def acquire(target: Path, what: str = "") -> Lock:
    """The lock on `target`; OutputBusy (one line, exit 2) when another writer holds it."""
    lock = try_acquire(target, what)
    if lock is None:
        raise OutputBusy(f"{target}: {_owner(lock_file(target))} is writing it now; "
                         "wait for it to finish or choose another output")
    return lock


@contextmanager
def hold(target: Path, what: str = "") -> Iterator[Lock]:
    lock = acquire(target, what)
    try:
        yield lock
    finally:
        lock.release()


def owner_alive(item: Path) -> bool:
    """Whether a live process holds the lock that covers `item` (False when none does)."""
    lock = try_acquire(item)
    if lock is None:
        return True
    lock.release()
    return False


def temp_name(stem: str, kind: str) -> str:
    """`<stem>.reprokit-<pid>-<8 hex>.<kind>`: a name sweep() can tell for ours."""
    return f"{stem}.reprokit-{os.getpid()}-{secrets.token_hex(4)}.{kind}"


@dataclass
class Temp:
    """A temporary file or folder of ours, covered by its own lock until finish() or discard()."""

    path: Path
    lock: Lock

    def discard(self) -> None:
        """Remove it (whatever of it exists) and its lock."""
        _remove(self.path)
        self.lock.release()

    def finish(self, final: Path) -> None:
        """Rename it to `final` (same folder, so atomic), then drop its lock."""
        os.replace(self.path, final)
        self.lock.release()


def make_temp(folder: Path, stem: str, kind: str, *, is_dir: bool) -> Temp:
    """A fresh temporary file (empty) or folder in `folder`, locked before it exists."""
    folder = Path(folder)
    path = folder / temp_name(stem, kind)
    lock = acquire(path, "temporary")
    try:
        if is_dir:
            path.mkdir()
        else:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644))
    except OSError as e:
        lock.release()
        raise FileSystemError.of(path, e, "cannot create") from None
    return Temp(path, lock)


@contextmanager
def temp(folder: Path, stem: str, kind: str, *, is_dir: bool) -> Iterator[Temp]:
    """make_temp() removed at the end unless finish()ed."""
    t = make_temp(folder, stem, kind, is_dir=is_dir)
    try:
        yield t
    finally:
        if t.lock.fd is not None:
            t.discard()


@contextmanager
def scratch(root: Path, stem: str) -> Iterator[Path]:
    """A temporary folder under `root` (the system temp folder, HostEnv.tmp), named so that the
    next run's sweep() removes it should this process be killed outright (tempfile's names are
    not ours to remove)."""
    with temp(Path(root), f"reprokit-{stem}", "tmp", is_dir=True) as t:
        yield t.path


def check_writable(folder: Path, what: str) -> None:
    """FileSystemError now, not after the suite, when `folder` cannot take a file (read-only,
    no permission, not a folder)."""
    with temp(Path(folder), ".reprokit-probe", what, is_dir=False):
        pass


@contextmanager
def run_scratch(root: Path, prefix: str = "run") -> Iterator[Path]:
    """One per-run folder under `root` (the system temp folder, HostEnv.tmp) for every temporary
    thing of this run; what dead runs left there goes first. The caller hands it to the processes
    it starts as their TMPDIR (the harness's, the compilers', pip's): this process's own
    environment and tempfile's default stay as they are."""
    root = Path(root)
    sweep(root)
    with temp(root, f"reprokit-{prefix}", "tmp", is_dir=True) as t:
        yield t.path


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink()
    except FileNotFoundError:
        pass


def is_ours(name: str) -> bool:
    return bool(_TOKEN.search(name))


def sweep(folder: Path) -> list[Path]:
    """Remove, from `folder` only, the temporary things of dead owners, and their stale locks.

    Returns what was removed. Names without the token of temp_name() are never touched, and
    neither is anything whose owner still holds its lock.
    """
    folder = Path(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        if not is_ours(name) or (name.startswith(".") and name.endswith(".lock")):
            continue
        item = folder / name
        lock = try_acquire(item) if os.access(folder, os.W_OK) else None
        if lock is None:
            continue  # alive, or a folder we may not clean
        try:
            _remove(item)
            removed.append(item)
        finally:
            lock.release()
    for name in sorted(names):
        if not (name.startswith(".") and name.endswith(".lock")):
            continue
        path = folder / name
        target = folder / name[1:-len(".lock")]
        if target.exists() and is_ours(target.name):
            continue
        try:
            if not path.read_text(errors="replace").startswith(_MARK):
                continue  # not one of ours
        except OSError:
            continue
        lock = try_acquire(target) if os.access(folder, os.W_OK) else None
        if lock is not None:
            lock.release()
            removed.append(path)
    return removed
