"""How kernel libraries make and launch kernels, each in the smallest form: a kernel made by a
factory (its closure's constants differ per kernel), a kernel reached through a wrapper
(functools.wraps over the launcher, and a class that holds the kernel), `launch_metadata=` and
`repr=` on the decorator (neither changes the compile), and a tuple of tensors as one argument.
Triton's interpreter runs a kernel with its module's globals only, so a factory kernel's closure
names are undefined there: under it those launches fail, and the program goes on past them (each
is recorded before it launches; on a GPU they run)."""

import functools

import torch
import triton
import triton.language as tl


def make_scale(factor: float, block: int):
    FACTOR = tl.constexpr(factor)
    BLOCK = tl.constexpr(block)

    @triton.jit
    def scale_kernel(x_ptr, y_ptr, n):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * FACTOR, mask=mask)

    return scale_kernel


double, triple = make_scale(2.0, 64), make_scale(3.0, 128)


def _metadata(grid, kernel, args):
    return {"name": f"add_meta[n={args['n']}]"}


def _repr(specialization):
    return "add_meta"


@triton.jit(launch_metadata=_metadata, repr=_repr)
def add_meta(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)


@triton.jit
def sum_pair(pair, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    a = tl.load(pair[0] + offs, mask=mask)
    b = tl.load(pair[1] + offs, mask=mask)
    tl.store(out_ptr + offs, a + b, mask=mask)


def timed(fn):
    @functools.wraps(fn)
    def inner(*args, **kwargs):
        return fn(*args, **kwargs)

    return inner


class Op:
    """A library's op object: the kernel is an attribute, launched from a method."""

    def __init__(self, kernel):
        self.kernel = kernel

    @timed
    def __call__(self, x, y, out):
        self.kernel[(triton.cdiv(x.numel(), 32),)](x, y, out, x.numel(), BLOCK=32)
        return out


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x, y = torch.randn(200, device=device), torch.randn(200, device=device)
    out = torch.empty_like(x)
    for kernel, factor, block in ((double, 2.0, 64), (triple, 3.0, 128)):
        try:
            kernel[(triton.cdiv(200, block),)](x, out, 200)
        except Exception as e:  # noqa: BLE001 - the interpreter's closures (see the docstring)
            if device != "cpu":
                raise
            print(f"factory kernel x{factor}: the interpreter cannot run closures: {type(e).__name__}")
            continue
        torch.testing.assert_close(out, x * factor)
    torch.testing.assert_close(Op(add_meta)(x, y, out), x + y)
    sum_pair[(1,)]((x, y), out, 200, BLOCK=256)
    torch.testing.assert_close(out, x + y)


if __name__ == "__main__":
    main()
