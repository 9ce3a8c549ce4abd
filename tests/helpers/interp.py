"""The venv that runs programs under Triton's interpreter: triton 3.6.0, the CPU torch 2.13.0
and numpy (the interpreter's), built once under $REPROKIT_CACHE by the venv executor's cached,
atomic build. `reprokit trace`'s tests and `make bench-trace` use it."""

from __future__ import annotations

from pathlib import Path

from reprokit.config import Stack
from reprokit.executors.venv import VenvExecutor
from reprokit.options import HostEnv

INTERP_STACK = Stack(name="trace-interp", triton="3.6.0", torch="2.13.0", python=None)


class InterpreterVenv(VenvExecutor):
    """The venv executor with numpy beside triton and torch."""

    def spec(self, stack: Stack) -> dict:
        spec = super().spec(stack)
        return {**spec, "requirements": [*spec["requirements"], "numpy"]}


def interpreter_python(host: HostEnv) -> Path:
    """The venv's python, built first if need be (ExecutorError when it cannot be)."""
    venv = InterpreterVenv(host=host, with_torch=True)
    venv.prepare(INTERP_STACK)
    return venv.venv_dir(INTERP_STACK) / "bin" / "python"
