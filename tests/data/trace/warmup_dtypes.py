"""`kernel.warmup(torch.float32, torch.float32, 1024, ...)`: Triton's ahead-of-time warm-up on
dtypes alone (it wraps them in 1-element MockTensors), then a real launch of the same
specialisation at n = 64. The case must be the launch's call, not the warm-up's stand-ins.
Usage: warmup_dtypes.py"""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)


copy.warmup(torch.float32, torch.float32, 1024, BLOCK=64, grid=(1,))
x = torch.rand(64, device=DEVICE)
y = torch.empty_like(x)
copy[(1,)](x, y, 64, BLOCK=64)
assert torch.equal(x, y)
