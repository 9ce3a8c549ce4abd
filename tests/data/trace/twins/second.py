import triton
import triton.language as tl


@triton.jit
def scale(x, out, n, BLOCK: tl.constexpr):  # the same name as first.scale, another kernel
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(out + o, tl.load(x + o, mask=o < n) * 3, mask=o < n)
