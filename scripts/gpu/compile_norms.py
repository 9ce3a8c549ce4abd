"""A torch.compile program for the H100: a norm-heavy block (RMSNorm written out, LayerNorm,
GroupNorm, residuals and a SiLU gate), compiled with the default mode: Inductor's persistent and
looped reductions; checked against eager."""

import torch
from _check import check, main_guard


class RMSNorm(torch.nn.Module):
    def __init__(self, d: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = torch.nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Norms(torch.nn.Module):
    def __init__(self, d: int = 1024, groups: int = 8):
        super().__init__()
        self.rms = RMSNorm(d)
        self.ln = torch.nn.LayerNorm(d)
        self.gn = torch.nn.GroupNorm(groups, d)
        self.gate = torch.nn.Linear(d, d)

    def forward(self, x):
        h = self.rms(x)
        h = h + torch.nn.functional.silu(self.gate(h)) * self.ln(x)
        g = self.gn(h.transpose(1, 2)).transpose(1, 2)
        return self.ln(g + x)


def main() -> int:
    torch.manual_seed(0)
    return check("norms", Norms(), (torch.randn(16, 64, 1024),), None, rtol=1e-3, atol=1e-4)


if __name__ == "__main__":
    main_guard(main)
