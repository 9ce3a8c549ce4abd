"""The CUDA C++ launcher's pure parts (reprokit.harness.kinds.cudacpp): cuTensorMapEncodeTiled's
arguments, the map's alignment, nvcc's command line. The launch itself needs a GPU (tests/gpu)."""

from __future__ import annotations

import pytest

from reprokit.harness.kinds import cudacpp


def test_tensor_map_arguments_follow_the_driver_api():
    dims, strides, box, elem = cudacpp.tensor_map_args(4000, 4096, 4096 * 2, 128, 64)
    # Innermost dimension first; strides list every dimension but the innermost, in bytes.
    assert list(dims) == [4096, 4000] and list(strides) == [8192] and list(box) == [64, 128]
    assert list(elem) == [1, 1]
    with pytest.raises(ValueError, match="multiples of 16"):
        cudacpp.tensor_map_args(10, 10, 20, 128, 128)
    with pytest.raises(ValueError, match="at most 256"):
        cudacpp.tensor_map_args(4096, 4096, 8192, 512, 128)
    with pytest.raises(ValueError, match="16-byte"):
        cudacpp.tensor_map_args(4096, 4096, 8192, 128, 4)  # 8 bytes: the experimental P1's box


def test_tensor_map_is_aligned_as_cuda_h_declares():
    assert all(cudacpp._TensorMap().address % 128 == 0 for _ in range(16))


def test_nvcc_command_line():
    assert (cudacpp.arch_flag(90), cudacpp.arch_flag(100), cudacpp.arch_flag(80)) == ("sm_90a", "sm_100a", "sm_80")
    argv = cudacpp.nvcc_argv("/usr/bin/nvcc", "kernels/cuda/tma_copy.cu", "k.cubin", 90, {"BN": 64, "BM": 128}, "cubin")
    assert argv == ["/usr/bin/nvcc", "-cubin", "-arch=sm_90a", "-O3", "-DBM=128", "-DBN=64", "-o", "k.cubin",
                    "kernels/cuda/tma_copy.cu"]


def test_a_stack_without_nvcc_makes_the_case_unsupported_saying_why(monkeypatch, tmp_path):
    from reprokit.harness.kinds import cudacpp as kind

    monkeypatch.setattr(kind, "find_nvcc", lambda: None)
    rec = kind.compile_case({"id": "cuda.p0", "kernel": {"file": "tma_copy.cu"}}, {"profile": {"capability": 90}},
                            str(tmp_path), str(tmp_path))
    assert rec["status"] == "unsupported" and "no nvcc in this stack" in rec["error"] and rec["artifacts"] == {}
