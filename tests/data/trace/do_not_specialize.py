"""A kernel with `@triton.jit(do_not_specialize=["n"])`, launched as user programs do: n = 64
and n = 100 (one specialisation: n is never hinted), a misaligned view (a second), by keyword
(the first again), and through `kernel.run(...)` with an n past 2**31 (a third: n an i64).
Usage: do_not_specialize.py"""

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit(do_not_specialize=["n"])
def dns(x_ptr, n, scale, BLOCK: tl.constexpr = 64):
    o = tl.arange(0, BLOCK)
    v = tl.load(x_ptr + o, mask=o < n)
    tl.store(x_ptr + o, v * scale, mask=o < n)


x = torch.ones(200, dtype=torch.float32, device=DEVICE)
dns[(1,)](x, 64, 2.0)
dns[(1,)](x, 100, 2.0)
dns[(1,)](x[1:], 48, 2.0)
dns[(1,)](x_ptr=x, n=64, scale=2.0, BLOCK=64)
dns.run(x, 2**33, 1.0, grid=(1,), warmup=False, BLOCK=64)
assert x[0] == 8.0 and x[1] == 16.0
