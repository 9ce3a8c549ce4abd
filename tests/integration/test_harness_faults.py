"""Faults in one case never stop the others: a segfaulting and a hanging case beside a real compile."""

from __future__ import annotations

import shutil

import pytest

from reprokit.executors.local import LocalExecutor
from reprokit.run.capture import capture
from reprokit.suite import build_plan, kernels_dir
from tests.conftest import by_id
from tests.helpers.runs import host, planned

pytestmark = pytest.mark.triton

# Kernel modules that fault while the case's process loads them (as a compiler would mid-compile).
SEGV = "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"
HANG = "import time\nwhile True:\n    time.sleep(1)\n"
# Escapes the case's own error handling: its process ends in the harness's code, not the compiler.
EXIT = "raise SystemExit(3)\n"


def test_segfault_and_hang_become_results(tmp_path, config, venv_executor, stack_ready):
    stack = stack_ready("triton-3.6-cu130")
    kernels = tmp_path / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    (kernels / "segv.py").write_text(SEGV)
    (kernels / "hang.py").write_text(HANG)
    (kernels / "exit.py").write_text(EXIT)
    plan = build_plan(config.gpu("h100"), stack.pins(), only="tensor_descriptor.p0").to_json()
    real = plan["cases"][0]
    plan["cases"] = [
        {**real, "id": "fault.segv", "kernel": {"file": "segv.py", "function": "copy_p0"}},
        {**real, "id": "fault.hang", "kernel": {"file": "hang.py", "function": "copy_p0"}, "timeout_s": 1.0},
        {**real, "id": "fault.exit", "kernel": {"file": "exit.py", "function": "copy_p0"}},
        real,
    ]
    python = venv_executor.prepare(stack)["python"]
    cap = capture(stack, LocalExecutor(python=python, host=host()), tmp_path / "cap",
                  *planned(config.gpu("h100"), workers=2, plan=plan, kernels=kernels))
    cases = by_id(cap)
    segv, hang = cases["fault.segv"], cases["fault.hang"]
    assert segv["status"] == "crash" and segv["signal"] == "SIGSEGV" and segv["verdict"] == "crashed"
    assert segv["error"] == "compiler process killed by SIGSEGV"
    assert hang["status"] == "timeout" and hang["signal"] == "SIGKILL" and 1.0 <= hang["wall_s"] < 5
    assert cases["tensor_descriptor.p0"]["verdict"] == "tma"
    exited = cases["fault.exit"]  # never mistaken for a compiler crash
    assert exited["status"] == "harness_error" and exited["verdict"] == "error" and exited["met"] is None
    assert exited["error"] == "the harness failed in the case's process: SystemExit: 3"
    assert cap.harness_errors() == ["fault.exit"]
    assert not (tmp_path / "cap" / "cases" / "fault.hang" / "metadata.json").exists()
    # A kernel module with no such function gets no standalone reproducer; the real case does.
    assert "reproducer_py" not in segv["artifacts"]
    assert cases["tensor_descriptor.p0"]["artifacts"]["reproducer_py"] == "cases/tensor_descriptor.p0/reproducer.py"
    assert "fault.segv: no standalone reproducer (ValueError: the kernel source defines no function 'copy_p0')" in \
        (cap.out_dir / "logs" / "harness.log").read_text()


RAISE = "raise RuntimeError('kernel module refuses to load')\n"


def test_faults_while_waiting_for_a_worker(tmp_path, config, venv_executor, stack_ready):
    """With one worker, each case's process is forked and loads its kernel module while the case
    before it compiles. A module that crashes, hangs or raises then is still that case's result,
    and its timeout counts from its own start, not from its fork."""
    stack = stack_ready("triton-3.6-cu130")
    kernels = tmp_path / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    for name, text in (("segv.py", SEGV), ("hang.py", HANG), ("raise.py", RAISE)):
        (kernels / name).write_text(text)
    plan = build_plan(config.gpu("h100"), stack.pins(), only="tensor_descriptor.p0,block_ptr.p0").to_json()
    real, block = (next(c for c in plan["cases"] if c["id"] == i) for i in ("tensor_descriptor.p0", "block_ptr.p0"))
    plan["cases"] = [
        real,
        {**real, "id": "fault.segv", "kernel": {"file": "segv.py", "function": "copy_p0"}},
        {**real, "id": "fault.hang", "kernel": {"file": "hang.py", "function": "copy_p0"}, "timeout_s": 1.0},
        {**real, "id": "fault.raise", "kernel": {"file": "raise.py", "function": "copy_p0"}},
        block,
    ]
    python = venv_executor.prepare(stack)["python"]
    cap = capture(stack, LocalExecutor(python=python, host=host()), tmp_path / "cap",
                  *planned(config.gpu("h100"), workers=1, plan=plan, kernels=kernels))
    cases = by_id(cap)
    assert cases["fault.segv"]["status"] == "crash" and cases["fault.segv"]["signal"] == "SIGSEGV"
    hang = cases["fault.hang"]
    assert hang["status"] == "timeout" and 1.0 <= hang["wall_s"] < 5
    raised = cases["fault.raise"]
    assert raised["status"] == "harness_error" and "kernel module refuses to load" in raised["error"]
    assert "RuntimeError" in (cap.out_dir / raised["artifacts"]["compile_log"]).read_text()
    assert cases["tensor_descriptor.p0"]["verdict"] == "tma" and cases["block_ptr.p0"]["verdict"] == "no-tma"
    log = (cap.out_dir / "logs" / "harness.log").read_text()
    assert log.index("tensor_descriptor.p0: ok") < log.index("fault.segv: crash") < log.index("block_ptr.p0: ok")
