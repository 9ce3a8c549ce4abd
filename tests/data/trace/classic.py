"""Kernels every release 3.0-3.9 runs under the interpreter: one at two shapes, one autotuned,
one with dtype and None constexprs. It picks its device from torch."""

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2), triton.Config({"BLOCK": 64}, num_warps=4)],
                 key=["n"])
@triton.jit
def inc(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


# Results are not checked: 3.0's interpreter with today's CPU torch leaves stores unwritten.
for n in (32, 96, 90):  # 32 and 96: one specialisation; 90: a second
    x = torch.ones(n, device=DEVICE)
    double[(triton.cdiv(n, 32),)](x, n, BLOCK=32)

x = torch.zeros(128, device=DEVICE)
# The autotuner runs each config (on a GPU, many times), then the chosen one: x is not checked.
inc[lambda meta: (triton.cdiv(128, meta["BLOCK"]),)](x, 128)
print("classic: done")
