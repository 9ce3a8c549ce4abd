"""A program that is handed secrets on its command line and prints one back before it fails, with
a write-only output it allocates with torch.empty and an input whose bytes hold a short user name.
Usage: planted_secrets.py (not secrets.py: that would hide the standard library's module from numpy) [--api-key K] [--token=T] ...; the user name (USER) sits in the input bytes."""

import os
import random
import sys

import torch
import triton
import triton.language as tl

DEVICE = triton.runtime.driver.active.get_active_torch_device()
NAME = os.environ.get("USER", "amy").encode()


@triton.jit
def copy_bytes(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # A service token pasted into a comment: ghp_Zk3Lq9Wm2Xv7Rt5Yp8Nb4Hc6Jd1Fs0Ga2Qe
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


# Random bytes (fixed seed) with the name in them, as a short name turns up by chance in 16 MiB
# of random floats.
data = bytearray(random.Random(7).randbytes(1 << 16))
data[1000:1000 + len(NAME)] = NAME
x = torch.frombuffer(data, dtype=torch.uint8).to(DEVICE)
out = torch.empty_like(x)
copy_bytes[(triton.cdiv(x.numel(), 1024),)](x, out, x.numel(), BLOCK=1024)
assert torch.equal(out, x)
print("using " + " ".join(sys.argv[1:]), file=sys.stderr)
sys.exit(3)
