"""A kernel file whose module-level code raises, as a half-edited file does."""

import triton
import triton.language as tl  # noqa: F401 - as the file had it before it broke

raise RuntimeError("this kernel file is half-edited")


@triton.jit
def never(x_ptr):
    pass
