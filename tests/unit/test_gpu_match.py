"""The right GPU (reprokit.gpu): a profile is matched by capability, NVML name and memory, and a
mismatch stops the run in one line unless --allow-gpu-mismatch, which plan.json records. The
host GPUs are values NVML reported on real machines (an H100 SXM of the lab: 85520809984 B)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reprokit.bundle import schemas
from reprokit.config import load_config
from reprokit.errors import GpuMismatchError, UsageError
from reprokit.gpu import HostGpu, HostGpus, gpu_options, lock_clocks_value, mismatches, notice, visible
from reprokit.suite import build_plan

H100 = HostGpu(0, "NVIDIA H100 80GB HBM3", 90, 85520809984, "GPU-8f3e2d1c-aaaa-bbbb-cccc-0123456789ab")
H100_PCIE = HostGpu(0, "NVIDIA H100 PCIe", 90, 85520809984)
H100_94 = HostGpu(0, "NVIDIA H100 80GB HBM3", 90, 99_857_989_632)  # a 94 GB board under the same name
H200 = HostGpu(1, "NVIDIA H200", 90, 150_754_820_096, "GPU-11112222-3333-4444-5555-666677778888")
GB10 = HostGpu(0, "NVIDIA GB10", 121, None)  # unified memory: NVML gives no total


@pytest.fixture(scope="module")
def cfg():
    return load_config()


def test_profiles_match_by_name_and_memory_as_well_as_capability(cfg):
    assert mismatches(cfg.gpu("h100"), H100) == []
    assert mismatches(cfg.gpu("h200"), H200) == []
    assert mismatches(cfg.gpu("gb10"), GB10) == []  # no memory to compare: not a mismatch
    assert mismatches(cfg.gpu("h200"), H100) == ["name 'NVIDIA H100 80GB HBM3', not 'NVIDIA H200'",
                                                  "79.6 GiB of memory, not 141"]
    assert mismatches(cfg.gpu("h100"), H100_PCIE) == ["name 'NVIDIA H100 PCIe', not 'NVIDIA H100 80GB HBM3'"]
    assert mismatches(cfg.gpu("h100"), H100_94) == ["93.0 GiB of memory, not 80"]
    assert mismatches(cfg.gpu("b200"), H100)[0] == "capability sm_90, not sm_100"


def test_run_gpu_h200_on_an_h100_stops_in_one_line(cfg):
    with pytest.raises(GpuMismatchError) as e:
        gpu_options(cfg.gpu("h200"), "auto", HostGpus((H100,)))
    msg = str(e.value)
    assert "\n" not in msg and "not a h200 (NVIDIA H200, sm_90)" in msg and "--allow-gpu-mismatch" in msg
    assert GpuMismatchError.exit_code == 2


def test_allowed_mismatch_runs_and_is_recorded(cfg):
    gpu = gpu_options(cfg.gpu("h200"), "auto", HostGpus((H100,)), allow_mismatch=True)
    said = [notice(gpu, HostGpus((H100,)))]
    assert gpu.on_gpu and gpu.allow_mismatch and len(gpu.mismatch) == 2 and "warning" in said[0]
    rec = gpu.record()
    assert rec["host"] == {"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": 90, "memory_total": 85520809984}
    assert rec["allow_mismatch"] is True and rec["mismatch"][0].startswith("name ")
    # Another architecture cannot run the profile's code, allowed or not.
    with pytest.raises(GpuMismatchError, match="capability sm_90, not sm_100") as e:
        gpu_options(cfg.gpu("b200"), "auto", HostGpus((H100,)), allow_mismatch=True)
    assert "--allow-gpu-mismatch" not in str(e.value)


def test_matching_gpu_and_no_gpu(cfg):
    gpu = gpu_options(cfg.gpu("h100"), "auto", HostGpus((H100,)))
    assert gpu.on_gpu and gpu.mismatch == () and gpu.record()["host"]["name"] == H100.name
    nothing = HostGpus((), "NVML is not available")
    none = gpu_options(cfg.gpu("h100"), "auto", nothing)
    said = [line for line in (notice(none, nothing), notice(gpu, HostGpus((H100,)))) if line]
    assert none.mode == "compile-only" and none.record() is None
    assert len(said) == 1 and "compile-only" in said[0] and "sm_90" in said[0]
    with pytest.raises(GpuMismatchError, match="no GPU"):
        gpu_options(cfg.gpu("h100"), "gpu", HostGpus((), "x"))
    assert gpu_options(cfg.gpu("b200"), "compile-only", HostGpus((H100,))).mode == "compile-only"


def test_the_gpu_checked_is_the_one_cuda_will_use():
    both = [H100, H200]
    assert visible(both, None) == both
    assert visible(both, "1") == [H200] and visible(both, "1,0") == [H200, H100]
    assert visible(both, "GPU-1111") == [H200] and visible(both, "GPU-") == []  # ambiguous prefix
    assert visible(both, "") == [] and visible(both, "0,7,1") == [H100]  # CUDA stops at a bad entry


def test_lock_clocks_is_asked_for_and_needs_a_gpu_run(cfg):
    assert lock_clocks_value(None) is None and lock_clocks_value("max") == "max" and lock_clocks_value(" 1755") == "1755"
    for bad in ("fast", "-5", "0", "1.5"):
        with pytest.raises(UsageError, match="--lock-clocks"):
            lock_clocks_value(bad)
    with pytest.raises(UsageError, match="needs a run on the GPU"):
        gpu_options(cfg.gpu("h100"), "compile-only", HostGpus(), lock_clocks="max")
    assert gpu_options(cfg.gpu("h100"), "auto", HostGpus((H100,)), lock_clocks="1755").record()["lock_clocks"] == "1755"


def test_plan_records_the_gpu_check_and_validates(cfg):
    plan = build_plan(cfg.gpu("h200"), {"name": "local", "triton": "3.6.0"}, mode="gpu", only="block_ptr.p0").to_json()
    plan["gpu"] = gpu_options(cfg.gpu("h200"), "auto", HostGpus((H100,)), allow_mismatch=True).record()
    assert schemas.problems("plan.json", json.loads(json.dumps(plan))) == []
    plan["gpu"]["lock_clocks"] = "fast"
    assert schemas.problems("plan.json", plan)


def test_the_cli_takes_the_flags():
    p = subprocess.run([sys.executable, "-m", "reprokit", "run", "--help"], capture_output=True, text=True)
    assert "--allow-gpu-mismatch" in p.stdout and "--lock-clocks" in p.stdout
    p = subprocess.run([sys.executable, "-m", "reprokit", "capture", "--gpu", "h100", "--out", "/nonexistent/x",
                        "--mode", "compile-only", "--lock-clocks", "max"], capture_output=True, text=True)
    assert p.returncode == 2 and p.stderr.strip().splitlines() == [
        "reprokit: --lock-clocks needs a run on the GPU (this one is compile-only)"]


def test_a_bundle_says_it_ran_on_another_gpu(tmp_path, cfg):
    """plan.json's gpu record reaches the bundle, verifies, and its README says it in words."""
    import json as json_mod

    from reprokit.bundle.reader import open_bundle, verify
    from tests.helpers.bundle_tools import make_bundle

    path = make_bundle(tmp_path, mode="gpu")
    cap = tmp_path / "capture"
    plan = json_mod.loads((cap / "plan.json").read_text())
    plan["gpu"] = gpu_options(cfg.gpu("h200"), "auto", HostGpus((H100,)), allow_mismatch=True, lock_clocks="1755").record()
    (cap / "plan.json").write_text(json_mod.dumps(plan, indent=1, sort_keys=True) + "\n")
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions, Origin
    from tests.helpers.fake_capture import EXECUTOR, PROFILE_H100, STACK

    again = write_bundle(cap, Origin(stack=STACK, profile=PROFILE_H100, executor=EXECUTOR, mode="gpu"),
                         BundleOptions(tmp_path / "again"))
    assert verify(again) == [] and path != again
    b = open_bundle(again)
    assert b.plan["gpu"]["mismatch"] == plan["gpu"]["mismatch"]
    readme = b.read_text("README.md")
    assert "**Not the profile's GPU**: ran on GPU 0, a NVIDIA H100 80GB HBM3" in readme and "--lock-clocks 1755" in readme


def test_the_host_resets_clocks_a_killed_harness_left_locked(cfg, monkeypatch):
    from reprokit.options import GpuOptions
    from reprokit.run.execute import reset_locked_clocks
    from tests.unit.test_nvml import IDLE, fake_pynvml

    calls = []
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(dict(IDLE), calls=calls))
    assert reset_locked_clocks(GpuOptions(cfg.gpu("h100"), "gpu", host={"index": 0})) is False  # none asked for
    assert calls == []
    locked = GpuOptions(cfg.gpu("h100"), "gpu", host={"index": 0}, lock_clocks="max")
    assert reset_locked_clocks(locked) is True and calls == ["init", "reset", "shutdown"]
    monkeypatch.setitem(sys.modules, "pynvml", None)  # no nvidia-ml-py on the host
    assert reset_locked_clocks(locked) is False


def test_detect_reads_name_capability_memory_and_uuid(monkeypatch, cfg):
    from reprokit.gpu import detect
    from tests.unit.test_nvml import IDLE, fake_pynvml

    nv = fake_pynvml(dict(IDLE))
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    (gpu,), why = detect()
    assert why is None and gpu == H100 and mismatches(cfg.gpu("h100"), gpu) == []
    import pynvml as real

    def no_memory(h):  # unified memory (GB10): NVML has no separate total
        raise real.NVMLError(real.NVML_ERROR_NOT_SUPPORTED)

    nv.nvmlDeviceGetMemoryInfo = no_memory
    (gpu,), _ = detect()
    assert gpu.memory_total is None and mismatches(cfg.gpu("h100"), gpu) == []
    monkeypatch.setitem(sys.modules, "pynvml", None)
    assert detect() == ([], "nvidia-ml-py is not installed (reprokit's 'gpu' extra)")
