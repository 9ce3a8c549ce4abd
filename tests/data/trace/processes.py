"""Kernels launched from every kind of process a program makes, one way per run:

  chdir DIR   change folder to DIR before importing triton, then launch ka
  cwd DIR     launch ka, then a subprocess started in DIR (cwd=) launches kb
  fork        launch ka, a forked child (multiprocessing's fork) kb, then the parent kc
  spawn       launch ka, then a spawned worker (multiprocessing's spawn) kd
  pool        launch ka, then a pool of 2 forked workers (as a DataLoader's) kb and kd, then kc

Each kernel runs on tensors of its own dtype and size, so that a case's kept tensors say whose
they are. It picks its device from torch.
"""

import os
import subprocess
import sys

if __name__ == "__main__" and sys.argv[1] == "chdir":
    os.chdir(sys.argv[2])

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


@triton.jit
def ka(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


@triton.jit
def kb(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)


@triton.jit
def kc(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) - 1, mask=offs < n)


@triton.jit
def kd(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 3, mask=offs < n)


# kernel -> (dtype, n): each its own
SHAPES = {"ka": (torch.float32, 64), "kb": (torch.float16, 48), "kc": (torch.int32, 80), "kd": (torch.float64, 16)}


def launch(name: str) -> None:
    dtype, n = SHAPES[name]
    x = torch.ones(n, dtype=dtype, device=DEVICE)
    globals()[name][(triton.cdiv(n, 32),)](x, n, BLOCK=32)
    print(f"{name} launched in {os.getpid()}", flush=True)


if __name__ == "__main__":
    import multiprocessing

    how = sys.argv[1]
    launch(sys.argv[2] if how == "child" else "ka")
    if how == "cwd":
        subprocess.run([sys.executable, os.path.abspath(__file__), "child", "kb"], cwd=sys.argv[2], check=True)
    elif how == "fork":
        p = multiprocessing.get_context("fork").Process(target=launch, args=("kb",))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
        launch("kc")
    elif how == "pool":
        # `with` ends the pool by terminate(): its workers are killed, as a DataLoader's are
        with multiprocessing.get_context("fork").Pool(2) as pool:
            pool.map(launch, ["kb", "kd"], chunksize=1)
        launch("kc")
    elif how == "spawn":
        p = multiprocessing.get_context("spawn").Process(target=launch, args=("kd",))
        p.start()
        p.join()
        assert p.exitcode == 0, p.exitcode
