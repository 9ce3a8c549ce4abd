"""The `local` executor: the harness runs under this very interpreter and its Triton."""

from __future__ import annotations

import sys
from pathlib import Path

from reprokit import proc
from reprokit.config import Stack
from reprokit.errors import ExecutorError
from reprokit.executors.base import Executor, RunResult, harness_argv, harness_env
from reprokit.options import HostEnv


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, python: str | None = None, *, host: HostEnv | None = None):
        self.python = python or sys.executable
        self.host = host or HostEnv()

    def prepare(self, stack: Stack) -> dict:
        return {"python": self.python}

    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None) -> RunResult:
        return run_python_harness(self, self.python, capture_dir, workers=workers, timeout_s=timeout_s,
                                  scratch=scratch)


def run_python_harness(executor: Executor, python: str, capture_dir: Path, *, workers: int,
                       timeout_s: float, scratch: Path | None = None) -> RunResult:
    """Run the harness as a host subprocess of `python` (shared by the local and venv executors)."""
    capture_dir = Path(capture_dir)
    argv = harness_argv(python, str(capture_dir / "plan.json"), str(capture_dir / "kernels"),
                        str(capture_dir), workers)
    try:
        r = proc.run(argv, timeout=timeout_s, env=harness_env(executor.host, {"TMPDIR": str(scratch)} if scratch else None), capture_stdout=False,
                     log_path=capture_dir / "logs" / "executor.log")
    except OSError as e:
        raise ExecutorError(f"{executor.name}: cannot start {python}: {e.strerror}") from None
    return RunResult(executor=executor.name, returncode=r.returncode, timed_out=r.timed_out, log_tail=r.stderr_tail,
                     runtime={"python": python})
