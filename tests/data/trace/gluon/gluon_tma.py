"""Triton's Gluon TMA tutorial (python/tutorials/gluon/04-tma.py, triton-lang/triton; MIT
licence): its two kernels and their launchers kept as written, the tests, the benchmark and the
import of the previous tutorial dropped, run on small shapes.

Gluon has no interpreter mode: on a host without a GPU each launch compiles (for the stand-in
driver's target) and then fails, having been recorded, and the program goes on past it; on a
Hopper GPU every launch runs and is checked."""

import sys

import torch
import triton
from triton.experimental import gluon
from triton.experimental.gluon import language as gl
from triton.experimental.gluon.language.nvidia.hopper import fence_async_shared, mbarrier, tma
from triton.experimental.gluon.nvidia.hopper import TensorDescriptor


@gluon.jit
def memcpy_1d_tma_kernel(in_desc, out_desc, XBLOCK: gl.constexpr):
    pid = gl.program_id(0)
    smem_layout: gl.constexpr = in_desc.layout
    smem = gl.allocate_shared_memory(in_desc.dtype, [XBLOCK], smem_layout)
    bar = gl.allocate_shared_memory(gl.int64, [1], mbarrier.MBarrierLayout())
    mbarrier.init(bar, count=1)
    gl.static_assert(in_desc.block_type == out_desc.block_type)
    gl.static_assert(in_desc.layout == out_desc.layout)
    mbarrier.expect(bar, in_desc.block_type.nbytes)
    tma.async_copy_global_to_shared(in_desc, [pid * XBLOCK], bar, smem)
    mbarrier.wait(bar, phase=0)
    mbarrier.invalidate(bar)
    tma.async_copy_shared_to_global(out_desc, [pid * XBLOCK], smem)
    tma.store_wait(pendings=0)


def memcpy_1d_tma(input, output, XBLOCK=8192):
    assert input.shape == output.shape
    block_shape = [XBLOCK]
    layout = gl.NVMMASharedLayout.get_default_for(block_shape, gl.float32)
    in_desc = TensorDescriptor(input, input.shape, input.stride(), block_shape, layout)
    out_desc = TensorDescriptor(output, output.shape, output.stride(), block_shape, layout)
    grid = (triton.cdiv(input.numel(), XBLOCK), )
    memcpy_1d_tma_kernel[grid](in_desc, out_desc, XBLOCK, num_warps=1)


@gluon.jit
def elementwise_add_tma_kernel(  #
        a_desc, b_desc, c_desc, xnumel, ynumel,  #
        XBLOCK: gl.constexpr, YBLOCK: gl.constexpr, num_buffers: gl.constexpr):
    pid = gl.program_id(0)
    layout: gl.constexpr = gl.BlockedLayout([1, 1], [1, 32], [1, 4], [1, 0])
    xoff = pid * XBLOCK

    dtype: gl.constexpr = a_desc.type.block_type.element_ty
    a_smem = gl.allocate_shared_memory(dtype, [num_buffers, XBLOCK, YBLOCK], a_desc.layout)
    b_smem = gl.allocate_shared_memory(dtype, [num_buffers, XBLOCK, YBLOCK], b_desc.layout)
    c_smem = gl.allocate_shared_memory(dtype, [XBLOCK, YBLOCK], c_desc.layout)
    bars = gl.allocate_shared_memory(gl.int64, [num_buffers, 1], mbarrier.MBarrierLayout())
    for i in gl.static_range(num_buffers):
        mbarrier.init(bars.index(i), count=1)

    copy_index = 0
    read_index = 0

    for _ in gl.static_range(num_buffers - 1):
        yoff = copy_index * YBLOCK
        bar = bars.index(copy_index % num_buffers)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [xoff, yoff], bar, a_smem.index(copy_index % num_buffers))
        tma.async_copy_global_to_shared(b_desc, [xoff, yoff], bar, b_smem.index(copy_index % num_buffers))
        copy_index += 1

    for _ in range(gl.cdiv(ynumel, YBLOCK) - (num_buffers - 1)):
        yoff = copy_index * YBLOCK
        bar = bars.index(copy_index % num_buffers)
        mbarrier.expect(bar, a_desc.block_type.nbytes + b_desc.block_type.nbytes)
        tma.async_copy_global_to_shared(a_desc, [xoff, yoff], bar, a_smem.index(copy_index % num_buffers))
        tma.async_copy_global_to_shared(b_desc, [xoff, yoff], bar, b_smem.index(copy_index % num_buffers))
        copy_index += 1

        read_phase = read_index // num_buffers & 1
        mbarrier.wait(bars.index(read_index % num_buffers), read_phase)
        a_val = a_smem.index(read_index % num_buffers).load(layout)
        b_val = b_smem.index(read_index % num_buffers).load(layout)
        c_val = a_val + b_val
        yoff = read_index * YBLOCK
        tma.store_wait(pendings=0)
        c_smem.store(c_val)
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [xoff, yoff], c_smem)
        read_index += 1

    for _ in gl.static_range(num_buffers - 1):
        read_phase = read_index // num_buffers & 1
        mbarrier.wait(bars.index(read_index % num_buffers), read_phase)
        a_val = a_smem.index(read_index % num_buffers).load(layout)
        b_val = b_smem.index(read_index % num_buffers).load(layout)
        c_val = a_val + b_val
        yoff = read_index * YBLOCK
        tma.store_wait(pendings=0)
        c_smem.store(c_val)
        fence_async_shared()
        tma.async_copy_shared_to_global(c_desc, [xoff, yoff], c_smem)
        read_index += 1

    for i in gl.static_range(num_buffers):
        mbarrier.invalidate(bars.index(i))

    tma.store_wait(pendings=0)


def elementwise_add_tma(a, b, c, XBLOCK=32, YBLOCK=64, num_buffers=2):
    assert a.shape == b.shape == c.shape
    xnumel, ynumel = a.shape
    grid = (triton.cdiv(xnumel, XBLOCK), )
    block_shape = [XBLOCK, YBLOCK]
    layout = gl.NVMMASharedLayout.get_default_for(block_shape, gl.float32)
    a_desc = TensorDescriptor(a, a.shape, a.stride(), block_shape, layout)
    b_desc = TensorDescriptor(b, b.shape, b.stride(), block_shape, layout)
    c_desc = TensorDescriptor(c, c.shape, c.stride(), block_shape, layout)
    elementwise_add_tma_kernel[grid](a_desc, b_desc, c_desc, xnumel, ynumel, XBLOCK, YBLOCK, num_buffers)


def launched(what, fn):
    """Run one launch; without a GPU, its launch failure is said and the program goes on."""
    try:
        fn()
    except AttributeError as e:  # the stand-in driver (no GPU) has no launcher: compiled, not launched
        if torch.cuda.is_available():
            raise
        print(f"{what}: compiled, not launched (no GPU): {e}", file=sys.stderr)
        return False
    return True


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    torch.manual_seed(0)
    x = torch.randn(500, device=device)
    y = torch.empty_like(x)
    if launched("memcpy_1d_tma", lambda: memcpy_1d_tma(x, y, 64)):
        torch.testing.assert_close(x, y, atol=0, rtol=0)
    a, b = torch.randn(100, 200, device=device), torch.randn(100, 200, device=device)
    c = torch.empty_like(a)
    if launched("elementwise_add_tma", lambda: elementwise_add_tma(a, b, c, 32, 64, 2)):
        torch.testing.assert_close(a + b, c, atol=0, rtol=0)


if __name__ == "__main__":
    main()
