"""One 16x16x16 fp32 tile product with `input_precision="tf32x3"`: Triton splits each operand
into a big and a small tf32 part and sums three tf32 dots, the pattern of triton-lang/triton#11526."""

import triton
import triton.language as tl


@triton.jit
def dot_tf32x3(a_ptr, b_ptr, c_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    offs_m = tl.arange(0, BLOCK_M)
    offs_n = tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, BLOCK_K)
    a = tl.load(a_ptr + offs_m[:, None] * BLOCK_K + offs_k[None, :])
    b = tl.load(b_ptr + offs_k[:, None] * BLOCK_N + offs_n[None, :])
    c = tl.dot(a, b, input_precision="tf32x3")
    tl.store(c_ptr + offs_m[:, None] * BLOCK_N + offs_n[None, :], c)
