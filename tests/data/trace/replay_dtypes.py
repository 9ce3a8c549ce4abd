"""Kernels whose outputs are fp32, fp16, bf16 and int32, each launched once on random inputs into
an output that torch.empty left unset, so only the recorded tensors reproduce the recorded
outputs; the int32 kernel then again at another block size into the same output. With REPLAY_PLANT=1 the fp32 and int32 kernels are off by a little (a planted
mismatch between two traces of this program); the others are unchanged. It picks its device
from torch."""

import os

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
PLANT = tl.constexpr(1 if os.environ.get("REPLAY_PLANT") == "1" else 0)


@triton.jit
def axpy(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    y = tl.load(y_ptr + offs, mask=m)
    r = alpha * x.to(tl.float32) + y.to(tl.float32)
    tl.store(out_ptr + offs, r.to(out_ptr.dtype.element_ty), mask=m)


@triton.jit
def axpy_planted(x_ptr, y_ptr, out_ptr, n, alpha, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = alpha * tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m)
    if PLANT:
        r = r * 1.001  # 0.1%: beyond fp32's tolerance
    tl.store(out_ptr + offs, r, mask=m)


@triton.jit
def count_up(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    r = tl.load(x_ptr + offs, mask=m) * 3
    if PLANT:
        r = r + 1
    tl.store(out_ptr + offs, r, mask=m)


if __name__ == "__main__":
    torch.manual_seed(0)
    n = 1000
    for dt in (torch.float16, torch.bfloat16):
        x, y = torch.randn(n, device=DEVICE, dtype=dt), torch.randn(n, device=DEVICE, dtype=dt)
        out = torch.empty(n, device=DEVICE, dtype=dt)
        axpy[(triton.cdiv(n, 256),)](x, y, out, n, 0.5, BLOCK=256)
    x, y = torch.randn(n, device=DEVICE), torch.randn(n, device=DEVICE)
    out = torch.empty(n, device=DEVICE)
    axpy_planted[(triton.cdiv(n, 256),)](x, y, out, n, 0.5, BLOCK=256)
    xi = torch.randint(0, 100, (n,), device=DEVICE, dtype=torch.int32)
    oi = torch.empty(n, device=DEVICE, dtype=torch.int32)
    count_up[(triton.cdiv(n, 256),)](xi, oi, n, BLOCK=256)
    # a second specialisation into the same output: its recorded input already holds what it
    # writes (as an autotuner's second config finds the first one's output)
    count_up[(triton.cdiv(n, 128),)](xi, oi, n, BLOCK=128)
    print("replay_dtypes: done")
