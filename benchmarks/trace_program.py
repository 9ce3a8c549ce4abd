"""The program `make bench-trace` traces: six kernels (one autotuned, one with a helper @jit,
one tl.dot), each launched many times at a few shapes, as a real workload repeats its kernels.
Runs on a GPU, or on a CPU under TRITON_INTERPRET=1. Usage: trace_program.py [ROUNDS]"""

import sys
import time

import torch
import triton
import triton.language as tl

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def add(x, y, out, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out + o, tl.load(x + o, mask=m) + tl.load(y + o, mask=m), mask=m)


@triton.jit
def _gelu(x):
    return 0.5 * x * (1 + tl.erf(x * 0.7071067811865476))


@triton.jit
def gelu(x, out, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out + o, _gelu(tl.load(x + o, mask=m)), mask=m)


def cpu_bench(fn, quantiles=None, **_):
    """The autotuner's timer on a CPU (its own asks the CUDA driver): one timed call."""
    t0 = time.perf_counter()
    fn()
    dt = (time.perf_counter() - t0) * 1e3
    return [dt, dt, dt] if quantiles else dt


@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 128})], key=["n"],
                 do_bench=None if DEVICE == "cuda" else cpu_bench)
@triton.jit
def scale(x, out, n, alpha, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(out + o, tl.load(x + o, mask=m) * alpha, mask=m)


@triton.jit
def softmax(x, out, stride, N: tl.constexpr):
    row = tl.program_id(0)
    v = tl.load(x + row * stride + tl.arange(0, N))
    e = tl.exp(v - tl.max(v, axis=0))
    tl.store(out + row * stride + tl.arange(0, N), e / tl.sum(e, axis=0))


@triton.jit
def row_norm(x, out, stride, N: tl.constexpr):
    row = tl.program_id(0)
    v = tl.load(x + row * stride + tl.arange(0, N))
    tl.store(out + row, tl.sqrt(tl.sum(v * v, axis=0)))


@triton.jit
def matmul(a, b, c, M: tl.constexpr, N: tl.constexpr, K: tl.constexpr):
    i = tl.arange(0, M)[:, None]
    j = tl.arange(0, N)[None, :]
    k = tl.arange(0, K)
    acc = tl.dot(tl.load(a + i * K + k[None, :]), tl.load(b + k[:, None] * N + j))
    tl.store(c + i * N + j, acc)


def main(rounds: int) -> None:
    for _ in range(rounds):
        for n in (1024, 1000):
            x = torch.rand(n, device=DEVICE)
            out = torch.empty_like(x)
            add[(triton.cdiv(n, 256),)](x, x, out, n, BLOCK=256)
            gelu[(triton.cdiv(n, 256),)](x, out, n, BLOCK=256)
            scale[lambda m, n=n: (triton.cdiv(n, m["BLOCK"]),)](x, out, n, 2.0)
        t = torch.rand(32, 64, device=DEVICE)
        o = torch.empty_like(t)
        softmax[(32,)](t, o, t.stride(0), N=64)
        row_norm[(32,)](t, o, t.stride(0), N=64)
        a = torch.rand(16, 16, device=DEVICE)
        c = torch.empty(16, 16, device=DEVICE)
        matmul[(1,)](a, a, c, M=16, N=16, K=16)
    if DEVICE == "cuda":
        torch.cuda.synchronize()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
    print("trace_program: done")
