"""A 3.0-era descriptor program for a CPU host: Triton's own `CudaUtils` (3.0-3.3), the class
`driver.active.utils` is made from on a GPU, with only its compiled driver module stood in (the fill is a CUDA driver call), so the descriptor fills run
through the same object and attributes as on a GPU. The stand-in writes the fill's arguments
into the 128 bytes, as a CUtensorMap holds its address, dims and box.

Kernels launch under the interpreter, which has no experimental descriptor ops: each launch
fails after the recorder has seen it, and the program goes on. Usage: experimental_fill_standin.py
"""

import struct
import types

import torch
import triton
import triton.backends
import triton.language as tl
from triton.backends.nvidia import driver as nvdriver


def _fill(rank):
    def fill(ptr, *rest):
        *nums, buf = rest
        data = struct.pack(f"<Q{len(nums)}q", ptr, *nums).ljust(128, b"\0")
        if isinstance(buf, int):  # 3.1-3.3: the buffer's address
            import ctypes

            ctypes.memmove(buf, data, 128)
        else:  # 3.0: a writable buffer
            memoryview(buf).cast("B")[:128] = data

    fill.__name__ = f"fill_{rank}d_tma_descriptor"
    return fill


def _stand_in_module(src, name):
    return types.SimpleNamespace(load_binary=None, get_device_properties=None, cuOccupancyMaxActiveClusters=None,
                                 set_printf_fifo_size=None, fill_1d_tma_descriptor=_fill(1),
                                 fill_2d_tma_descriptor=_fill(2))


# The module the active driver is made from (triton.backends loads it from its file under the name
# "nvidia", apart from triton.backends.nvidia.driver): its CudaUtils is what driver.active.utils is.
backend = triton.backends.backends["nvidia"].driver.__init__.__globals__
backend["compile_module_from_src"] = _stand_in_module
utils = backend["CudaUtils"]()
assert type(utils) is not nvdriver.CudaUtils  # the copy, not the importable module's class


@triton.jit
def tma_copy(in_desc_ptr, out_desc_ptr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    x = tl._experimental_descriptor_load(in_desc_ptr, [pid_m * BLOCK_M, pid_n * BLOCK_N], [BLOCK_M, BLOCK_N],
                                         tl.float16)
    tl._experimental_descriptor_store(out_desc_ptr, x, [pid_m * BLOCK_M, pid_n * BLOCK_N])


@triton.jit
def scale_rows(x_ptr, desc_1d, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    v = tl._experimental_descriptor_load(desc_1d, [pid * BLOCK], [BLOCK], tl.float32)
    tl.store(x_ptr + pid * BLOCK + tl.arange(0, BLOCK), v * 2)


def descriptor(t, *box):
    buf = bytearray(128)
    if len(box) == 2:
        utils.fill_2d_tma_descriptor(t.data_ptr(), t.shape[0], t.shape[1], box[0], box[1], t.element_size(), buf)
    else:
        utils.fill_1d_tma_descriptor(t.data_ptr(), t.numel(), box[0], t.element_size(), buf)
    return torch.frombuffer(buf, dtype=torch.int8).clone()


def launch(kernel, grid, *args, **kwargs):
    try:
        kernel[grid](*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the interpreter cannot run the experimental ops
        print(f"{kernel.fn.__name__}: {type(e).__name__}")


def main() -> None:
    x = torch.randn((256, 128), dtype=torch.float16)
    y = torch.empty_like(x)
    launch(tma_copy, (2, 1), descriptor(x, 128, 128), descriptor(y, 128, 128), BLOCK_M=128, BLOCK_N=128)
    big = torch.zeros((64, 256), dtype=torch.float16)
    view = big[32:, 128:]  # a view: its descriptor's address lies inside `big`'s storage
    launch(tma_copy, (1, 1), descriptor(view, 32, 128), descriptor(view, 32, 128), BLOCK_M=32, BLOCK_N=128)
    v = torch.arange(512, dtype=torch.float32)
    launch(scale_rows, (4,), v, descriptor(v, 128), 512, BLOCK=128)  # in place: the descriptor's base is x_ptr


if __name__ == "__main__":
    main()
