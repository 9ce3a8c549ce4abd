"""A program that launches one kernel, then fails midway. It picks its device from torch."""


import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def negate(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, -tl.load(x_ptr + offs, mask=m), mask=m)


if __name__ == "__main__":
    x = torch.ones(48, device=DEVICE)
    negate[(3,)](x, 48, BLOCK=16)
    assert float(x.sum()) == -48.0
    raise RuntimeError("the program gave up midway, as programs do")
    negate[(1,)](x, 47, BLOCK=64)  # never reached: must not be in the bundle
