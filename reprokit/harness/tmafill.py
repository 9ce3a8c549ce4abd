"""A replay's own 3.0-3.3 host-filled TMA descriptors: fill each again over the replay's tensors.

A traced 3.0-era kernel takes `*i8` arguments of 128 bytes that the program filled with the
global address of one of its tensors (CUtensorMap). The trace records each fill
(`trace.tma_fills`, by parameter: the base tensor's metadata, the address's offset in it, dims,
block dims, element size, the function that filled it, and `shares` where the base is another
argument's tensor; reprokit/trace/inprogram/tmafill.py). Here the replay makes the base tensor (recorded
values or a seed, as for any tensor argument), calls the release's own fill over it, and puts
the bytes in the argument: the kernel then reads and writes the replay's memory. The base tensor
stands for the argument in the record's inputs and outputs (a store descriptor's base is the
output).
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass

DESC_BYTES = 128


@dataclass(frozen=True)
class Rebuild:
    """How to fill one descriptor argument again."""

    param: str
    api: str
    rank: int
    dims: tuple
    block: tuple
    element_size: int
    offset: int  # bytes from the base tensor's data pointer to the filled address
    base: dict  # the base tensor as a call writes a tensor (shape, dtype, strides, align)
    shares: str | None  # another parameter whose tensor (or descriptor's base) is this base


def plan(case: dict) -> tuple:
    """The case's rebuilds, in parameter order of the call (those that share a base last)."""
    fills = (case.get("trace") or {}).get("tma_fills") or {}
    order = list((case.get("call") or {}).get("args") or {})
    out = [Rebuild(param=p, api=f["api"], rank=int(f["rank"]), dims=tuple(int(x) for x in f["dims"]),
                   block=tuple(int(x) for x in f["block"]), element_size=int(f["element_size"]),
                   offset=int(f.get("offset", 0)), base=dict(f["base"]), shares=f.get("shares"))
           for p, f in fills.items()]
    return tuple(sorted(out, key=lambda r: (r.shares is not None, order.index(r.param) if r.param in order
                                            else len(order), r.param)))


def unfilled(case: dict) -> list:
    """The call's 128-byte int8 tensor arguments that no recorded fill covers (sorted)."""
    fills = (case.get("trace") or {}).get("tma_fills") or {}
    out = []
    for name, a in sorted(((case.get("call") or {}).get("args") or {}).items()):
        if isinstance(a, dict) and "tensor" in a and a.get("dtype") in ("int8", "uint8") \
                and numel(a["tensor"]) == DESC_BYTES and name not in fills:
            out.append(name)
    return out


def numel(shape) -> int:
    n = 1
    for d in shape:
        n *= int(d)
    return n


def release_fill(triton):
    """fill(rebuild, address) -> the 128 bytes, by the release's own function: the tools module's
    create_* where the program used it (3.2-3.3), else the driver's fill_Nd_tma_descriptor (3.0
    takes a writable buffer, 3.1-3.3 its address)."""

    def fill(r: Rebuild, address: int) -> bytes:
        args = (address, *r.dims, *r.block, r.element_size)
        if r.api.startswith("triton.tools.experimental_descriptor."):
            from triton.tools import experimental_descriptor as tools  # 3.2-3.3 only, as the trace saw

            made = getattr(tools, r.api.rsplit(".", 1)[1])(*args)
            return ctypes.string_at(int(made.tma_desc_cpu_ptr()), DESC_BYTES)
        fn = getattr(triton.runtime.driver.active.utils, f"fill_{r.rank}d_tma_descriptor")
        host = (ctypes.c_byte * DESC_BYTES)()
        try:
            fn(*args, ctypes.addressof(host))  # 3.1-3.3: the buffer's address
            return bytes(host)
        except TypeError:
            buf = bytearray(DESC_BYTES)  # 3.0: a writable buffer
            fn(*args, buf)
            return bytes(buf)

    return fill


def rebuild(torch, kwargs: dict, rebuilds: tuple, make_tensor, fill) -> dict:
    """Make each descriptor's base tensor (`make_tensor(spec)`, or the tensor it shares), fill the
    descriptor over it into the bound argument, and return {param: base tensor} for those with a
    base of their own (the tensors that stand for the descriptors in inputs and outputs)."""
    bases: dict = {}
    every: dict = {}
    for r in rebuilds:
        if r.shares is not None and r.shares in every:
            base = every[r.shares]
        elif r.shares is not None and hasattr(kwargs.get(r.shares), "data_ptr"):
            base = kwargs[r.shares]
        else:
            base = make_tensor(r.base)
            bases[r.param] = base
        every[r.param] = base
    for r in rebuilds:
        write(torch, kwargs[r.param], fill(r, int(every[r.param].data_ptr()) + r.offset))
    return bases


def write(torch, desc, data: bytes) -> None:
    """Put the filled bytes in the descriptor argument (a 128-byte tensor, on any device)."""
    src = torch.frombuffer(bytearray(data), dtype=torch.uint8).view(desc.dtype).reshape(desc.shape)
    desc.copy_(src.to(desc.device))
