"""A kernel whose parameter defaults name module-level values (gemlite's `block_quant_size:
tl.constexpr = BLOCK_QUANT_SIZE`, imported from its config module): the defaults are evaluated
when the `def` runs, so the kernel's file must define them, though its body never reads them.
Checks itself."""

import torch
import triton
import triton.language as tl

BLOCK = 64
SCALE = 2.0


@triton.jit
def copy_scaled(x_ptr, y_ptr, n, BLOCK_SIZE: tl.constexpr = BLOCK, FACTOR: tl.constexpr = SCALE):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * FACTOR, mask=offs < n)


x = torch.randn(100)
y = torch.empty_like(x)
copy_scaled[(triton.cdiv(100, BLOCK),)](x, y, 100)
torch.testing.assert_close(y, x * SCALE)
print("OK")
