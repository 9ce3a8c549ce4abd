"""Kernels the trace tests' programs launch: written the way public Triton kernels are (a helper
@jit, a module-level constexpr, autotune, device and host tensor descriptors). Importing this
module runs nothing."""

import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

SCALE = tl.constexpr(3)


@triton.jit
def _scaled(x):
    return x * SCALE


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, _scaled(tl.load(x_ptr + offs, mask=m)), mask=m)


@triton.autotune(configs=[triton.Config({"BLOCK": 32}, num_warps=2), triton.Config({"BLOCK": 64}, num_warps=4),
                          triton.Config({"BLOCK": 128}, num_warps=4, num_stages=2)], key=["n"])
@triton.jit
def add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=m) + tl.load(y_ptr + offs, mask=m), mask=m)


@triton.jit
def copy_device_desc(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    """TMA through device-side tensor descriptors (needs triton.set_allocator)."""
    s = tl.make_tensor_descriptor(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    d = tl.make_tensor_descriptor(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    pm, pn = tl.program_id(0), tl.program_id(1)
    d.store([pm * BM, pn * BN], s.load([pm * BM, pn * BN]))


@triton.jit
def copy_host_desc(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    """TMA through host-side TensorDescriptor arguments."""
    pm, pn = tl.program_id(0), tl.program_id(1)
    dst_desc.store([pm * BM, pn * BN], src_desc.load([pm * BM, pn * BN]))


@triton.jit
def row_sum(x_ptr, out_ptr, stride, N: tl.constexpr, ACC: tl.constexpr, BIAS: tl.constexpr):
    """Constexprs of other kinds: a tl dtype and None."""
    row = tl.program_id(0)
    x = tl.load(x_ptr + row * stride + tl.arange(0, N)).to(ACC)
    total = tl.sum(x, axis=0)
    if BIAS is not None:
        total += BIAS
    tl.store(out_ptr + row, total)


def host_descriptors(src, dst, block):
    return TensorDescriptor.from_tensor(src, block), TensorDescriptor.from_tensor(dst, block)
