"""The one helper for running host subprocesses: echo, timeout, process-group kill, stderr tail."""

from __future__ import annotations

import os
import shlex
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable


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
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.PIPE if capture_stdout else subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
        text=True,
        errors="replace",
    )
    timed_out = False
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc.pid)
        out, err = proc.communicate()
    except BaseException:
        # Ctrl-C reaches only us (the child has its own session): take its whole group down too.
        _kill_group(proc.pid)
        proc.wait()
        raise
    if log_path is not None:
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(err or "")
    return ProcResult(tuple(argv), proc.returncode, timed_out, out or "", tail(err or ""))


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
