"""Watching a reprokit process from outside, for the fault tests and `make bench-faults`: start it
with a marker in its environment (every descendant inherits it), signal it, then find what it
left: processes that still carry the marker (orphans) and files that only a half-done run makes."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

from reprokit import locks

ROOT = Path(__file__).resolve().parents[2]
MARK = "REPROKIT_FAULT_MARK"
# Names only a half-done run leaves: ours (reprokit-<pid>-<hex>), older reprokit temp folders,
# NVIDIA's compiler temp files, and anything called *.partial.
_HALF_DONE = re.compile(r"(\.partial$|^reprokit-(run|cases|replay|extract)-|^tmpxft|\.tmp-\d+$)")


class Watched:
    """One reprokit command, run as a real process in a session of its own."""

    def __init__(self, args: list, *, env: dict | None = None, cwd: Path = ROOT):
        self.mark = uuid.uuid4().hex
        self.env = {**os.environ, **(env or {}), MARK: self.mark, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen([sys.executable, "-m", "reprokit", *map(str, args)], cwd=cwd, env=self.env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        self.started = time.monotonic()

    def signal(self, signum: int) -> None:
        """Signal reprokit itself only, as `kill PID` does (its children hear nothing from us)."""
        try:
            os.kill(self.proc.pid, signum)
        except ProcessLookupError:
            pass

    def wait(self, timeout: float = 300) -> tuple[int, str, str]:
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, out, err

    def orphans(self, grace_s: float = 3.0) -> list[str]:
        """Processes still carrying this run's marker `grace_s` after it ended (zombies excluded)."""
        deadline = time.monotonic() + grace_s
        while True:
            found = marked(self.mark)
            if not found or time.monotonic() > deadline:
                return found
            time.sleep(0.1)


def marked(mark: str) -> list[str]:
    needle = f"{MARK}={mark}".encode()
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open(f"/proc/{p}/stat", "rb") as f:
                if f.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    continue
            with open(f"/proc/{p}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    with open(f"/proc/{p}/cmdline", "rb") as c:
                        cmd = c.read().replace(b"\0", b" ").decode(errors="replace")
                    out.append(f"{p}: {cmd[:120]}")
        except (OSError, IndexError):
            continue
    return out


def half_done(*folders: Path, ignore=()) -> list[str]:
    """What a half-done run left in these folders (not recursive): temp names, *.partial, stale
    locks; `ignore`: paths that are the user's own (made by the test to see they stay)."""
    out = []
    ignore = {str(p) for p in ignore}
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if locks.is_ours(name) or _HALF_DONE.search(name):
                out.append(str(Path(folder) / name))
            elif name.startswith(".") and name.endswith(".lock"):
                try:
                    if (Path(folder) / name).read_text().startswith("reprokit-lock"):
                        out.append(str(Path(folder) / name))
                except OSError:
                    pass
    return sorted(p for p in out if p not in ignore)


def wait_for(pred, timeout: float = 60.0, step: float = 0.05) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(step)
    return False


SIGNALS = {"SIGINT": signal.SIGINT, "SIGTERM": signal.SIGTERM, "SIGHUP": signal.SIGHUP, "SIGKILL": signal.SIGKILL}
