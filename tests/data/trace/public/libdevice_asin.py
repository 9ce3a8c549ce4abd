"""libdevice (`tl.extra.libdevice`) functions, as Triton's tutorial 07 writes it
(triton-lang/triton python/tutorials/07-extern-functions.py, v3.6.0; MIT licence): `asin` from
the default libdevice, then the same kernel launched with `extern_libs={'libdevice': path}`
naming the bitcode file of the CUDA backend (a launch option). Trimmed: size 98432 -> 1000; the
HIP branch's path kept as written."""

import inspect
import os
from pathlib import Path

import torch

import triton
import triton.language as tl
from triton.language.extra import libdevice

DEVICE = triton.runtime.driver.active.get_active_torch_device()


@triton.jit
def asin_kernel(
    x_ptr,
    y_ptr,
    n_elements,
    BLOCK_SIZE: tl.constexpr,
):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    x = libdevice.asin(x)
    tl.store(y_ptr + offsets, x, mask=mask)


torch.manual_seed(0)
size = 1000
x = torch.rand(size, device=DEVICE)
output_triton = torch.zeros(size, device=DEVICE)
output_torch = torch.asin(x)
assert x.is_cuda or x.device.type == "cpu" and output_triton.device.type == "cpu"
n_elements = output_torch.numel()
grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )
asin_kernel[grid](x, output_triton, n_elements, BLOCK_SIZE=1024)
assert torch.allclose(output_torch, output_triton, atol=1e-6)


def is_cuda():
    return triton.runtime.driver.active.get_current_target().backend == "cuda"


def is_hip():
    return triton.runtime.driver.active.get_current_target().backend == "hip"


current_file = inspect.getfile(inspect.currentframe())
current_dir = Path(os.path.dirname(os.path.abspath(current_file)))

if is_cuda():
    libdir = Path(triton.__file__).parent / "backends" / "nvidia" / "lib"
    extern_libs = {'libdevice': str(libdir / 'libdevice.10.bc')}
elif is_hip():
    libdir = current_dir.parent.parent / 'third_party/amd/backend/lib'
    extern_libs = {}
    libs = ["ocml", "ockl"]
    for lib in libs:
        extern_libs[lib] = str(libdir / f'{lib}.bc')
else:
    raise RuntimeError('unknown backend')

output_triton = torch.empty_like(x)
asin_kernel[grid](x, output_triton, n_elements, BLOCK_SIZE=1024, extern_libs=extern_libs)
assert torch.allclose(output_torch, output_triton, atol=1e-6)
