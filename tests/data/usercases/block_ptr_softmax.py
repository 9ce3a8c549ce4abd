"""A row-wise scaled softmax over block pointers, written as public kernels are: numpy and torch
at module level, a helper @jit, heuristics, and constexprs of every kind (int, float, bool, str,
None and a tl dtype)."""

import numpy as np
import torch
import triton
import triton.language as tl

LOG2E = float(np.log2(np.e))
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def _activation(x, ACT: tl.constexpr):
    if ACT == "relu":
        x = tl.maximum(x, 0.0)
    elif ACT == "square":
        x = x * x
    return x


@triton.heuristics({"EVEN_N": lambda args: args["N"] % args["BLOCK_N"] == 0})
@triton.jit
def scaled_softmax(x_ptr, out_ptr, M, N, stride_xm, stride_om, scale,
                   BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, EVEN_N: tl.constexpr,
                   SCALE2: tl.constexpr, USE_EXP2: tl.constexpr, ACT: tl.constexpr,
                   OUT_DTYPE: tl.constexpr, MASK=None):
    pid = tl.program_id(0)
    x_blk = tl.make_block_ptr(x_ptr, shape=(M, N), strides=(stride_xm, 1), offsets=(pid * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    o_blk = tl.make_block_ptr(out_ptr, shape=(M, N), strides=(stride_om, 1), offsets=(pid * BLOCK_M, 0),
                              block_shape=(BLOCK_M, BLOCK_N), order=(1, 0))
    if EVEN_N:
        x = tl.load(x_blk).to(tl.float32)
    else:
        x = tl.load(x_blk, boundary_check=(0, 1), padding_option="zero").to(tl.float32)
    x = _activation(x * scale * SCALE2, ACT)
    x = x - tl.max(x, axis=1)[:, None]
    if USE_EXP2:
        e = tl.math.exp2(x * 1.4426950408889634)
    else:
        e = tl.exp(x)
    if MASK is not None:
        e = e * tl.load(MASK)
    y = e / tl.sum(e, axis=1)[:, None]
    tl.store(o_blk, y.to(OUT_DTYPE), boundary_check=(0, 1))
