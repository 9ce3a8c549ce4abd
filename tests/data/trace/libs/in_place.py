"""Arguments over one memory, as Liger-Kernel's RMSNorm backward passes them: the kernel reads dY
and writes dX into dY's memory (`dX_ptr` is `dY_ptr`), then a shift that reads a view of a
buffer and writes an overlapping view of the same buffer (`dst` = buf[:-4], `src` = buf[4:])."""

import torch
import triton
import triton.language as tl


@triton.jit
def scale_grad(dY_ptr, X_ptr, dX_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    dy = tl.load(dY_ptr + offs, mask=mask)
    x = tl.load(X_ptr + offs, mask=mask)
    tl.store(dX_ptr + offs, dy * x * 2.0 + 1.0, mask=mask)


@triton.jit
def shift(src, dst, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    v = tl.load(src + offs, mask=mask)
    tl.debug_barrier()
    tl.store(dst + offs, v * 3.0, mask=mask)


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    dy, x = torch.randn(1000, device=device), torch.randn(1000, device=device)
    want = dy * x * 2.0 + 1.0
    scale_grad[(triton.cdiv(1000, 256),)](dy, x, dy, 1000, BLOCK=256)  # dX into dY's memory
    torch.testing.assert_close(dy, want)
    buf = torch.randn(68, device=device)
    want = buf.clone()
    want[:-4] = buf[4:] * 3.0
    shift[(1,)](buf[4:], buf[:-4], 64, BLOCK=64)
    torch.testing.assert_close(buf, want)


if __name__ == "__main__":
    main()
