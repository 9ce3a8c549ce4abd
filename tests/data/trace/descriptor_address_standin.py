"""A 3.1-3.3 host-filled descriptor program that runs on a CPU: Triton's own `CudaUtils` (the class
`driver.active.utils` is made from on a GPU) with only its compiled driver module stood in, whose
fill writes the tensor's address, dims, box and element size into the 128 bytes. The kernel reads
the address from its descriptor argument, as TMA reads a CUtensorMap's, so under the interpreter
(3.1+: 3.0's leaves stores unwritten) it reads and writes through whatever the bytes say.
Usage: descriptor_address_standin.py
"""

import ctypes
import struct
import types

import torch
import triton
import triton.backends
import triton.language as tl


def _fill(ptr, *rest):
    *nums, address = rest
    ctypes.memmove(address, struct.pack(f"<Q{len(nums)}q", ptr, *nums).ljust(128, b"\0"), 128)


backend = triton.backends.backends["nvidia"].driver.__init__.__globals__
backend["compile_module_from_src"] = lambda src, name: types.SimpleNamespace(
    load_binary=None, get_device_properties=None, cuOccupancyMaxActiveClusters=None, set_printf_fifo_size=None,
    fill_1d_tma_descriptor=_fill, fill_2d_tma_descriptor=_fill)
utils = backend["CudaUtils"]()


@triton.jit
def desc_scale(in_desc, out_desc, n, BLOCK: tl.constexpr):
    src = tl.load(in_desc.to(tl.pointer_type(tl.int64))).to(tl.pointer_type(tl.float16))
    dst = tl.load(out_desc.to(tl.pointer_type(tl.int64))).to(tl.pointer_type(tl.float16))
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(dst + offs, tl.load(src + offs, mask=offs < n) * 2, mask=offs < n)


def descriptor(t, block):
    host = torch.empty(128, dtype=torch.int8)
    utils.fill_1d_tma_descriptor(t.data_ptr(), t.numel(), block, t.element_size(), host.data_ptr())
    return host.clone()


def main() -> None:
    torch.manual_seed(0)
    x = torch.randn(300, dtype=torch.float16)
    y = torch.zeros_like(x)
    desc_scale[(3,)](descriptor(x, 128), descriptor(y, 128), x.numel(), BLOCK=128)
    assert torch.equal(y, x * 2)
    try:  # 3.2-3.3: the public helpers, which fill through driver.active.utils
        from triton.tools import experimental_descriptor as tools
    except ImportError:
        tools = None
    if tools is not None:
        triton.runtime.driver.active.utils = utils  # the interpreter's driver, with the backend's fills
        z = torch.zeros_like(x)
        descs = [tools.create_1d_tma_descriptor(t.data_ptr(), t.numel(), 64, t.element_size()) for t in (x, z)]
        as_bytes = [torch.frombuffer(bytearray(ctypes.string_at(d.tma_desc_cpu_ptr(), 128)), dtype=torch.int8)
                    for d in descs]
        desc_scale[(5,)](*as_bytes, x.numel(), BLOCK=64)
        assert torch.equal(z, x * 2)
    print("descriptor_address_standin: y == 2x")


if __name__ == "__main__":
    main()
