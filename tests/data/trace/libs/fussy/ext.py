"""@jit helpers a kernel reaches through this module (`tle.program_id(0)`), as FlagGems'
triton_lang_extension."""

import triton
import triton.language as tl

from fussy import inner  # noqa: F401 - reached as ext.inner


@triton.jit
def program_id(axis: tl.constexpr):
    return tl.program_id(axis)
