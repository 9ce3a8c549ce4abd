"""On a real GPU: the CUDA C++ TMA copy (kernels/cuda/tma_copy.cu), built with nvcc and launched
through the driver API (reprokit.harness.kinds.cudacpp.TmaCopy), copies exactly, tails included, the
same bytes every run, and records the NVML sampler's summary around repeated launches."""

from __future__ import annotations

import os
import subprocess

import pytest

torch = pytest.importorskip("torch", reason="the GPU tier needs torch")

from reprokit.harness import nvml  # noqa: E402
from reprokit.harness.kinds import cudacpp

pytestmark = pytest.mark.gpu
SOURCE = os.path.join(os.path.dirname(__file__), "..", "..", "kernels", "cuda", "tma_copy.cu")


@pytest.fixture(scope="module")
def copy(tmp_path_factory):
    nvcc = cudacpp.find_nvcc()
    if nvcc is None:
        pytest.skip(cudacpp.missing_nvcc())
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        pytest.skip("TMA needs compute capability 9.0 or newer")
    cubin = str(tmp_path_factory.mktemp("cuda") / "tma_copy.cubin")
    subprocess.run(cudacpp.nvcc_argv(nvcc, SOURCE, cubin, major * 10 + minor, {"BM": 128, "BN": 128}, "cubin"),
                   check=True)
    return cudacpp.TmaCopy(cubin, 128, 128)


@pytest.mark.parametrize("shape", [(4096, 4096), (4000, 4096), (4096, 4000 + 8), (129, 136)])
def test_tma_copy_is_exact_with_tails(copy, shape):
    src = torch.randn(shape, device="cuda", dtype=torch.float16)
    dst = torch.full(shape, float("nan"), device="cuda", dtype=torch.float16)  # poisoned first
    copy(src, dst)
    torch.cuda.synchronize()
    assert torch.equal(src, dst)


def test_tma_copy_is_deterministic_and_sampled(copy):
    src = torch.randn((4096, 4096), device="cuda", dtype=torch.float16)
    first, same = None, 0
    index = nvml.index_for_cuda_device(torch.cuda.current_device())
    with nvml.Sampler(index, 0.005) as summary:
        for _ in range(50):
            dst = torch.full_like(src, float("nan"))
            copy(src, dst)
            torch.cuda.synchronize()
            first = dst if first is None else first
            same += bool(torch.equal(dst, first))
    assert same == 50 and torch.equal(first, src)
    assert summary["available"] and summary["samples"] >= 2 and summary["sm_clock_mhz"]["max"] > 0
    assert summary["before"]["uuid"] == summary["after"]["uuid"]


def test_tma_copy_refuses_what_tma_cannot_describe(copy):
    src = torch.randn((256, 256), device="cuda", dtype=torch.float16)
    with pytest.raises(ValueError, match="unit innermost stride"):
        copy(src.t(), torch.empty_like(src))
    with pytest.raises(ValueError, match="multiples of 16"):
        copy(src[:, :100], torch.empty((256, 100), device="cuda", dtype=torch.float16))
