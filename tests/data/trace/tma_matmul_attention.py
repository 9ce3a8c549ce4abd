"""Two TMA kernels written as Triton's 3.4+ tutorials write them: an autotuned persistent matmul
through device-side tensor descriptors (09-persistent-matmul's `matmul_kernel_descriptor_persistent`)
and an attention forward through host-side `TensorDescriptor`s (06-fused-attention's `_attn_fwd`,
with its `_attn_fwd_inner` helper). Both are checked against torch.

The device, SM count and target come from `triton.runtime.driver.active`, as the tutorials take
them, so on a CPU this runs under TRITON_INTERPRET=1 only with a stand-in driver (`reprokit trace`
gives one). Usage: tma_matmul_attention.py [--small | --tiny]: --small keeps the shapes interpreter-sized,
--tiny smaller still (tensors small enough for a committed bundle).
"""

import sys

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

DEVICE = triton.runtime.driver.active.get_active_torch_device()


def _alloc(size: int, align: int, stream):
    return torch.empty(size, device=DEVICE, dtype=torch.int8)


def matmul_configs():
    return [
        triton.Config({"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8},
                      num_stages=s, num_warps=w)
        for bm, bn, bk, s, w in ((128, 128, 64, 3, 8), (128, 64, 64, 4, 4))
    ]


@triton.jit
def _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M: tl.constexpr):
    group_id = tile_id // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + (tile_id % group_size_m)
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n


@triton.autotune(configs=matmul_configs(), key=["M", "N", "K"])
@triton.jit
def matmul_kernel_descriptor_persistent(a_ptr, b_ptr, c_ptr, M, N, K,
                                        BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr,
                                        BLOCK_SIZE_K: tl.constexpr, GROUP_SIZE_M: tl.constexpr,
                                        NUM_SMS: tl.constexpr):
    dtype = c_ptr.dtype.element_ty
    start_pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    k_tiles = tl.cdiv(K, BLOCK_SIZE_K)
    num_tiles = num_pid_m * num_pid_n

    a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[K, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_K])
    b_desc = tl.make_tensor_descriptor(b_ptr, shape=[N, K], strides=[K, 1], block_shape=[BLOCK_SIZE_N, BLOCK_SIZE_K])
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BLOCK_SIZE_M, BLOCK_SIZE_N])

    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    for tile_id in tl.range(start_pid, num_tiles, NUM_SMS):
        pid_m, pid_n = _compute_pid(tile_id, num_pid_in_group, num_pid_m, GROUP_SIZE_M)
        offs_am = pid_m * BLOCK_SIZE_M
        offs_bn = pid_n * BLOCK_SIZE_N
        accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
        for ki in range(k_tiles):
            offs_k = ki * BLOCK_SIZE_K
            a = a_desc.load([offs_am, offs_k])
            b = b_desc.load([offs_bn, offs_k])
            accumulator = tl.dot(a, b.T, accumulator)
        c_desc.store([offs_am, offs_bn], accumulator.to(dtype))


def matmul(a, b):
    """C = A @ B.T for A (M, K) and B (N, K), one persistent program per SM."""
    M, K = a.shape
    N = b.shape[0]
    c = torch.empty((M, N), device=a.device, dtype=a.dtype)
    num_sms = triton.runtime.driver.active.utils.get_device_properties(0)["multiprocessor_count"]
    grid = lambda META: (min(num_sms, triton.cdiv(M, META["BLOCK_SIZE_M"]) * triton.cdiv(N, META["BLOCK_SIZE_N"])),)
    matmul_kernel_descriptor_persistent[grid](a, b, c, M, N, K, NUM_SMS=num_sms)
    return c


@triton.jit
def _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, qk_scale,
                    BLOCK_N: tl.constexpr, N_CTX: tl.constexpr):
    for start_n in tl.range(0, N_CTX, BLOCK_N):
        k = desc_k.load([offset_y + start_n, 0]).T
        qk = tl.dot(q, k)
        m_ij = tl.maximum(m_i, tl.max(qk, 1) * qk_scale)
        qk = qk * qk_scale - m_ij[:, None]
        p = tl.math.exp2(qk)
        alpha = tl.math.exp2(m_i - m_ij)
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        v = desc_v.load([offset_y + start_n, 0])
        acc = tl.dot(p.to(v.dtype), v, acc)
        m_i = m_ij
    return acc, l_i, m_i


@triton.jit
def _attn_fwd(sm_scale, desc_q, desc_k, desc_v, desc_o, H, N_CTX: tl.constexpr, HEAD_DIM: tl.constexpr,
              BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    start_m = tl.program_id(0)
    off_hz = tl.program_id(1)
    offset_y = off_hz * N_CTX
    qo_offset_y = offset_y + start_m * BLOCK_M
    m_i = tl.zeros([BLOCK_M], dtype=tl.float32) - float("inf")
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32) + 1.0
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
    qk_scale = sm_scale * 1.44269504  # 1/log(2)
    q = desc_q.load([qo_offset_y, 0])
    acc, l_i, m_i = _attn_fwd_inner(acc, l_i, m_i, q, desc_k, desc_v, offset_y, qk_scale, BLOCK_N, N_CTX)
    acc = acc / l_i[:, None]
    desc_o.store([qo_offset_y, 0], acc.to(desc_o.dtype))


def attention(q, k, v, sm_scale):
    """softmax(Q K^T * sm_scale) V for (Z, H, N_CTX, HEAD_DIM) fp16 tensors, through host descriptors."""
    Z, H, N_CTX, HEAD_DIM = q.shape
    BLOCK_M, BLOCK_N = 64, 64
    o = torch.empty_like(q)
    y_dim = Z * H * N_CTX
    desc = lambda t, rows: TensorDescriptor(t, shape=[y_dim, HEAD_DIM], strides=[HEAD_DIM, 1],
                                            block_shape=[rows, HEAD_DIM])
    grid = (triton.cdiv(N_CTX, BLOCK_M), Z * H)
    _attn_fwd[grid](sm_scale, desc(q, BLOCK_M), desc(k, BLOCK_N), desc(v, BLOCK_N), desc(o, BLOCK_M), H,
                    N_CTX=N_CTX, HEAD_DIM=HEAD_DIM, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N, num_warps=4, num_stages=3)
    return o


def main(small: bool, tiny: bool = False) -> None:
    triton.set_allocator(_alloc)  # device-side descriptors need scratch memory
    torch.manual_seed(0)
    size = 128 if tiny else 256 if small else 4096
    for m in (size, size // 2):
        a = torch.randn((m, size), device=DEVICE, dtype=torch.float16)
        b = torch.randn((size, size), device=DEVICE, dtype=torch.float16)
        c = matmul(a, b)
        ref = a.float() @ b.float().T
        torch.testing.assert_close(c.float(), ref, rtol=1e-2, atol=1e-1 * (size / 256) ** 0.5)
    z, h, n, d = (1, 1, 128, 64) if tiny else (1, 2, 128, 64) if small else (4, 16, 1024, 64)
    q, k, v = (torch.randn((z, h, n, d), device=DEVICE, dtype=torch.float16) for _ in range(3))
    o = attention(q, k, v, 0.5)
    ref = torch.softmax((q.float() @ k.float().transpose(-1, -2)) * 0.5, dim=-1) @ v.float()
    torch.testing.assert_close(o.float(), ref, rtol=1e-2, atol=1e-2)
    print("tma_matmul_attention: matmul and attention match torch")


if __name__ == "__main__":
    # --tiny: tensors small enough to keep in a committed bundle (`reprokit trace --tensors small`)
    main("--small" in sys.argv[1:], "--tiny" in sys.argv[1:])
