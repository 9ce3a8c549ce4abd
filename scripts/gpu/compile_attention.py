"""A torch.compile program for the H100: a self-attention block written out by hand (projections,
q @ k^T * scale, a causal mask, softmax, @ v, output projection, residual and LayerNorm; no
scaled_dot_product_attention), compiled with the default mode; checked against eager."""

import math

import torch
from _check import check, main_guard


class Attention(torch.nn.Module):
    def __init__(self, d: int = 256, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.out = torch.nn.Linear(d, d)
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
        scores = scores.masked_fill(mask, float("-inf"))
        y = (torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, t, d)
        return self.norm(x + self.out(y))


def main() -> int:
    torch.manual_seed(0)
    return check("attention", Attention(), (torch.randn(8, 128, 256),), None, rtol=1e-3, atol=1e-4)


if __name__ == "__main__":
    main_guard(main)
