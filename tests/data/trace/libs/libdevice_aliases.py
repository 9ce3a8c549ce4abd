"""Module-level libdevice aliases bound as Liger-Kernel 0.8.5 binds them: the release's libdevice
dispatch module if it has one, else the CUDA one, else triton.language.math. Both kernels call
the alias. Triton's interpreter has no libdevice (a stub returns None), so under it each launch
fails: the program goes on past each failure, so that both launches are recorded."""

import torch
import triton
import triton.language as tl

try:
    from triton.language.extra.libdevice import rsqrt
except ModuleNotFoundError:
    try:
        from triton.language.extra.cuda.libdevice import rsqrt
    except ModuleNotFoundError:
        from triton.language.math import rsqrt

try:
    from triton.language.extra.libdevice import tanh
except ModuleNotFoundError:
    try:
        from triton.language.extra.cuda.libdevice import tanh
    except ModuleNotFoundError:
        from triton.language.math import tanh

fast_exp = tl.exp  # a builtin bound to a module-level name


@triton.jit
def rms_scale(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, x * rsqrt(tl.sum(x * x, axis=0) / N + 1e-6))


@triton.jit
def soft_cap(x_ptr, y_ptr, N: tl.constexpr):
    offs = tl.arange(0, N)
    x = tl.load(x_ptr + offs)
    tl.store(y_ptr + offs, 30.0 * tanh(x / 30.0) + fast_exp(x) * 0.0)


def main():
    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(64, device=device)
    for kernel, ref in ((rms_scale, x * torch.rsqrt((x * x).mean() + 1e-6)), (soft_cap, 30.0 * torch.tanh(x / 30.0))):
        y = torch.empty_like(x)
        try:
            kernel[(1,)](x, y, 64)
        except Exception as e:  # noqa: BLE001 - the interpreter's missing libdevice (see the docstring)
            if device != "cpu":
                raise
            print(f"{kernel.__name__}: the interpreter cannot run libdevice: {type(e).__name__}")
            continue
        torch.testing.assert_close(y, ref)


if __name__ == "__main__":
    main()
