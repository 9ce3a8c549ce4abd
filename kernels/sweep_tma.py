"""Parametrised TMA copies for the `tma-invariants` sweep: one kernel per API family whose
constexprs each move one TMA invariant away from the family's P0 (kernels/suite.toml).

The element type comes from the signature (`*fp16`, `tensordesc<bf16[...]>`), or for the
experimental descriptors (which take untyped `*i8` descriptors) from the `ref` pointer's type.
INNER is the innermost stride as a constant (1 in the P0); the `_runtime_stride` kernels take it
at run time (`S`). Strides are written out in each call, never held in a local: 3.5+ refuse a
constexpr that went through a local variable as a descriptor stride.
BOUNDARY: 0 plain tile (P0), 1 masked select before the store, 2 a loop over a row of tiles
whose last tile hangs over N (clipped by the descriptor, or by boundary_check/padding).
The `_rank<r>` kernels: rank r > 2 puts r - 2 unit dimensions in front of the BM x BN box.
"""

import triton
import triton.language as tl

make_desc = getattr(tl, "make_tensor_descriptor", None) or getattr(tl, "_experimental_make_tensor_descriptor", None)


@triton.jit
def block_ptr_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, INNER: tl.constexpr,
                   ORDER: tl.constexpr, BOUNDARY: tl.constexpr):
    # ORDER 0 is the P0's order (1, 0); 1 is (0, 1).
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    if BOUNDARY == 2:
        cols = tl.arange(0, BN)
        for start in range(0, N, BN):
            s = tl.make_block_ptr(src, (M, N), (N, INNER), (pm * BM, start), (BM, BN), (1, 0))
            d = tl.make_block_ptr(dst, (M, N), (N, INNER), (pm * BM, start), (BM, BN), (1, 0))
            x = tl.load(s, boundary_check=(0, 1), padding_option="zero")
            x = tl.where((start + cols)[None, :] < N, x, tl.zeros_like(x))
            tl.store(d, x, boundary_check=(0, 1))
    elif ORDER == 1:
        s = tl.make_block_ptr(src, (M, N), (N, INNER), (pm * BM, pn * BN), (BM, BN), (0, 1))
        d = tl.make_block_ptr(dst, (M, N), (N, INNER), (pm * BM, pn * BN), (BM, BN), (0, 1))
        tl.store(d, tl.load(s))
    else:
        s = tl.make_block_ptr(src, (M, N), (N, INNER), (pm * BM, pn * BN), (BM, BN), (1, 0))
        d = tl.make_block_ptr(dst, (M, N), (N, INNER), (pm * BM, pn * BN), (BM, BN), (1, 0))
        if BOUNDARY == 1:
            tl.store(d, tl.load(s, boundary_check=(0, 1), padding_option="zero"), boundary_check=(0, 1))
        else:
            tl.store(d, tl.load(s))


@triton.jit
def block_ptr_copy_runtime_stride(src, dst, M, N, S, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = tl.make_block_ptr(src, (M, N), (N, S), (pm * BM, pn * BN), (BM, BN), (1, 0))
    d = tl.make_block_ptr(dst, (M, N), (N, S), (pm * BM, pn * BN), (BM, BN), (1, 0))
    tl.store(d, tl.load(s))


@triton.jit
def experimental_copy(src_desc, dst_desc, ref, N, BM: tl.constexpr, BN: tl.constexpr, BOUNDARY: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    if BOUNDARY == 2:
        cols = tl.arange(0, BN)
        for start in range(0, N, BN):
            x = tl._experimental_descriptor_load(src_desc, [pm * BM, start], [BM, BN], ref.dtype.element_ty)
            x = tl.where((start + cols)[None, :] < N, x, tl.zeros_like(x))
            tl._experimental_descriptor_store(dst_desc, x, [pm * BM, start])
    else:
        x = tl._experimental_descriptor_load(src_desc, [pm * BM, pn * BN], [BM, BN], ref.dtype.element_ty)
        if BOUNDARY == 1:
            cols = pn * BN + tl.arange(0, BN)
            x = tl.where(cols[None, :] < N, x, tl.zeros_like(x))
        tl._experimental_descriptor_store(dst_desc, x, [pm * BM, pn * BN])


@triton.jit
def tensor_desc_copy(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr, INNER: tl.constexpr,
                     BOUNDARY: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[M, N], strides=[N, INNER], block_shape=[BM, BN])
    d = make_desc(dst, shape=[M, N], strides=[N, INNER], block_shape=[BM, BN])
    if BOUNDARY == 2:
        cols = tl.arange(0, BN)
        for start in range(0, N, BN):
            x = s.load([pm * BM, start])
            x = tl.where((start + cols)[None, :] < N, x, tl.zeros_like(x))
            d.store([pm * BM, start], x)
    else:
        x = s.load([pm * BM, pn * BN])
        if BOUNDARY == 1:
            cols = pn * BN + tl.arange(0, BN)
            x = tl.where(cols[None, :] < N, x, tl.zeros_like(x))
        d.store([pm * BM, pn * BN], x)


@triton.jit
def tensor_desc_copy_runtime_stride(src, dst, M, N, S, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[M, N], strides=[N, S], block_shape=[BM, BN])
    d = make_desc(dst, shape=[M, N], strides=[N, S], block_shape=[BM, BN])
    d.store([pm * BM, pn * BN], s.load([pm * BM, pn * BN]))


@triton.jit
def tensor_desc_copy_rank1(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pn = tl.program_id(1)
    s = make_desc(src, shape=[N], strides=[1], block_shape=[BN])
    d = make_desc(dst, shape=[N], strides=[1], block_shape=[BN])
    d.store([pn * BN], s.load([pn * BN]))


@triton.jit
def tensor_desc_copy_rank3(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[1, M, N], strides=[M * N, N, 1], block_shape=[1, BM, BN])
    d = make_desc(dst, shape=[1, M, N], strides=[M * N, N, 1], block_shape=[1, BM, BN])
    d.store([0, pm * BM, pn * BN], s.load([0, pm * BM, pn * BN]))


@triton.jit
def tensor_desc_copy_rank4(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[1, 1, M, N], strides=[M * N, M * N, N, 1], block_shape=[1, 1, BM, BN])
    d = make_desc(dst, shape=[1, 1, M, N], strides=[M * N, M * N, N, 1], block_shape=[1, 1, BM, BN])
    d.store([0, 0, pm * BM, pn * BN], s.load([0, 0, pm * BM, pn * BN]))


@triton.jit
def tensor_desc_copy_rank5(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[1, 1, 1, M, N], strides=[M * N, M * N, M * N, N, 1], block_shape=[1, 1, 1, BM, BN])
    d = make_desc(dst, shape=[1, 1, 1, M, N], strides=[M * N, M * N, M * N, N, 1], block_shape=[1, 1, 1, BM, BN])
    d.store([0, 0, 0, pm * BM, pn * BN], s.load([0, 0, 0, pm * BM, pn * BN]))


@triton.jit
def tensor_desc_copy_rank6(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = make_desc(src, shape=[1, 1, 1, 1, M, N], strides=[M * N, M * N, M * N, M * N, N, 1],
                  block_shape=[1, 1, 1, 1, BM, BN])
    d = make_desc(dst, shape=[1, 1, 1, 1, M, N], strides=[M * N, M * N, M * N, M * N, N, 1],
                  block_shape=[1, 1, 1, 1, BM, BN])
    d.store([0, 0, 0, 0, pm * BM, pn * BN], s.load([0, 0, 0, 0, pm * BM, pn * BN]))


@triton.jit
def host_desc_copy(src_desc, dst_desc, N, BM: tl.constexpr, BN: tl.constexpr, RANK: tl.constexpr,
                   BOUNDARY: tl.constexpr):
    # The descriptor's rank and box come from the signature's `tensordesc<dtype[box]>`; RANK
    # must match it, since the coordinates are written out per rank.
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    if RANK == 1:
        dst_desc.store([pn * BN], src_desc.load([pn * BN]))
    elif RANK == 3:
        dst_desc.store([0, pm * BM, pn * BN], src_desc.load([0, pm * BM, pn * BN]))
    elif RANK == 4:
        dst_desc.store([0, 0, pm * BM, pn * BN], src_desc.load([0, 0, pm * BM, pn * BN]))
    elif RANK == 5:
        dst_desc.store([0, 0, 0, pm * BM, pn * BN], src_desc.load([0, 0, 0, pm * BM, pn * BN]))
    elif RANK == 6:
        dst_desc.store([0, 0, 0, 0, pm * BM, pn * BN], src_desc.load([0, 0, 0, 0, pm * BM, pn * BN]))
    elif BOUNDARY == 2:
        cols = tl.arange(0, BN)
        for start in range(0, N, BN):
            x = src_desc.load([pm * BM, start])
            x = tl.where((start + cols)[None, :] < N, x, tl.zeros_like(x))
            dst_desc.store([pm * BM, start], x)
    else:
        x = src_desc.load([pm * BM, pn * BN])
        if BOUNDARY == 1:
            cols = pn * BN + tl.arange(0, BN)
            x = tl.where(cols[None, :] < N, x, tl.zeros_like(x))
        dst_desc.store([pm * BM, pn * BN], x)
