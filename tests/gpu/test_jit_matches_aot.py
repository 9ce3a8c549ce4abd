"""On a real GPU: the JIT-compiled P0 copies are correct, and their TMA counts equal those of the
compile-only path for the same case of the plan (the premise of compile-only runs)."""

from __future__ import annotations

import os
import tempfile

import pytest

pytest.importorskip("triton", reason="the GPU tier needs triton and torch beside reprokit")
pytest.importorskip("torch", reason="the GPU tier needs triton and torch beside reprokit")

from reprokit.common import oracle
from reprokit.harness import compat  # noqa: E402  (imports triton)
from reprokit.harness.toolbox import disassemble, load_kernel  # noqa: E402

pytestmark = pytest.mark.gpu
KERNELS = os.path.join(os.path.dirname(__file__), "..", "..", "kernels")
M = N = 4096
B = 128


def _launch_block_ptr(fn, x, y):
    return fn[(M // B, N // B)](x, y, M, N, BM=B, BN=B, num_warps=8, num_stages=4)


def _launch_tensor_descriptor(fn, x, y):
    import torch
    import triton

    if not hasattr(triton.language, "make_tensor_descriptor"):
        pytest.skip("this Triton has no tl.make_tensor_descriptor")
    triton.set_allocator(lambda size, align, stream: torch.empty(size, device="cuda", dtype=torch.int8))
    return fn[(M // B, N // B)](x, y, M, N, BM=B, BN=B, num_warps=8, num_stages=4)


def _launch_host_descriptor(fn, x, y):
    td = pytest.importorskip("triton.tools.tensor_descriptor")
    return fn[(M // B, N // B)](td.TensorDescriptor.from_tensor(x, [B, B]), td.TensorDescriptor.from_tensor(y, [B, B]),
                                BM=B, BN=B, num_warps=8, num_stages=4)


# case id -> (launcher, whether TMA must appear)
CASES = {
    "block_ptr.p0": (_launch_block_ptr, False),
    "tensor_descriptor.p0": (_launch_tensor_descriptor, True),
    "host_descriptor.p0": (_launch_host_descriptor, True),
}


def _tma_counts(compiled) -> dict:
    texts = {k: compiled.asm[k] for k in ("ttgir", "ptx") if k in compiled.asm}
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(compiled.asm["cubin"])
        f.flush()
        texts["sass"] = disassemble(f.name)[0]
    return oracle.scan_all(texts)[0]


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_jit_copy_is_correct_and_its_tma_matches_compile_only(case_id):
    import torch
    import triton

    from reprokit.config import load_config
    from reprokit.suite import build_plan

    launch, wants_tma = CASES[case_id]
    case = build_plan(load_config().gpu("h100"), {"name": "local"}, only=case_id).to_json()["cases"][0]
    fn = load_kernel(KERNELS, case["kernel"]["file"], case["kernel"]["function"])
    x = torch.randn(M, N, device="cuda", dtype=torch.float16)
    y = torch.empty_like(x)
    jit = _tma_counts(launch(fn, x, y))
    torch.cuda.synchronize()
    assert torch.equal(x, y)
    major, minor = torch.cuda.get_device_capability()
    src = compat.make_source(fn, case["signature"], case["constexprs"], case["divisible_by_16"])
    aot = triton.compile(src, target=compat.gpu_target(major * 10 + minor),
                         options=compat.compile_options(case["num_warps"], case["num_stages"]))
    assert jit == _tma_counts(aot)
    assert (jit["sass"] >= 2) if wants_tma else (jit["sass"] == 0)
