"""--lock-clocks inside the harness: taken before anything runs, or the run stops."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.triton


def test_lock_clocks_that_nvml_refuses_stops_the_harness_before_anything_runs(stack_ready, venv_executor,
                                                                              config, tmp_path):
    """No NVML in the stack (a compile-only venv) or no driver: the lock cannot be taken, and the
    run stops in one line instead of measuring at clocks the user did not ask for."""
    from reprokit.errors import HarnessError
    from reprokit.options import GpuOptions
    from reprokit.run.capture import capture
    from reprokit.suite import build_plan

    stack = stack_ready("triton-3.6-cu130")
    gpu = GpuOptions(config.gpu("h100"), "gpu", host={"index": 0, "name": "NVIDIA H100 80GB HBM3"}, lock_clocks="max")
    with pytest.raises(HarnessError, match=r"harness exited 4 .* harness: cannot lock clocks: "):
        capture(stack, venv_executor, tmp_path / "cap", build_plan(gpu, only="block_ptr.p0"))
    failed = tmp_path / "cap.failed"
    assert not (failed / "results.json").exists() and not (failed / "cases").exists()
    assert '"lock_clocks": "max"' in (failed / "plan.json").read_text()
