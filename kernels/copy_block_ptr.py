"""Block-pointer copies (`tl.make_block_ptr`): the API the original H100 investigation asked about."""

import triton
import triton.language as tl


@triton.jit
def copy_p0(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # The original P0: 4096x4096 fp16, 128x128 tiles, strides (N, 1), order (1, 0).
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = tl.make_block_ptr(src, shape=(M, N), strides=(N, 1), offsets=(pm * BM, pn * BN),
                          block_shape=(BM, BN), order=(1, 0))
    d = tl.make_block_ptr(dst, shape=(M, N), strides=(N, 1), offsets=(pm * BM, pn * BN),
                          block_shape=(BM, BN), order=(1, 0))
    tl.store(d, tl.load(s))


@triton.jit
def copy_p1_strided(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Broken invariant: the innermost stride is M, not 1 (a transposed view), which TMA cannot
    # address as a contiguous box.
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    s = tl.make_block_ptr(src, shape=(M, N), strides=(1, M), offsets=(pm * BM, pn * BN),
                          block_shape=(BM, BN), order=(1, 0))
    d = tl.make_block_ptr(dst, shape=(M, N), strides=(1, M), offsets=(pm * BM, pn * BN),
                          block_shape=(BM, BN), order=(1, 0))
    tl.store(d, tl.load(s))


@triton.jit
def copy_p2_stress(src, dst, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Block pointers built inside a loop, walking a row of tiles with tails on both edges
    # (boundary checks + zero padding), then a masked epilogue.
    pm = tl.program_id(0)
    for start in range(0, N, BN):
        s = tl.make_block_ptr(src, shape=(M, N), strides=(N, 1), offsets=(pm * BM, start),
                              block_shape=(BM, BN), order=(1, 0))
        d = tl.make_block_ptr(dst, shape=(M, N), strides=(N, 1), offsets=(pm * BM, start),
                              block_shape=(BM, BN), order=(1, 0))
        x = tl.load(s, boundary_check=(0, 1), padding_option="zero")
        tl.store(d, x, boundary_check=(0, 1))
    rows = pm * BM + tl.arange(0, BM)
    tl.store(dst + rows * N, tl.load(src + rows * N, mask=rows < M, other=0.0), mask=rows < M)
