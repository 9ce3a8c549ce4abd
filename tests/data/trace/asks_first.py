"""A program that asks whether Triton is installed before importing it, as torch does
(torch.utils._triton.has_triton_package: `importlib.util.find_spec("triton")`) before Inductor
imports it: the spec that question returns is thrown away, and the import finds Triton anew.
Then one kernel, under the interpreter on a CPU."""

import importlib.util
import sys

if importlib.util.find_spec("triton") is None:
    sys.exit("no triton")

import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def double(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, 2 * tl.load(x_ptr + offs, mask=m), mask=m)


x = torch.ones(64, device="cuda" if torch.cuda.is_available() else "cpu")
double[(2,)](x, 64, BLOCK=32)
