"""Host-side tensor descriptors: `triton.tools.tensor_descriptor.TensorDescriptor` arguments
(3.4+). The kernel signature type is `tensordesc<dtype[block]>`."""

import triton
import triton.language as tl


@triton.jit
def copy_p0(src_desc, dst_desc, BM: tl.constexpr, BN: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    dst_desc.store([pm * BM, pn * BN], src_desc.load([pm * BM, pn * BN]))


@triton.jit
def copy_p1_rank6(src_desc, dst_desc):
    # Broken invariant: a 6-D box; TMA addresses at most 5 dimensions.
    dst_desc.store([0, 0, 0, 0, 0, 0], src_desc.load([0, 0, 0, 0, 0, 0]))


@triton.jit
def copy_p2_stress(src_desc, dst_desc, N, BM: tl.constexpr, BN: tl.constexpr):
    # A loop over a row of tiles with a runtime trip count; the descriptor's shape clips the
    # tail tile; a masked select before the store.
    pm = tl.program_id(0)
    cols = tl.arange(0, BN)
    for start in range(0, N, BN):
        x = src_desc.load([pm * BM, start])
        x = tl.where((start + cols)[None, :] < N, x, 0.0)
        dst_desc.store([pm * BM, start], x)
