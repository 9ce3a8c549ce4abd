"""A torch.compile program for the H100: an MLP block (Linear, LayerNorm, GELU, softmax) compiled
with mode="max-autotune-no-cudagraphs", so that Inductor autotunes its GEMM templates (several
configs compiled, one chosen) beside its fused pointwise and reduction kernels; checked against eager.

`--tiny`: the same block at small sizes (d 64, hidden 128, 32 classes, 64 rows), where Inductor
folds most GEMM configs into a few (their blocks clipped to the problem): few candidates, a bundle
small enough to commit."""

import sys

import torch
from _check import check, main_guard


class MLP(torch.nn.Module):
    def __init__(self, d: int = 512, hidden: int = 2048, classes: int = 256):
        super().__init__()
        self.norm = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, hidden)
        self.down = torch.nn.Linear(hidden, d)
        self.head = torch.nn.Linear(d, classes)

    def forward(self, x):
        h = self.down(torch.nn.functional.gelu(self.up(self.norm(x))))
        return torch.softmax(self.head(x + h), dim=-1)


def main() -> int:
    torch.manual_seed(0)
    if "--tiny" in sys.argv[1:]:
        return check("mlp", MLP(64, 128, 32), (torch.randn(64, 64),), "max-autotune-no-cudagraphs", rtol=1e-3, atol=1e-4)
    return check("mlp", MLP(), (torch.randn(1024, 512),), "max-autotune-no-cudagraphs", rtol=1e-3, atol=1e-4)


if __name__ == "__main__":
    main_guard(main)
