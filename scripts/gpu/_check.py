"""What the three torch.compile programs share: run a module eagerly and compiled on the same
inputs, and exit non-zero when the compiled outputs are not within tolerance of eager's."""

from __future__ import annotations

import sys

import torch


def check(name: str, model: torch.nn.Module, inputs: tuple, mode: str | None, rtol: float, atol: float,
          steps: int = 3) -> int:
    """Compile `model` with `mode` (None: the default), run it `steps` times (the first compiles,
    autotunes and launches; the rest launch the chosen kernels again) and compare with eager."""
    model = model.cuda().eval()
    inputs = tuple(x.cuda() for x in inputs)
    with torch.no_grad():
        want = model(*inputs)
        compiled = torch.compile(model, mode=mode) if mode else torch.compile(model)
        for _ in range(steps):
            got = compiled(*inputs)
        torch.cuda.synchronize()
    err = (got.float() - want.float()).abs().max().item()
    ok = torch.allclose(got.float(), want.float(), rtol=rtol, atol=atol)
    print(f"{name}: mode={mode or 'default'} max abs err {err:.3g} vs eager: {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def main_guard(fn) -> None:
    if not torch.cuda.is_available():
        sys.exit(f"{sys.argv[0]}: needs a CUDA GPU (torch.compile writes C++ on a CPU)")
    sys.exit(fn())
