"""Faults in one case never stop the others: a segfaulting and a hanging case beside a real compile."""

from __future__ import annotations

import shutil

import pytest

from reprokit.capture import capture
from reprokit.executors.local import LocalExecutor
from reprokit.suite import build_plan, kernels_dir
from tests.conftest import by_id

pytestmark = pytest.mark.triton

# Kernel modules that fault while the case's process loads them (as a compiler would mid-compile).
SEGV = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
HANG = "import time\nwhile True:\n    time.sleep(1)\n"


def test_segfault_and_hang_become_results(tmp_path, config, venv_executor, stack_ready):
    stack = stack_ready("triton-3.6-cu130")
    kernels = tmp_path / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    (kernels / "segv.py").write_text(SEGV)
    (kernels / "hang.py").write_text(HANG)
    plan = build_plan(config.gpu("h100"), stack.pins(), only="tensor_descriptor.p0")
    real = plan["cases"][0]
    plan["cases"] = [
        {**real, "id": "fault.segv", "kernel": {"file": "segv.py", "function": "copy_p0"}},
        {**real, "id": "fault.hang", "kernel": {"file": "hang.py", "function": "copy_p0"}, "timeout_s": 1.0},
        real,
    ]
    python = venv_executor.prepare(stack)["python"]
    cap = capture(stack, config.gpu("h100"), tmp_path / "cap", LocalExecutor(python=python), workers=2,
                  plan=plan, kernels=kernels)
    cases = by_id(cap)
    segv, hang = cases["fault.segv"], cases["fault.hang"]
    assert segv["status"] == "crash" and segv["signal"] == "SIGSEGV" and segv["verdict"] == "crashed"
    assert segv["error"] == "compiler process killed by SIGSEGV"
    assert hang["status"] == "timeout" and hang["signal"] == "SIGKILL" and 1.0 <= hang["wall_s"] < 5
    assert cases["tensor_descriptor.p0"]["verdict"] == "tma"
    assert not (tmp_path / "cap" / "cases" / "fault.hang" / "metadata.json").exists()
