"""A program that needs CUDA itself before its first launch: it makes its tensors on "cuda", as
Triton's persistent-matmul tutorial's allocator does (`torch.empty(size, device="cuda")`). Under
the interpreter on a CPU host it can only fail, and trace must say why. Usage: cuda_only.py"""

import torch
import triton
import triton.language as tl


@triton.jit
def fill(x_ptr, BLOCK: tl.constexpr):
    tl.store(x_ptr + tl.arange(0, BLOCK), 1.0)


x = torch.empty(64, device="cuda")
fill[(1,)](x, BLOCK=64)
