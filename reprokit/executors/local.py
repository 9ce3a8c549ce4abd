"""The `local` executor: the harness runs under this very interpreter and its Triton.

It may be prestarted: the harness process loads Triton, its warm-up and torch at once and waits
for its run (`python -m reprokit.harness --prestart`), so that a trace's capture does not pay for
them after the program has ended. The run then reaches it on its stdin; an executor closed
without a run calls it off. An executor kept warm (`keep_warm`, for runs that come one after
another, as a reduction's batches do) starts the next run's harness as each run begins (Warm,
shared with the venv executor).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from reprokit import proc
from reprokit.config import Stack
from reprokit.errors import ExecutorError, FileSystemError
from reprokit.executors.base import Executor, RunResult, harness_args, harness_argv, harness_env, prestart_argv
from reprokit.options import HostEnv, Seat


class Warm:
    """Harnesses started before their run, one per interpreter: loading Triton, its warm-up and
    torch while something else happens (a traced program, the run before). `start` begins one
    now; `keep(capability)` makes every `take` start the next one as it hands one out (until
    `keep(None)`); `close` calls off those no run took. A harness that cannot start says so when
    its run comes, as an unstarted one would."""

    def __init__(self, host: HostEnv):
        self.host = host
        self.capability: int | None = None
        self.started: dict[str, proc.Started] = {}

    def start(self, python: str, capability: int) -> None:
        if python not in self.started:
            try:
                self.started[python] = proc.start(prestart_argv(python, capability), env=harness_env(self.host),
                                                  capture_stdout=False, stdin=True)
            except FileSystemError:
                pass

    def keep(self, capability: int | None) -> None:
        self.capability = capability

    def take(self, python: str) -> proc.Started | None:
        """The harness started for `python`, if any; kept warm, the next one starts now, beside this run."""
        started = self.started.pop(python, None)
        if self.capability is not None:
            self.start(python, self.capability)
        return started

    def close(self) -> None:
        started, self.started = list(self.started.values()), {}
        for s in started:
            s.cancel()


class LocalExecutor(Executor):
    name = "local"

    def __init__(self, python: str | None = None, *, host: HostEnv):
        self.python = python or sys.executable
        self.host = host
        self._warm = Warm(self.host)

    def prestart(self, capability: int) -> None:
        """Start the harness now, loading what its run will need for a GPU of this capability;
        the next run_harness hands it its run."""
        self._warm.start(self.python, capability)

    def keep_warm(self, capability: int | None) -> None:
        self._warm.keep(capability)

    def prepare(self, stack: Stack) -> dict:
        return {"python": self.python}

    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None, turns: Seat | None = None) -> RunResult:
        return run_python_harness(self, self.python, capture_dir, workers=workers, timeout_s=timeout_s,
                                  scratch=scratch, started=self._warm.take(self.python), turns=turns)

    def close(self) -> None:
        self._warm.close()


def run_python_harness(executor: Executor, python: str, capture_dir: Path, *, workers: int,
                       timeout_s: float, scratch: Path | None = None, started: proc.Started | None = None,
                       turns: Seat | None = None) -> RunResult:
    """Run the harness as a host subprocess of `python` (shared by the local and venv executors),
    or hand the run to `started`, a harness of that python prestarted (LocalExecutor.prestart)."""
    capture_dir = Path(capture_dir)
    where = (str(capture_dir / "plan.json"), str(capture_dir / "kernels"), str(capture_dir), workers)
    extra = {"TMPDIR": str(scratch)} if scratch else {}
    extra.update(turns.environ() if turns else {})
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
