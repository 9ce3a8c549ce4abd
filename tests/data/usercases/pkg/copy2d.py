"""A tiled 2-D copy whose helper @jit and default block come from a module beside it."""

import triton
import triton.language as tl
from _tiles import BLOCK_DEFAULT, swizzle


@triton.jit
def copy2d(src, dst, M, N, BLOCK_M: tl.constexpr = BLOCK_DEFAULT, BLOCK_N: tl.constexpr = 64,
           GROUP_M: tl.constexpr = 8):
    pid_m, pid_n = swizzle(tl.program_id(0), tl.cdiv(M, BLOCK_M), tl.cdiv(N, BLOCK_N), GROUP_M)
    rm = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rn = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (rm[:, None] < M) & (rn[None, :] < N)
    x = tl.load(src + rm[:, None] * N + rn[None, :], mask=mask)
    tl.store(dst + rm[:, None] * N + rn[None, :], x, mask=mask)
