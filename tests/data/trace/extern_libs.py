"""A launch with `extern_libs={'libdevice': path}`, as Triton's libdevice tutorial (07) passes
it, on a kernel the interpreter can run (it has no libdevice itself). The option must be
recorded as the dict it is, so the capture compiles with it. Usage: extern_libs.py"""

from pathlib import Path

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def add_one(x_ptr, n, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, tl.load(x_ptr + o, mask=o < n) + 1, mask=o < n)


libdir = Path(triton.__file__).parent / "backends" / "nvidia" / "lib"
x = torch.zeros(64, device=DEVICE)
add_one[(1,)](x, 64, BLOCK=64, extern_libs={"libdevice": str(libdir / "libdevice.10.bc")})
assert torch.equal(x, torch.ones(64))
