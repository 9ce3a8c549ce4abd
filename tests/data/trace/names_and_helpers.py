"""Patterns public libraries have (flash-linear-attention, torchao): kernels calling Triton's own
@jit helpers (tl.sum, tl.sigmoid), and module-level names of the program that share a name with an
attribute the kernel reads (`tl.maximum`, `tl.sigmoid`) without being used by it: a host helper
under a decorator of this module, and an autograd function's `apply`. The program checks itself."""

import functools

import torch
import triton
import triton.language as tl


def logged(f):
    @functools.wraps(f)
    def wrapper(*a, **k):
        return f(*a, **k)
    return wrapper


@logged
def maximum(a, b):  # host-side, never used by a kernel
    return torch.maximum(a, b)


class SigmoidFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return torch.sigmoid(x)


sigmoid = SigmoidFunction.apply  # host-side, never used by a kernel


@triton.jit
def row_sum(x_ptr, y_ptr, N: tl.constexpr):
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * N + tl.arange(0, N))
    tl.store(y_ptr + row, tl.sum(x, axis=0))


@triton.jit
def relu_gate(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0) * tl.sigmoid(x), mask=m)


x = torch.randn(4, 16)
y = torch.empty(4)
row_sum[(4,)](x, y, N=16)
torch.testing.assert_close(y, x.sum(1))
v = torch.randn(100)
w = torch.empty(100)
relu_gate[(2,)](v, w, 100, BLOCK=64)
torch.testing.assert_close(w, maximum(v, torch.zeros(())) * sigmoid(v))
print("OK")
