"""The `local` executor: the harness runs under this very interpreter and its Triton.

It may be prestarted: the harness process loads Triton, its warm-up and torch at once and waits
for its run (`python -m reprokit.harness --prestart`), so that a trace's capture does not pay for
them after the program has ended. The run then reaches it on its stdin; an executor closed
without a run calls it off.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reprokit import proc
from reprokit.config import Stack
from reprokit.errors import ExecutorError, FileSystemError
from reprokit.executors.base import Executor, RunResult, harness_args, harness_argv, harness_env, prestart_argv
from reprokit.options import HostEnv


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, python: str | None = None, *, host: HostEnv | None = None):
        self.python = python or sys.executable
        self.host = host or HostEnv()
        self._started: proc.Started | None = None

    def prestart(self, capability: int) -> None:
        """Start the harness now, loading what its run will need for a GPU of this capability;
        the next run_harness hands it its run. OSError-free: a harness that cannot start says so
        when the run comes (as an unstarted one would)."""
        if self._started is None:
            try:
                self._started = proc.start(prestart_argv(self.python, capability), env=harness_env(self.host),
                                           capture_stdout=False, stdin=True)
            except FileSystemError:
                self._started = None

    def prepare(self, stack: Stack) -> dict:
        return {"python": self.python}

    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None) -> RunResult:
        started, self._started = self._started, None
        return run_python_harness(self, self.python, capture_dir, workers=workers, timeout_s=timeout_s,
                                  scratch=scratch, started=started)

    def close(self) -> None:
        started, self._started = self._started, None
        if started is not None:
            started.cancel()


def run_python_harness(executor: Executor, python: str, capture_dir: Path, *, workers: int,
                       timeout_s: float, scratch: Path | None = None, started: proc.Started | None = None) -> RunResult:
    """Run the harness as a host subprocess of `python` (shared by the local and venv executors),
    or hand the run to `started`, a harness of that python prestarted (LocalExecutor.prestart)."""
    capture_dir = Path(capture_dir)
    where = (str(capture_dir / "plan.json"), str(capture_dir / "kernels"), str(capture_dir), workers)
    extra = {"TMPDIR": str(scratch)} if scratch else {}
    log = capture_dir / "logs" / "executor.log"
    if started is not None:
        r = started.finish(json.dumps({"argv": harness_args(*where), "env": extra}) + "\n", timeout=timeout_s,
                           log_path=log)
    else:
        try:
            r = proc.run(harness_argv(python, *where), timeout=timeout_s, env=harness_env(executor.host, extra or None),
                         capture_stdout=False, log_path=log)
        except OSError as e:
            raise ExecutorError(f"{executor.name}: cannot start {python}: {e.strerror}") from None
    return RunResult(executor=executor.name, returncode=r.returncode, timed_out=r.timed_out, log_tail=r.stderr_tail,
                     runtime={"python": python})
