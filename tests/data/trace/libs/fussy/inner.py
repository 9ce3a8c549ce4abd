"""A module reached through another (`tle.inner.program_id`): not copied, so the kernel's file
imports the package."""

import triton
import triton.language as tl


@triton.jit
def program_id(axis: tl.constexpr):
    return tl.program_id(axis)
