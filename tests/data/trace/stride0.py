"""A kernel reading a broadcast (stride-0) tensor, as autograd hands a backward kernel the
gradient of a `.sum()` (flash-attn's cross-entropy backward reads `grad_losses` so). A replay
writes the recorded (or seeded) values into a view of the same strides, where torch's copy_
refuses memory that several elements share."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_rows(out_ptr, g_ptr, x_ptr, g_stride, n_cols, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    g = tl.load(g_ptr + row * g_stride)
    x = tl.load(x_ptr + row * n_cols + cols, mask=cols < n_cols)
    tl.store(out_ptr + row * n_cols + cols, x * g, mask=cols < n_cols)


M, N = 4, 32
x = torch.randn(M, N)
g = torch.full((), 2.0).expand(M)  # strides (0,): one element of memory
out = torch.empty_like(x)
scale_rows[(M,)](out, g, x, g.stride(0), N, BLOCK=32)
assert torch.equal(out, x * 2.0)
print("stride0: done", g.stride())
