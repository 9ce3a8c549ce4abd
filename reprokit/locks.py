"""One writer per output, and what a killed writer left behind.

Locks: `hold(target)` takes an flock on `.<name>.lock` beside `target` (a capture folder, a
bundle file, a sweep point, a venv), so a second writer is told at once (OutputBusy, exit 2)
instead of mixing its files with the first's. The kernel drops an flock when its holder dies,
however it dies, so "can I take the lock?" also answers "is its owner dead?". A lock file is
made exclusively (O_EXCL) and starts with our mark; an existing file under that name is used
only when it carries the mark, else it is the user's and the writer is refused (OutputExists),
the file untouched: never truncated, never removed. Lock files are removed on release; a taker
checks that the file it locked is still the one under the name.

Temporary things (a capture written aside, a bundle being packed, a per-run scratch folder, a
half-built venv) get names no user picks by accident, exactly `<stem>.reprokit-<pid>-<8 hex>.<kind>`
with one of KINDS, and each is covered by its own marked lock while its owner lives.
`sweep(folder)` removes, from that folder only, those whose owner is dead: the whole name must
have that shape and its lock file must carry our mark, so a user's `paper-reprokit-12-deadbeef.md`
or `reprokit-2025-0badf00d-notes/` is never touched.

Output folders that reprokit may later replace or write into (a capture, a sweep's work folder)
carry a marker file of their own, MARKER, naming their kind; `marked(folder, kind)` is the only
test a replacing writer trusts.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import secrets
import shutil
import signal
import stat
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from reprokit.errors import FileSystemError, OutputBusy, OutputExists

_MARK = "reprokit-lock"
# Every kind of temporary thing reprokit makes; a name with any other ending is not ours.
KINDS = ("partial", "old", "tmp", "owner", "probe", "run")
_TEMP = re.compile(r"(?P<stem>.+)\.reprokit-(?P<pid>\d+)-(?P<hex>[0-9a-f]{8})\.(?P<kind>"
                   + "|".join(KINDS) + ")")
# The marker file of an output folder reprokit made (and so may replace): {"made_by": "reprokit", "kind": ...}.
MARKER = ".reprokit-output.json"


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
        with held_signals():
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            os.close(self.fd)
            self.fd = None


# Ctrl-C, SIGTERM and SIGHUP raise in the middle of whatever runs (reprokit.errors.Interrupted);
# while a temp and its lock come or go, they wait, so that a temp never outlives its lock file
# (sweep() would then never know it for ours) and a lock never outlives a clean exit.
_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}


@contextmanager
def held_signals() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP held back until the block ends (then delivered, as they came)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals reach Python in the main thread only
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _owner(path: Path) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return "another reprokit"
    m = re.search(r"pid=(\d+)", text)
    return f"another reprokit (pid {m.group(1)})" if m else "another reprokit"


def _marked(fd: int) -> bool | None:
    """True when the open lock file starts with our mark, False when it holds anything else,
    None when it is empty (a creator between its O_EXCL open and its write, or not ours)."""
    head = os.pread(fd, len(_MARK), 0)
    if not head:
        return None
    return head == _MARK.encode()


def _not_ours(path: Path) -> OutputExists:
    return OutputExists(f"{path} is not a reprokit lock file, so the output beside it is not written "
                        "(it was left as it is; move it away if it is not yours)")


def try_acquire(target: Path, what: str = "") -> Lock | None:
    """The lock on `target`, or None when a live process holds it. FileSystemError when the
    lock file cannot be made (a read-only or missing folder): the output could not be written either.
    OutputExists when a file that is not one of our lock files holds the name."""
    path = lock_file(target)
    empty_seen = 0
    while True:
        created = True
        try:
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
        except FileExistsError:
            created = False
            try:
                fd = os.open(path, os.O_RDWR | os.O_CLOEXEC | os.O_NOFOLLOW)
            except FileNotFoundError:
                continue  # its holder released it just now: make it ours
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO):
                    raise _not_ours(path) from None
                raise FileSystemError.of(path, e, "cannot open the lock") from None
        except OSError as e:
            # Name the folder: the lock file is ours, the folder is what the user chose.
            raise FileSystemError(f"{path.parent}: cannot write {what or Path(target).name} here: "
                                  f"{e.strerror or e}") from None
        try:
            if not created and not os.path.samestat(os.fstat(fd), os.stat(path)):
                os.close(fd)
                continue
            if not created and not _regular(fd):
                os.close(fd)
                raise _not_ours(path)
            # A file we just made is ours: wait the instant a sweeper may hold it to read it.
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if created else fcntl.LOCK_NB))
        except FileNotFoundError:
            os.close(fd)
            continue
        except OSError as e:
            os.close(fd)
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise FileSystemError.of(path, e, "cannot lock") from None
        if not created:
            mark = _marked(fd)
            if mark is None and empty_seen < 50:
                # Perhaps a creator between its O_EXCL open and its write: look again shortly.
                empty_seen += 1
                os.close(fd)
                time.sleep(0.01)
                continue
            if not mark:
                os.close(fd)
                raise _not_ours(path)
        # The previous holder may have removed the file between our open and our flock.
        st = os.fstat(fd)
        try:
            cur = os.stat(path)
        except FileNotFoundError:
            cur = None
        if cur is None or (cur.st_dev, cur.st_ino) != (st.st_dev, st.st_ino):
            os.close(fd)
            continue
        # Ours (just made, or marked by an earlier reprokit): say who holds it now.
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{_MARK} pid={os.getpid()} {what}\n".encode(), 0)
        return Lock(path, fd)


def _regular(fd: int) -> bool:
    return stat.S_ISREG(os.fstat(fd).st_mode)


def acquire(target: Path, what: str = "", shown: Path | None = None) -> Lock:
    """The lock on `target`; OutputBusy (one line, exit 2) when another writer holds it. The
    message names `shown` (default target): what the user chose, where the lock covers a folder."""
    lock = try_acquire(target, what)
    if lock is None:
        raise OutputBusy(f"{shown or target}: {_owner(lock_file(target))} is writing it now; "
                         "wait for it to finish or choose another output")
    return lock


@contextmanager
def hold(target: Path, what: str = "", shown: Path | None = None) -> Iterator[Lock]:
    lock = None
    try:
        with held_signals():  # a signal that comes now finds the lock taken, and released below
            lock = acquire(target, what, shown)
        yield lock
    finally:
        if lock is not None:
            lock.release()


def owner_alive(item: Path) -> bool:
    """Whether a live process holds the lock that covers `item` (False when none does)."""
    lock = try_acquire(item)
    if lock is None:
        return True
    # Let go, but leave the file: it is what tells sweep() that the dead owner's item is ours.
    if lock.fd is not None:  # a lock just taken holds its descriptor; only release() clears it
        os.close(lock.fd)
        lock.fd = None
    return False


def temp_name(stem: str, kind: str) -> str:
    """`<stem>.reprokit-<pid>-<8 hex>.<kind>`: a name sweep() can tell for ours."""
    if kind not in KINDS:
        raise ValueError(f"temp kind {kind!r} is not one of {KINDS}: sweep() would never remove it")
    return f"{stem}.reprokit-{os.getpid()}-{secrets.token_hex(4)}.{kind}"


@dataclass
class Temp:
    """A temporary file or folder of ours, covered by its own lock until finish() or discard()."""

    path: Path
    lock: Lock

    def discard(self) -> None:
        """Remove it (whatever of it exists) and its lock."""
        with held_signals():
            _remove(self.path)
            self.lock.release()

    def finish(self, final: Path) -> None:
        """Rename it to `final` (same folder, so atomic), then drop its lock."""
        with held_signals():
            os.replace(self.path, final)
            self.lock.release()


def make_temp(folder: Path, stem: str, kind: str, *, is_dir: bool) -> Temp:
    """A fresh temporary file (empty) or folder in `folder`, locked before it exists."""
    folder = Path(folder)
    path = folder / temp_name(stem, kind)
    with held_signals():
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
    t = None
    try:
        with held_signals():  # a signal that comes now finds `t` set, and it is removed below
            t = make_temp(folder, stem, kind, is_dir=is_dir)
        yield t
    finally:
        if t is not None and t.lock.fd is not None:
            t.discard()


@contextmanager
def scratch(root: Path, stem: str) -> Iterator[Path]:
    """A temporary folder under `root` (the system temp folder, HostEnv.tmp), named so that the
    next run's sweep() removes it should this process be killed outright (tempfile's names are
    not ours to remove); what dead runs left there goes first."""
    root = Path(root)
    sweep(root)
    with temp(root, f"reprokit-{stem}", "tmp", is_dir=True) as t:
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
    """Whether `name` has, whole, the shape temp_name() makes (any stem, one of KINDS)."""
    return _TEMP.fullmatch(name) is not None


def _lock_is_ours(path: Path) -> bool:
    """Whether `path` is a regular file that starts with our lock mark (read, never opened for writing)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW)
    except OSError:
        return False
    try:
        return _regular(fd) and bool(_marked(fd))
    finally:
        os.close(fd)


def sweep(folder: Path) -> list[Path]:
    """Remove, from `folder` only, the temporary things of dead owners, and their stale locks.

    Returns what was removed. A thing is removed only when its whole name has the shape
    temp_name() makes and its lock file beside it carries our mark (a temp is locked before it
    exists, and a killed owner leaves its lock file behind), and no live process holds that lock.
    A stale lock file is removed only when it carries our mark and what it covered is gone.
    """
    folder = Path(folder)
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    writable = os.access(folder, os.W_OK)
    removed = []
    for name in sorted(names):
        if not is_ours(name) or not _lock_is_ours(lock_file(folder / name)):
            continue
        item = folder / name
        try:
            lock = try_acquire(item) if writable else None
        except (OutputExists, FileSystemError):
            continue
        if lock is None:
            continue  # alive, or a folder we may not clean
        try:
            _remove(item)
            removed.append(item)
        finally:
            lock.release()
    for name in sorted(names):
        if not (name.startswith(".") and name.endswith(".lock")) or len(name) <= len("..lock"):
            continue
        path = folder / name
        target = folder / name[1:-len(".lock")]
        if target.exists() or target.is_symlink() or not _lock_is_ours(path):
            continue  # what it covers is there (a capture, a bundle: its owner releases it), or not ours
        try:
            lock = try_acquire(target) if writable else None
        except (OutputExists, FileSystemError):
            continue
        if lock is not None:
            lock.release()
            removed.append(path)
    return removed


def mark(folder: Path, kind: str, names: list[str] | None = None) -> None:
    """Say, inside `folder`, that reprokit made it as a `kind` ("capture", "sweep-work"); `names`:
    the top-level entries it holds once finished, so that a replacer can tell what was added since."""
    path = Path(folder) / MARKER
    doc: dict = {"made_by": "reprokit", "kind": kind}
    if names is not None:
        doc["names"] = sorted(n for n in names if n != MARKER)
    try:
        path.write_text(json.dumps(doc, sort_keys=True) + "\n")
    except OSError as e:
        raise FileSystemError.of(path, e, "cannot write") from None


def marker(folder: Path) -> dict | None:
    """The marker document of a real folder (not a link) that reprokit made, or None."""
    folder = Path(folder)
    if folder.is_symlink() or not folder.is_dir():
        return None
    try:
        doc = json.loads((folder / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) and doc.get("made_by") == "reprokit" else None


def marked(folder: Path, kind: str) -> bool:
    """Whether `folder` is a real folder (not a link) that reprokit made as a `kind`."""
    doc = marker(folder)
    return doc is not None and doc.get("kind") == kind


def added_since(folder: Path) -> list[str]:
    """Top-level entries of a marked folder that were not there when reprokit finished it (a
    user's notes dropped into a capture): what replacing the folder would lose."""
    doc = marker(folder) or {}
    if not isinstance(doc.get("names"), list):
        return []
    known = set(doc["names"]) | {MARKER}
    return sorted(n for n in os.listdir(folder) if n not in known)


def check_replaceable_folder(folder: Path, kind: str, force: bool) -> bool:
    """Refuse (OutputExists, exit 2) a `folder` that is not a folder, or holds something a writer
    of `kind` may not replace: without force anything; with force anything but a folder reprokit
    made as that kind, or what was added to it since (its marker lists what it held). True when it
    holds such a folder, which the writer then replaces. (check_replaceable_path refuses the
    current folder, its ancestors, / and HOME.)"""
    folder = Path(folder)
    try:
        if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
            raise OutputExists(f"{folder} exists and is not a folder; a {kind} is a folder")
        if folder.exists() and any(folder.iterdir()):
            if not force:
                raise OutputExists(f"{folder} exists and is not empty (use --force to replace it)")
            if not marked(folder, kind):
                raise OutputExists(f"{folder} is not a {kind} reprokit made (no {MARKER} of kind "
                                   f"{kind!r} in it), so --force does not replace it; choose another --out")
            added = added_since(folder)
            if added:
                raise OutputExists(f"{folder} holds {', '.join(added[:3])}{' ...' if len(added) > 3 else ''}, "
                                   "which reprokit did not write there, so --force does not replace it; "
                                   "move those away or choose another --out")
            return True
    except OSError as e:
        raise FileSystemError.of(folder, e, "cannot read") from None
    return False


_PROTECTED_HELP = "choose a new or empty folder of its own"


def check_replaceable_path(path: Path, what: str, home: str | None = None) -> None:
    """Refuse (OutputExists, exit 2) an output folder whose replacement would take far more than
    reprokit made: the current folder (an empty --out is the current folder), an ancestor of it,
    the file system root, or `home` (the user's HOME, from HostEnv.environ)."""
    raw = str(path)
    p = Path(os.path.abspath(path))
    cwd = Path(os.path.abspath(os.getcwd()))
    why = None
    if raw in ("", ".") or p == cwd:
        why = "is the current folder"
    elif p == Path(p.anchor):
        why = "is the file system root"
    elif home and p in {Path(os.path.abspath(home)), Path(os.path.realpath(home))}:
        why = "is your home folder"
    elif p in cwd.parents or Path(os.path.realpath(p)) in Path(os.path.realpath(cwd)).parents \
            or Path(os.path.realpath(p)) == Path(os.path.realpath(cwd)):
        why = "holds the current folder"
    if why:
        raise OutputExists(f"{raw or repr(raw)}: refused as the {what} folder: it {why}; {_PROTECTED_HELP}")
