"""An autotuned matmul whose first config needs more shared memory than an H100 has (128x256x64
fp32 tiles, 3 stages: 294912 B against 232448), as mamba-ssm's chunked-scan kernels lead with.
A GPU's autotuner prices that config inf (its launch fails) and picks the other; under the
interpreter, which cannot time, the trace keeps the first. The capture records that it does not
fit, and a replay runs the config that fits instead (reprokit.run.replay.winners)."""

import torch
import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BM": 128, "BN": 256, "BK": 64}, num_warps=8, num_stages=3),
                          triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=2)], key=["M"])
@triton.jit
def mm(a, b, c, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), tl.float32)
    for k in range(0, K, BK):
        x = tl.load(a + rm[:, None] * K + (k + rk)[None, :], mask=(rm[:, None] < M) & ((k + rk)[None, :] < K), other=0.0)
        y = tl.load(b + (k + rk)[:, None] * N + rn[None, :], mask=((k + rk)[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(x, y)
    tl.store(c + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))


M = N = K = 64
a, b = torch.randn(M, K), torch.randn(K, N)
c = torch.empty(M, N)
mm[lambda m: (triton.cdiv(M, m["BM"]), triton.cdiv(N, m["BN"]))](a, b, c, M, N, K)
assert torch.allclose(c, a @ b, atol=1e-3), "wrong"
print("unlaunchable_choice: done")
