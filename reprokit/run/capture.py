"""One capture: plan the suite for a GPU profile, run the harness in a stack, collect the folder.

One writer per folder: the capture holds a lock beside `out_dir` (reprokit.locks) from before
the suite starts until the folder is in place, so a second capture into it stops at once. The
run is written aside, in a temporary folder of its own, and renamed into place only when the
harness finished; with force, the old folder is swapped out only then (one atomic exchange),
so an interrupt at any moment leaves either the old capture or the new one. A failed run is
kept beside it as `<name>.failed` (or `.failed-2`, ...: an existing one is never replaced) with
its logs. Its temporary files (the harness's, the compilers') live in one per-run folder.

A capture folder carries reprokit's marker (locks.MARKER, kind "capture") from its first moment;
--force replaces only a folder with that marker, and never the current folder, one of its
ancestors, / or HOME.
"""

from __future__ import annotations

import ctypes
import dataclasses
import errno
import os
import shutil
from pathlib import Path

from reprokit import locks
from reprokit.config import Stack
from reprokit.errors import FileSystemError, OutputExists
from reprokit.executors import Executor
from reprokit.options import RunOptions
from reprokit.plan import Plan
from reprokit.run.execute import Capture, execute, stage
from reprokit.suite import kernels_dir

CAPTURE = "capture"  # the marker kind of a capture folder (reprokit.locks.mark)
ONE_WORKER = RunOptions()


def refuse_out(out_dir: Path, force: bool, home: str | None) -> None:
    """The checks capture() makes of out_dir before anything runs, for a verb to make at its
    door, so that a refused folder is the one line said (before any notice about the GPU)."""
    locks.check_replaceable_path(out_dir, CAPTURE, home)
    locks.check_replaceable_folder(Path(out_dir).absolute(), CAPTURE, force)


def capture(stack: Stack, executor: Executor, out_dir: Path, plan: Plan, options: RunOptions = ONE_WORKER, *,
            failed_as: Path | None = None) -> Capture:
    """Run `plan` in `stack` and leave a capture folder at out_dir. A failed run is kept beside
    `failed_as` (default out_dir) as `<name>.failed[-N]`."""
    home = executor.host.environ.get("HOME")
    locks.check_replaceable_path(out_dir, "capture", home)
    out_dir = Path(out_dir).absolute()
    try:
        out_dir.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(out_dir.parent, e, "cannot create the capture's folder") from None
    # Checked before anything runs: the folder is writable (the lock is made in it), and ours alone.
    with locks.hold(out_dir, "capture"):
        replace = locks.check_replaceable_folder(out_dir, CAPTURE, options.force)
        locks.sweep(out_dir.parent)
        with locks.temp(out_dir.parent, f".{out_dir.name}", "partial", is_dir=True) as work:
            cap = _run(stack, executor, out_dir, work.path, plan, options,
                       Path(failed_as).absolute() if failed_as else out_dir)
            # The marker now lists what the finished capture holds: a later --force can tell additions.
            locks.mark(work.path, CAPTURE, os.listdir(work.path))
            _put_in_place(work, out_dir, replace)
        return cap


def _run(stack: Stack, executor: Executor, out_dir: Path, work: Path, plan: Plan, options: RunOptions,
         failed_as: Path) -> Capture:
    # The plan names the stack it now runs on (a replayed plan its new one), and runs as one pass
    # over this fresh folder (a replayed sweep's plan is resumable where it was made).
    plan = plan.for_stack(stack.pins()).one_pass()
    stage(work, plan, Path(plan.kernels or kernels_dir()), CAPTURE)
    if plan.tensors is not None:  # the harness launches a traced call from them (harness.kinds.callgpu)
        try:
            shutil.copytree(plan.tensors, work / "trace" / "tensors")
        except OSError as e:
            raise FileSystemError.of(work, e, "cannot write") from None
    cap = execute(plan, stack, executor, work, options, failed=lambda: f"logs in {keep_failed(work, failed_as)}",
                  scratch_name="capture")
    return dataclasses.replace(cap, out_dir=out_dir)


def keep_failed(work: Path, out_dir: Path) -> Path:
    """Move a failed run's folder to the first free `<name>.failed[-N]`; never over anything."""
    for n in range(1, 1000):
        failed = out_dir.with_name(out_dir.name + (".failed" if n == 1 else f".failed-{n}"))
        if failed.exists() or failed.is_symlink():
            continue
        try:
            os.mkdir(failed)  # claim the name; a rename over this empty folder then replaces only it
        except FileExistsError:
            continue
        except OSError as e:
            raise FileSystemError.of(failed, e, "cannot keep the failed run") from None
        os.rename(work, failed)
        return failed
    return work


_RENAME_EXCHANGE = 2
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths atomically (Linux renameat2 RENAME_EXCHANGE); False where unsupported."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise FileSystemError.of(b, OSError(err, os.strerror(err)), "cannot replace")


def _put_in_place(work: locks.Temp, out_dir: Path, replace: bool) -> None:
    """The finished capture takes out_dir's place. With `replace`, the old capture and the new one
    swap in one step and the old one leaves with the temporary folder; else it is a plain rename
    (over an empty folder at most). Either way an interrupt leaves one whole capture there."""
    try:
        if replace and _exchange(work.path, out_dir):
            return  # work.path now holds the old capture: discarded with the temporary folder
        if replace:  # no atomic exchange here: the old one is moved aside only now, the new one follows
            with locks.temp(out_dir.parent, f".{out_dir.name}", "old", is_dir=False) as old:
                os.unlink(old.path)
                os.rename(out_dir, old.path)
                os.rename(work.path, out_dir)
            return
        os.rename(work.path, out_dir)
    except OSError as e:
        if e.errno in (errno.ENOTEMPTY, errno.EEXIST):
            raise OutputExists(f"{out_dir} was filled by someone else while the capture ran; the new capture "
                               "was not put there") from None
        raise FileSystemError.of(out_dir, e, "cannot put the capture in place") from None
