"""3.0-era experimental TMA descriptors: the host fills a 128-byte CUtensorMap
(`fill_2d_tma_descriptor`, later `triton.tools.experimental_descriptor`) and the kernel takes
its address; `tl._experimental_descriptor_load/store` lower to TMA copies."""

import triton
import triton.language as tl


@triton.jit
def copy_p0(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    x = tl._experimental_descriptor_load(src_desc, [pm * BM, pn * BN], [BM, BN], tl.float16)
    tl._experimental_descriptor_store(dst_desc, x, [pm * BM, pn * BN])


@triton.jit
def copy_p1_narrow(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    # Broken invariant: a box whose inner dimension is 4 fp16 = 8 bytes; TMA needs >= 16.
    pm = tl.program_id(0)
    x = tl._experimental_descriptor_load(src_desc, [pm * BM, 0], [BM, BN], tl.float16)
    tl._experimental_descriptor_store(dst_desc, x, [pm * BM, 0])


@triton.jit
def copy_p2_stress(src_desc, dst_desc, M, N, BM: tl.constexpr, BN: tl.constexpr):
    # Walk a row of tiles in a loop; the last tile hangs over N (TMA clips out-of-bounds
    # boxes); a masked epilogue zeroes columns past N before the store.
    pm = tl.program_id(0)
    cols = tl.arange(0, BN)
    for start in range(0, N, BN):
        x = tl._experimental_descriptor_load(src_desc, [pm * BM, start], [BM, BN], tl.float16)
        x = tl.where((start + cols)[None, :] < N, x, 0.0)
        tl._experimental_descriptor_store(dst_desc, x, [pm * BM, start])
