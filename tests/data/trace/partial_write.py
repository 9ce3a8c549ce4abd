"""A kernel that only stores to its output, and only to half of it: the other half keeps what the
program put there (7.0). Then the same body in place (input and output one tensor), where the
output's bytes are read through the input. Usage: partial_write.py"""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def double_head(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


x = torch.arange(256, dtype=torch.float32, device=DEVICE)
out = torch.full((256,), 7.0, dtype=torch.float32, device=DEVICE)
double_head[(1,)](x, out, 128, BLOCK=128)
assert torch.equal(out[:128], 2 * x[:128]) and torch.equal(out[128:], torch.full((128,), 7.0, device=DEVICE))


@triton.jit
def double_in_place(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)


y = torch.arange(256, dtype=torch.float32, device=DEVICE)
double_in_place[(1,)](y, y, 128, BLOCK=128)
assert torch.equal(y[:128], 2 * torch.arange(128, dtype=torch.float32, device=DEVICE))
