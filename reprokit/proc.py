"""The one helper for running host subprocesses: echo, timeout, stderr tail, and no survivors.

Each command runs in a session of its own. Whatever ends it (its own exit, a timeout, Ctrl-C,
SIGTERM), every process left in that session goes with it: the harness's case processes, the
compilers they started, pip's and ensurepip's children. And should reprokit itself be killed
outright (SIGKILL, the OOM killer), a lifeline does the same: a tiny watcher process holds the
read end of a pipe only reprokit writes to, and when that pipe closes without a word it kills
the session. (A session, not a process group: the harness puts each case in a group of its own.)
"""

from __future__ import annotations

import inspect
import os
import shlex
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

from reprokit.errors import FileSystemError


@dataclass(frozen=True)
class ProcResult:
    argv: tuple[str, ...]
    returncode: int
    timed_out: bool
    stdout: str
    stderr_tail: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.rstrip().splitlines()[-lines:])


def last_line(text: str) -> str:
    """The last thing a process said (usually why it failed), for a one-line error."""
    return (text.strip().splitlines() or ["no output"])[-1]


def run(
    argv: list[str],
    *,
    timeout: float | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    echo: Callable[[str], None] | None = None,
    capture_stdout: bool = True,
    log_path: Path | None = None,
) -> ProcResult:
    """Run argv in its own process group; on timeout kill the whole group.

    stderr is kept (its tail is returned; all of it goes to `log_path` when given); `echo`, when
    given, is told the command line first.
    """
    if echo is not None:
        echo("+ " + shlex.join(argv))
    return start(argv, env=env, cwd=cwd, capture_stdout=capture_stdout).finish(timeout=timeout, log_path=log_path)


def start(argv: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None,
          capture_stdout: bool = True, stdin: bool = False) -> Started:
    """argv started now in a session of its own, under a lifeline, to be finished (or called off)
    later: what run() is, split in two, for a process that loads while something else runs and
    is told the rest on its stdin (`stdin=True`: a pipe)."""
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else None,
            stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=cwd,
            start_new_session=True,
            text=True,
            errors="replace",
        )
    except OSError as e:  # the program is missing or may not be run here: the OS's refusal, one line
        raise FileSystemError.of(argv[0], e, "cannot run") from None
    return Started(tuple(argv), proc, _Lifeline(proc.pid))


class Started:
    """A process start() began: `finish()` waits for it as run() does, `cancel()` ends its session.
    Either ends it for good (its session killed, its lifeline released)."""

    def __init__(self, argv: tuple[str, ...], proc: subprocess.Popen[str], lifeline: _Lifeline):
        self.argv, self.proc, self.lifeline = argv, proc, lifeline

    def finish(self, stdin: str | None = None, *, timeout: float | None = None,
               log_path: Path | None = None) -> ProcResult:
        """Write `stdin` (then close it), wait up to `timeout`, kill what is left of the session."""
        proc = self.proc
        timed_out = False
        try:
            out, err = proc.communicate(input=stdin, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            kill_session(proc.pid)
            out, err = proc.communicate()
        except BaseException:
            # Ctrl-C reaches only us (the child has its own session): take its whole session down too.
            kill_session(proc.pid)
            proc.wait()
            raise
        finally:
            kill_session(proc.pid)  # what the command left running (a case process, a daemonised helper)
            self.lifeline.release()
        if log_path is not None:
            try:
                log_path.parent.mkdir(parents=True, exist_ok=True)
                log_path.write_text(err or "")
            except OSError as e:  # the output's fault (a full disk), not the command's
                raise FileSystemError.of(log_path, e, "cannot write") from None
        return ProcResult(self.argv, proc.returncode, timed_out, out or "", tail(err or ""))

    def cancel(self) -> None:
        """Not needed after all: its session killed, its pipes closed."""
        kill_session(self.proc.pid)
        self.proc.communicate()
        self.lifeline.release()


@contextmanager
def session(argv: list[str], **popen: Any) -> Iterator[subprocess.Popen]:
    """argv started in a session of its own under a lifeline, for a caller that talks to it as it
    runs (a traced program, whose output passes through): when the block ends, however it ends,
    and should reprokit be killed outright, every process left in the session is killed.
    OSError when it cannot be started (the caller says what that means)."""
    proc = subprocess.Popen(argv, start_new_session=True, **popen)
    lifeline = _Lifeline(proc.pid)
    try:
        yield proc
    finally:
        # Ctrl-C and SIGTERM reach only us (the child has its own session), and what the command
        # left running when it ended (a worker, a daemonised helper) is ours to end too
        kill_session(proc.pid)
        proc.wait()
        lifeline.release()


def _session(sid: int) -> list[int]:
    """Live processes of session `sid` (zombies are dead already)."""
    out: list[int] = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return out
    for p in names:
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[3]) == sid and fields[0] != b"Z":
            out.append(int(p))
    return out


# The watcher: reads one byte from stdin. b"x": reprokit finished with the session itself. EOF:
# reprokit died, so kill every process of the session (repeatedly, as some may be forking).
# It runs as `python -S -c`, apart from reprokit, and finds the session's members with the same
# _session() as kill_session().
_WATCHER = "import os, signal, sys, time\n" + inspect.getsource(_session) + r"""
sid = int(sys.argv[1])
try:
    said = os.read(0, 1)
except OSError:
    said = b""
if not said:
    for _ in range(100):
        ps = _session(sid)
        if not ps:
            break
        for p in ps:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.02)
"""


class _Lifeline:
    """The watcher process for one session (see the module docstring); Linux only, else a no-op."""

    def __init__(self, sid: int):
        self.proc: subprocess.Popen[bytes] | None = None
        self.fd: int | None = None  # set only with proc: the write end of the watcher's stdin
        if not os.path.isdir("/proc"):
            return
        r, w = os.pipe()  # both ends close-on-exec: the command never holds the write end
        try:
            self.proc = subprocess.Popen([sys.executable, "-S", "-c", _WATCHER, str(sid)], stdin=r,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                         start_new_session=True)
            self.fd = w
        except OSError:
            os.close(w)
        finally:
            os.close(r)

    def release(self) -> None:
        if self.fd is None:
            return
        try:
            os.write(self.fd, b"x")
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        if self.proc is not None:
            self.proc.wait()


def kill_session(sid: int) -> None:
    """SIGKILL every process of session `sid` (its process group first, where /proc is missing)."""
    try:
        os.killpg(sid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for _ in range(100):
        members = _session(sid)
        if not members:
            return
        for p in members:
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.01)
