"""A 16x8 fp32 tile of A @ B, K in steps of 16, each step a `tl.dot` with
`input_precision="tf32x3"` (each operand split into a big and a small tf32 part, three tf32 dots
summed): the pattern of triton-lang/triton#11526."""

import triton
import triton.language as tl


@triton.jit
def dot_tf32x3(a_ptr, b_ptr, c_ptr, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, K, BLOCK_K):
        a = tl.load(a_ptr + offs_m[:, None] * K + (k + offs_k)[None, :])
        b = tl.load(b_ptr + (k + offs_k)[:, None] * BLOCK_N + offs_n[None, :])
        acc = tl.dot(a, b, acc, input_precision="tf32x3")
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], acc)
