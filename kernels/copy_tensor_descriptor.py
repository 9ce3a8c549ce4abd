"""Device-side tensor descriptors: `tl.make_tensor_descriptor` (3.4+), spelled
`tl._experimental_make_tensor_descriptor` before that. Creating one in a kernel needs a
global scratch allocator at run time (`triton.set_allocator`), not at compile time."""

import triton
import triton.language as tl

# Resolved when the module loads, so one source serves both spellings.
make_desc = getattr(tl, "make_tensor_descriptor", None) or getattr(tl, "_experimental_make_tensor_descriptor", None)


@triton.jit
def copy_p0(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    d = make_desc(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    d.store([pm * BM, pn * BN], s.load([pm * BM, pn * BN]))


@triton.jit
def copy_p1_strided(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, INNER: tl.constexpr):
    # Broken invariant: innermost stride INNER (2), not 1.
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[M, N], strides=[N, INNER], block_shape=[BM, BN])
    d = make_desc(dst, shape=[M, N], strides=[N, INNER], block_shape=[BM, BN])
    d.store([pm * BM, pn * BN], s.load([pm * BM, pn * BN]))


@triton.jit
def copy_p2_stress(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Descriptors created inside the loop on every iteration, tails clipped by the descriptor's
    # shape, and a masked select before the store.
    pm = tl.program_id(0)
    cols = tl.arange(0, BN)
    for start in range(0, N, BN):
        s = make_desc(src, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        d = make_desc(dst, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
        x = s.load([pm * BM, start])
        x = tl.where((start + cols)[None, :] < N, x, 0.0)
        d.store([pm * BM, start], x)
