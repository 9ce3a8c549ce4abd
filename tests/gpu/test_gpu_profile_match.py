"""On a real GPU: the host's GPU, as NVML reports it, matches the profile of its own name and
memory and no other; `run --gpu <other profile of the same capability>` stops in one line
(exit 2) before anything runs, and --allow-gpu-mismatch lets it through, recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.config import load_config
from reprokit.errors import GpuMismatchError
from reprokit.gpu import HostGpus, detect, gpu_options, mismatches

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def host_gpu():
    gpus, why = detect()
    if not gpus:
        pytest.skip(f"NVML sees no GPU: {why}")
    return gpus[0]


def test_nvml_matches_exactly_the_profiles_of_this_gpu(host_gpu):
    cfg = load_config()
    mine = [p for p in cfg.gpus.values() if not mismatches(p, host_gpu)]
    assert len(mine) <= 1, [p.key for p in mine]
    for p in cfg.gpus.values():
        if p in mine:
            assert gpu_options(p, "auto", HostGpus((host_gpu,))).on_gpu
        else:
            with pytest.raises(GpuMismatchError):
                gpu_options(p, "auto", HostGpus((host_gpu,)))


def test_the_wrong_profile_stops_the_run_in_one_line(host_gpu, tmp_path):
    cfg = load_config()
    other = next((p for p in cfg.gpus.values() if p.capability == host_gpu.capability and mismatches(p, host_gpu)),
                 None)
    if other is None:
        pytest.skip(f"no other profile of sm_{host_gpu.capability} in stacks.toml")
    argv = [sys.executable, "-m", "reprokit", "run", "--gpu", other.key, "--executor", "local", "--cases",
            "block_ptr.p0", "--out", str(tmp_path / "out")]
    p = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert f"not a {other.key}" in line and "--allow-gpu-mismatch" in line
    assert not (tmp_path / "out").exists()
