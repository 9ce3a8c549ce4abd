"""TMA GEMMs (C = A @ B, fp16 in, fp32 accumulate, fp16 out): descriptor loads feeding `tl.dot`.

One kernel per descriptor API, so each Triton release runs the GEMM its API allows. A is
M x K row-major, B is K x N row-major, C is M x N.
"""

import triton
import triton.language as tl

make_desc = getattr(tl, "make_tensor_descriptor", None) or getattr(tl, "_experimental_make_tensor_descriptor", None)


@triton.jit
def gemm_experimental_descriptor(a_desc, b_desc, c_desc, M, N, K,
                                 BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl._experimental_descriptor_load(a_desc, [pm * BM, k], [BM, BK], tl.float16)
        b = tl._experimental_descriptor_load(b_desc, [k, pn * BN], [BK, BN], tl.float16)
        acc = tl.dot(a, b, acc)
    tl._experimental_descriptor_store(c_desc, acc.to(tl.float16), [pm * BM, pn * BN])


@triton.jit
def gemm_tensor_descriptor(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    a_desc = make_desc(a, shape=[M, K], strides=[K, 1], block_shape=[BM, BK])
    b_desc = make_desc(b, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
    c_desc = make_desc(c, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pm * BM, k]), b_desc.load([k, pn * BN]), acc)
    c_desc.store([pm * BM, pn * BN], acc.to(tl.float16))
