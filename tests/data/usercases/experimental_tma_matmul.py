"""A 3.0-era TMA matmul, as Triton 3.0's tutorial wrote it: host-filled CUtensorMap descriptors
(128 bytes each, the kernel takes their addresses), tl._experimental_descriptor_load/store,
numpy and torch at module level, an autotuner, a bool constexpr that picks the dtype."""

import numpy as np
import torch
import triton
import triton.language as tl

TMA_SIZE = 128


@triton.autotune(
    configs=[
        triton.Config({"BLOCK_M": 128, "BLOCK_N": 128, "BLOCK_K": 64}, num_warps=8, num_stages=3),
        triton.Config({"BLOCK_M": 64, "BLOCK_N": 64, "BLOCK_K": 32}, num_warps=4, num_stages=4),
    ],
    key=["M", "N", "K"],
)
@triton.jit
def matmul_kernel_tma(a_desc_ptr, b_desc_ptr, c_desc_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                      BLOCK_K: tl.constexpr, FP8_OUTPUT: tl.constexpr):
    dtype = tl.float8e4nv if FP8_OUTPUT else tl.float16
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    pid_m = pid % num_pid_m
    pid_n = pid // num_pid_m
    offs_am = pid_m * BLOCK_M
    offs_bn = pid_n * BLOCK_N
    offs_k = 0
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for _ in range(tl.cdiv(K, BLOCK_K)):
        a = tl._experimental_descriptor_load(a_desc_ptr, [offs_am, offs_k], [BLOCK_M, BLOCK_K], dtype)
        b = tl._experimental_descriptor_load(b_desc_ptr, [offs_bn, offs_k], [BLOCK_N, BLOCK_K], dtype)
        accumulator = tl.dot(a, b.T, accumulator)
        offs_k += BLOCK_K
    accumulator = accumulator.to(dtype)
    tl._experimental_descriptor_store(c_desc_ptr, accumulator, [offs_am, offs_bn])


def matmul(a, b):
    """The host side (a GPU run only): descriptors filled by the driver's utility, as 3.0 did."""
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    fill = triton.runtime.driver.active.utils.fill_2d_tma_descriptor
    descs = []
    for t, rows, cols in ((a, 128, 64), (b, 128, 64), (c, 128, 128)):
        host = np.empty(TMA_SIZE, dtype=np.int8)
        fill(t.data_ptr(), t.shape[0], t.shape[1], rows, cols, t.element_size(), host)
        descs.append(torch.tensor(host, device=a.device))
    grid = lambda meta: (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)
    matmul_kernel_tma[grid](*descs, M, N, K, FP8_OUTPUT=False)
    return c
