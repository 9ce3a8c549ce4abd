"""A program that launches a kernel, starts a child process, writes both pids to the file named
by its first argument, then waits for ever: what `reprokit trace` must take down with it."""

import subprocess
import sys
import time

import torch
import triton
import triton.language as tl


@triton.jit
def bump(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) + 1, mask=offs < n)


x = torch.zeros(32, device="cuda" if torch.cuda.is_available() else "cpu")
bump[(1,)](x, 32, BLOCK=32)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
with open(sys.argv[1] + ".partial", "w") as f:
    f.write(f"{__import__('os').getpid()} {child.pid}\n")
__import__("os").replace(sys.argv[1] + ".partial", sys.argv[1])
time.sleep(600)
