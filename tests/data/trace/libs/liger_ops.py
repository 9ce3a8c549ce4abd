"""Liger-Kernel 0.8.5 (installed from the package index, imported as users import it) on small
shapes: RMSNorm, LayerNorm, SwiGLU, RoPE, CrossEntropy and fused linear cross entropy, each
forward and backward and checked against torch.

Under Triton's interpreter (no GPU) three ops cannot run: their kernels call `.to(tl.float32)` on a
float parameter (RMSNorm's and LayerNorm's `eps`, SwiGLU's `gate_multiplier`), which the
interpreter passes as a Python float; and RMSNorm and LayerNorm call `rsqrt`, which Liger binds
from `triton.language.extra.libdevice`, of which the interpreter implements nothing (the stub
returns None). Their first launch fails there
(after it is recorded): the op reports that and the program goes on, so that every op's kernels
are recorded. On a GPU every op runs and any failure is raised."""

import sys

import torch
import torch.nn.functional as F
from liger_kernel.transformers.functional import (
    liger_cross_entropy,
    liger_fused_linear_cross_entropy,
    liger_layer_norm,
    liger_rms_norm,
    liger_swiglu,
)
from liger_kernel.transformers.rope import liger_rotary_pos_emb
from triton.runtime.errors import InterpreterError

DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
B, T, H = 2, 8, 64
V = 128
TOL = {"atol": 1e-4, "rtol": 1e-4}


def leaf(*shape, scale=1.0):
    return (torch.randn(*shape, device=DEVICE) * scale).requires_grad_(True)


def check(ours, ref, inputs):
    """Values and gradients against torch's (the same upstream gradient for both). `ref` is
    computed first: Liger's cross entropy writes its gradient into the logits' memory."""
    ref = ref()
    ours = ours()
    torch.testing.assert_close(ours, ref, **TOL)
    up = torch.randn_like(ref)
    # each backward gets its own copy: Liger's RMSNorm backward writes dX into dY's memory
    want = torch.autograd.grad(ref, inputs, up.clone(), retain_graph=True)
    got = torch.autograd.grad(ours, inputs, up.clone(), retain_graph=True)
    for g, w in zip(got, want):
        torch.testing.assert_close(g, w, **TOL)


def rms_norm():
    x, w = leaf(B * T, H), leaf(H)
    # in_place=True (Liger's default): the backward writes dX into dY's memory
    check(lambda: liger_rms_norm(x, w, 1e-6), lambda: x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w,
          (x, w))


def layer_norm():
    x, w, b = leaf(B * T, H), leaf(H), leaf(H)
    check(lambda: liger_layer_norm(x, w, b, 1e-6), lambda: F.layer_norm(x, (H,), w, b, 1e-6), (x, w, b))


def swiglu():
    a, b = leaf(B, T, 4 * H), leaf(B, T, 4 * H)
    check(lambda: liger_swiglu(a, b), lambda: F.silu(a) * b, (a, b))


def rope():
    q, k = leaf(B, 4, T, H), leaf(B, 2, T, H)
    pos = torch.arange(T, device=DEVICE, dtype=torch.float32)
    freq = 1.0 / (10000 ** (torch.arange(0, H, 2, device=DEVICE, dtype=torch.float32) / H))
    emb = torch.cat([torch.outer(pos, freq)] * 2, dim=-1)[None]
    cos, sin = emb.cos(), emb.sin()

    def rot(x):
        return torch.cat((-x[..., H // 2:], x[..., :H // 2]), dim=-1)

    c, s = cos[:, None], sin[:, None]
    check(lambda: torch.cat([t.flatten() for t in liger_rotary_pos_emb(q, k, cos, sin)]),
          lambda: torch.cat([(q * c + rot(q) * s).flatten(), (k * c + rot(k) * s).flatten()]), (q, k))


def cross_entropy():
    logits, target = leaf(B * T, V), torch.randint(0, V, (B * T,), device=DEVICE)
    check(lambda: liger_cross_entropy(logits, target), lambda: F.cross_entropy(logits, target), (logits,))


def fused_linear_cross_entropy():
    x, w, target = leaf(B * T, H), leaf(V, H, scale=0.1), torch.randint(0, V, (B * T,), device=DEVICE)
    check(lambda: liger_fused_linear_cross_entropy(x, w, target), lambda: F.cross_entropy(x @ w.t(), target),
          (x, w))


OPS = [rms_norm, layer_norm, swiglu, rope, cross_entropy, fused_linear_cross_entropy]


def main():
    torch.manual_seed(0)
    for op in OPS:
        try:
            op()
        except InterpreterError as e:  # see the docstring: only under the interpreter
            print(f"{op.__name__}: the interpreter cannot run it: {str(e)[:120]}", file=sys.stderr)
            continue
        print(f"{op.__name__}: ok", file=sys.stderr)


if __name__ == "__main__":
    main()
