"""On a real GPU: the JIT-compiled P0 copies are correct, and their TMA verdict equals the one the
compile-only capture gives for the same profile (the premise of compile-only runs)."""

from __future__ import annotations

import os

import pytest

pytest.importorskip("triton", reason="the GPU tier needs triton and torch beside reprokit")
pytest.importorskip("torch", reason="the GPU tier needs triton and torch beside reprokit")

from reprokit.harness import compat, oracle  # noqa: E402  (imports triton)
from reprokit.harness.case import load_kernel  # noqa: E402

pytestmark = pytest.mark.gpu
KERNELS = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")
M = N = 4096
B = 128


@pytest.fixture(scope="module")
def torch():
    import torch

    return torch


def _tma_counts(compiled) -> dict:
    from reprokit.harness.case import disassemble
    import tempfile

    texts = {k: compiled.asm[k] for k in ("ttgir", "ptx") if k in compiled.asm}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        texts["sass"] = disassemble(f.name)[0]
    return oracle.scan_all(texts)[0]


def _aot_counts(file, fn, signature, constexprs, div, warps=8, stages=4) -> dict:
    import torch
    import triton

    major, minor = torch.cuda.get_device_capability()
    src = compat.make_source(load_kernel(KERNELS, file, fn), signature, constexprs, div)
    compiled = triton.compile(src, target=compat.gpu_target(major * 10 + minor),
                              options=compat.compile_options(warps, stages))
    return _tma_counts(compiled)


def test_block_pointer_copy_is_correct_and_emits_no_tma(torch):
    fn = load_kernel(KERNELS, "copy_block_ptr.py", "copy_p0")
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    k = fn[(M // B, N // B)](x, y, M, N, BM=B, BN=B, num_warps=8, num_stages=4)
    torch.cuda.synchronize()
    assert torch.equal(x, y)
    jit = _tma_counts(k)
    aot = _aot_counts("copy_block_ptr.py", "copy_p0", {"src": "*fp16", "dst": "*fp16", "M": "i32", "N": "i32"},
                      {"BM": B, "BN": B}, ["src", "dst", "M", "N"])
    assert jit == aot and jit["sass"] == 0


def test_tensor_descriptor_copy_is_correct_and_emits_tma(torch):
    import triton

    if not hasattr(triton.language, "make_tensor_descriptor"):
        pytest.skip("this Triton has no device-side tensor descriptors")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    fn = load_kernel(KERNELS, "copy_tensor_descriptor.py", "copy_p0")
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    k = fn[(M // B, N // B)](x, y, M, N, BM=B, BN=B, num_warps=8, num_stages=4)
    torch.cuda.synchronize()
    assert torch.equal(x, y)
    jit = _tma_counts(k)
    aot = _aot_counts("copy_tensor_descriptor.py", "copy_p0",
                      {"src": "*fp16", "dst": "*fp16", "M": "i32", "N": "i32"}, {"BM": B, "BN": B},
                      ["src", "dst", "M", "N"])
    assert jit == aot and jit["sass"] >= 2


def test_host_descriptor_copy_is_correct_and_emits_tma(torch):
    td = pytest.importorskip("triton.tools.tensor_descriptor")
    fn = load_kernel(KERNELS, "copy_host_descriptor.py", "copy_p0")
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    k = fn[(M // B, N // B)](td.TensorDescriptor.from_tensor(x, [B, B]), td.TensorDescriptor.from_tensor(y, [B, B]),
                             BM=B, BN=B, num_warps=8, num_stages=4)
    torch.cuda.synchronize()
    assert torch.equal(x, y)
    jit = _tma_counts(k)
    sig = {"src_desc": "tensordesc<fp16[128, 128]>", "dst_desc": "tensordesc<fp16[128, 128]>"}
    aot = _aot_counts("copy_host_descriptor.py", "copy_p0", sig, {"BM": B, "BN": B}, [])
    assert jit == aot and jit["sass"] >= 2
