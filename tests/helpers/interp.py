"""The venvs that run programs under Triton's interpreter: a Triton (3.6.0 unless asked), the CPU
torch 2.13.0 and numpy (the interpreter's), each built once under $REPROKIT_CACHE by the venv
executor's cached, atomic build. `reprokit trace`'s tests and `make bench-trace` use them."""

from __future__ import annotations

from pathlib import Path

from reprokit.config import Stack
from reprokit.executors.venv import VenvExecutor
from reprokit.options import HostEnv

TORCH = "2.13.0"  # a CPU build on this disk; the CPU wheel does not pin a Triton


def interp_stack(triton: str = "3.6.0") -> Stack:
    return Stack(name="trace-interp" if triton == "3.6.0" else f"trace-interp-{triton}", triton=triton, torch=TORCH)


class InterpreterVenv(VenvExecutor):
    """The venv executor with numpy beside triton and torch. numpy < 2.4: from 2.4 numpy refuses
    `int()` of a one-element array, which Triton's interpreter does for every loop bound that is
    not a constexpr (`range(k_tiles)`), so persistent kernels and K loops fail there."""

    def spec(self, stack: Stack) -> dict:
        spec = super().spec(stack)
        return {**spec, "requirements": [*spec["requirements"], "numpy<2.4"]}


LIGER = "0.8.5"  # Liger-Kernel, the public kernel library the trace corpus runs (tests/data/trace/libs/)


class LigerVenv(InterpreterVenv):
    """The interpreter venv with Liger-Kernel, pinned, installed with --no-deps (its own
    requirements pull a CUDA torch of GBs), and `packaging`, the one other module it imports."""

    def spec(self, stack: Stack) -> dict:
        spec = super().spec(stack)
        return {**spec, "requirements": [*spec["requirements"], "packaging"], "no_deps": [f"liger-kernel=={LIGER}"]}


def liger_python(host: HostEnv) -> Path:
    """The Liger-Kernel venv's python (tests/helpers/interp.py), built first if need be."""
    venv, stack = LigerVenv(host=host, with_torch=True), Stack(name="trace-interp-liger", triton="3.6.0", torch=TORCH)
    venv.prepare(stack)
    return venv.venv_dir(stack) / "bin" / "python"


def interpreter_python(host: HostEnv, triton: str = "3.6.0") -> Path:
    """The venv's python, built first if need be (ExecutorError when it cannot be)."""
    venv, stack = InterpreterVenv(host=host, with_torch=True), interp_stack(triton)
    venv.prepare(stack)
    return venv.venv_dir(stack) / "bin" / "python"
