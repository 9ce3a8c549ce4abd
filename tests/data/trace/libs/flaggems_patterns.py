"""Patterns of FlagGems 5.0.2 that reprokit got wrong, each in its smallest form: a module-level
`@tl.constexpr` function the kernel calls for a type (its file had held the function's repr, a
harness_error); a tensor stand-in (FlagGems' StridedBuffer: data_ptr, dtype, stride, no torch
tensor) passed as a pointer, which `--tensors small` tried to copy and failed the program; and a
@jit helper reached through a package (`tle.program_id`) whose import raises without the program's
own setup: its helpers are copied beside the kernel, so the capture needs no package; one
reached through a module of the package (`tle.inner.program_id`) is not, and the capture cannot
load the package (capture_failed, not a harness_error). Checks itself."""

import os

os.environ["FUSSY_READY"] = "1"  # the program's own setup, in its own process only

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from fussy import ext as tle  # noqa: E402


@tl.constexpr
def acc_type(dtype: tl.dtype) -> tl.dtype:
    return tl.float32 if dtype.is_fp16() or dtype.is_bf16() else dtype


@triton.jit
def cumsum_row(x_ptr, y_ptr, N, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    acc: tl.constexpr = acc_type(x_ptr.type.element_ty)
    x = tl.load(x_ptr + row * N + offs, mask=offs < N, other=0).to(acc)
    tl.store(y_ptr + row * N + offs, tl.cumsum(x, 0), mask=offs < N)


class Buf:
    """Not a torch tensor: what a kernel library hands the JIT as a pointer."""

    def __init__(self, base):
        self._base, self.dtype, self.shape, self.device = base, base.dtype, tuple(base.shape), base.device

    def data_ptr(self):
        return self._base.data_ptr()

    def stride(self):
        return self._base.stride()

    def numel(self):
        return self._base.numel()

    def element_size(self):
        return self._base.element_size()


if os.environ.get("TRITON_INTERPRET") == "1":
    # the interpreter copies pointer arguments as torch tensors: it is given the base (FlagGems
    # does the same under the interpreter); on a GPU nothing is needed
    import triton.runtime.interpreter as interp

    _unwrap = interp._unwrap_tensor
    interp._unwrap_tensor = lambda t: t._base if isinstance(t, Buf) else _unwrap(t)


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tle.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)


@triton.jit
def add_two(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tle.inner.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 2, mask=m)


x = torch.randn(3, 20)
y = torch.empty_like(x)
cumsum_row[(3,)](x, y, 20, BLOCK=32)
torch.testing.assert_close(y, x.cumsum(1), atol=1e-5, rtol=1e-5)
v = torch.randn(100)
w = torch.empty(100)
add_one[(4,)](Buf(v), Buf(w), 100, BLOCK=32)
torch.testing.assert_close(w, v + 1)
add_two[(4,)](v, w, 100, BLOCK=32)
torch.testing.assert_close(w, v + 2)
print("OK")
