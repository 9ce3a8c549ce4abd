"""A program with several kernels, one autotuned, one launched at several shapes; it takes its
device from the active driver, as Triton's tutorials do. Usage: several.py"""

import torch
import trace_kernels as K
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
triton.set_allocator(lambda size, align, stream: torch.empty(size, dtype=torch.int8, device=DEVICE))

# scale at 64 and 128 (sizes divisible by 16: one specialisation), then at 100 (a second one).
for n in (64, 128, 100):
    x = torch.arange(n, dtype=torch.float32, device=DEVICE)
    y = torch.empty_like(x)
    K.scale[(triton.cdiv(n, 32),)](x, y, n, BLOCK=32)
    assert torch.equal(y, 3 * x)

# add: autotuned over three configs, at one size.
x = torch.rand(256, device=DEVICE)
out = torch.empty_like(x)
K.add[lambda meta: (triton.cdiv(256, meta["BLOCK"]),)](x, x, out, 256)
assert torch.equal(out, 2 * x)

a = torch.randn(64, 64, dtype=torch.float16, device=DEVICE)
b = torch.empty_like(a)
K.copy_device_desc[(2, 2)](a, b, 64, 64, BM=32, BN=32)
assert torch.equal(a, b)

c = torch.empty_like(a)
sd, dd = K.host_descriptors(a, c, [32, 32])
K.copy_host_desc[(2, 2)](sd, dd, BM=32, BN=32)
assert torch.equal(a, c)

r = torch.empty(64, dtype=torch.float32, device=DEVICE)
K.row_sum[(64,)](a, r, a.stride(0), N=64, ACC=tl.float32, BIAS=None)
assert torch.allclose(r, a.float().sum(1), atol=1e-2)
# Timing as tutorials do: triton.testing.do_bench asks the driver's device interface for events.
x = torch.arange(64, dtype=torch.float32, device=DEVICE)
y = torch.empty_like(x)
assert triton.testing.do_bench(lambda: K.scale[(2,)](x, y, 64, BLOCK=32), warmup=1, rep=5) > 0
print("several: done")
