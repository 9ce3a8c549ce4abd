"""Host tensor descriptors inside a tuple argument (Triton 3.8+): one kernel takes its source and
destination descriptors as one tuple, and copies a 32x32 tile through them."""

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor


@triton.jit
def copy_tile(descs, BM: tl.constexpr, BN: tl.constexpr):
    pid = tl.program_id(0)
    tile = descs[0].load([pid * BM, 0])
    descs[1].store([pid * BM, 0], tile)


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(64, 32, device=device, dtype=torch.float16)
    y = torch.empty_like(x)
    src, dst = TensorDescriptor.from_tensor(x, [32, 32]), TensorDescriptor.from_tensor(y, [32, 32])
    copy_tile[(2,)]((src, dst), 32, 32)
    torch.testing.assert_close(x, y, atol=0, rtol=0)


if __name__ == "__main__":
    main()
