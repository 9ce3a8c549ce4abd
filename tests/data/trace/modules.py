"""A kernel that reaches a helper through the program's own module (`K._scaled`), as projects
split their kernels across files: the bundle must carry that module."""

import torch
import trace_kernels as K
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def via_module(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, K._scaled(tl.load(x_ptr + offs, mask=m)), mask=m)


x = torch.arange(64, dtype=torch.float32, device=DEVICE)
y = torch.empty_like(x)
via_module[(2,)](x, y, 64, BLOCK=32)
assert torch.equal(y, 3 * x)
print("modules: done")
