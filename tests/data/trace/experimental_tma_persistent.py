"""A 3.0-era program, as Triton 3.0's 09-persistent-matmul tutorial wrote it: a persistent TMA
matmul through host-filled CUtensorMap descriptors (`fill_2d_tma_descriptor` into 128 bytes that
are copied to the GPU; the kernel takes their addresses) and `tl._experimental_descriptor_load`/
`_store`, beside a TMA copy through the same descriptors. Checked against torch.

A GPU only, on Triton 3.0-3.3: the fill is a CUDA driver call and the interpreter has no
experimental descriptor ops (docs/trace.md). Usage: experimental_tma_persistent.py [--tiny]
(--tiny: 256-sized shapes, for a trace that keeps its tensors)
"""

import sys

import numpy as np
import torch
import triton
import triton.language as tl

TMA_SIZE = 128
BLOCK_SIZE_M, BLOCK_SIZE_N, BLOCK_SIZE_K, GROUP_SIZE_M = 128, 128, 64, 8


@triton.jit
def matmul_kernel_tma_persistent(a_desc_ptr, b_desc_ptr, c_desc_ptr, M, N, K,
                                 BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                 BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                 FP8_OUTPUT: tl.constexpr, NUM_SMS: tl.constexpr):
    dtype = tl.float8e4nv if FP8_OUTPUT else tl.float16
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    tiles_per_SM = num_tiles // NUM_SMS
    if start_pid < num_tiles % NUM_SMS:
        tiles_per_SM += 1

    tile_id = start_pid - NUM_SMS
    ki = -1

    pid_m = 0
    pid_n = 0
    offs_am = 0
    offs_bn = 0

    num_pid_in_group = GROUP_SIZE_M * num_pid_n

    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)

    for _ in range(k_tiles * tiles_per_SM):
        ki = tl.where(ki == k_tiles - 1, 0, ki + 1)
        if ki == 0:
            tile_id += NUM_SMS
            group_id = tile_id // num_pid_in_group
            first_pid_m = group_id * GROUP_SIZE_M
            group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
            pid_m = first_pid_m + (tile_id % group_size_m)
            pid_n = (tile_id % num_pid_in_group) // group_size_m

            offs_am = pid_m * BLOCK_SIZE_M
            offs_bn = pid_n * BLOCK_SIZE_N

        offs_k = ki * BLOCK_SIZE_K

        a = tl._experimental_descriptor_load(a_desc_ptr, [offs_am, offs_k], [BLOCK_SIZE_M, BLOCK_SIZE_K], dtype)
        b = tl._experimental_descriptor_load(b_desc_ptr, [offs_bn, offs_k], [BLOCK_SIZE_N, BLOCK_SIZE_K], dtype)
        accumulator = tl.dot(a, b.T, accumulator)

        if ki == k_tiles - 1:
            c = accumulator.to(dtype)

            tl._experimental_descriptor_store(c_desc_ptr, c, [offs_am, offs_bn])
            accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)


@triton.jit
def tma_copy(in_desc_ptr, out_desc_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = tl._experimental_descriptor_load(in_desc_ptr, [pid_m * BLOCK_M, pid_n * BLOCK_N], [BLOCK_M, BLOCK_N],
                                         tl.float16)
    tl._experimental_descriptor_store(out_desc_ptr, x, [pid_m * BLOCK_M, pid_n * BLOCK_N])


def descriptor(t, rows: int, cols: int):
    """A CUtensorMap for t, filled on the host (3.0 takes a writable buffer; 3.1-3.3 its address)."""
    desc = np.empty(TMA_SIZE, dtype=np.int8)
    fill = triton.runtime.driver.active.utils.fill_2d_tma_descriptor
    try:
        fill(t.data_ptr(), t.shape[0], t.shape[1], rows, cols, t.element_size(), desc)
    except TypeError:
        fill(t.data_ptr(), t.shape[0], t.shape[1], rows, cols, t.element_size(), desc.ctypes.data)
    return torch.tensor(desc, device="cuda")


def matmul_tma_persistent(a, b):
    """C = A @ B.T for A (M, K) and B (N, K) fp16."""
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    desc_a = descriptor(a, BLOCK_SIZE_M, BLOCK_SIZE_K)
    desc_b = descriptor(b, BLOCK_SIZE_N, BLOCK_SIZE_K)
    desc_c = descriptor(c, BLOCK_SIZE_M, BLOCK_SIZE_N)
    num_sms = torch.cuda.get_device_properties("cuda").multi_processor_count
    grid = lambda META: (min(num_sms, triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"])),)
    matmul_kernel_tma_persistent[grid](desc_a, desc_b, desc_c, M, N, K, BLOCK_SIZE_M=BLOCK_SIZE_M,
                                       BLOCK_SIZE_N=BLOCK_SIZE_N, BLOCK_SIZE_K=BLOCK_SIZE_K,
                                       GROUP_SIZE_M=GROUP_SIZE_M, FP8_OUTPUT=False, NUM_SMS=num_sms,
                                       num_stages=4, num_warps=8)
    return c


def copy(x, block=(128, 128)):
    y = torch.empty_like(x)
    grid = (x.shape[0] // block[0], x.shape[1] // block[1])
    tma_copy[grid](descriptor(x, *block), descriptor(y, *block), BLOCK_M=block[0], BLOCK_N=block[1], num_warps=4)
    return y


def main() -> None:
    torch.manual_seed(0)
    n = 256 if "--tiny" in sys.argv[1:] else 4096
    for m in (n, n // 2):
        a = torch.randn((m, n), device="cuda", dtype=torch.float16)
        b = torch.randn((n, n), device="cuda", dtype=torch.float16)
        c = matmul_tma_persistent(a, b)
        torch.testing.assert_close(c.float(), a.float() @ b.float().T, rtol=1e-2, atol=1.0)
    x = torch.randn((n, n), device="cuda", dtype=torch.float16)
    assert torch.equal(copy(x), x)
    torch.cuda.synchronize()
    print("experimental_tma_persistent: matmul and copy match torch")


if __name__ == "__main__":
    main()
