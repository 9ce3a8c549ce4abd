"""Inside the traced program: 3.0-3.3's host-filled TMA descriptors, so a replay can fill them again.

A 3.0-era kernel takes `*i8` arguments that are 128 bytes the program filled on the host with
`triton.runtime.driver.active.utils.fill_1d/2d_tma_descriptor` (3.2-3.3 also through
`triton.tools.experimental_descriptor.create_1d/2d_tma_descriptor`): a CUtensorMap holding the
global address of one of the program's tensors. Those bytes mean nothing in another process, so
what is recorded is the fill itself: the base tensor it points into (its metadata, found among the
caller's locals by its data pointer), the offset of the address in it, the dims, the block dims
and the element size. A launch argument is matched to a fill by its bytes (the program copies
the filled buffer to the GPU, so identity is lost; the bytes are not).

What is wrapped is probed, not read from the version: the NVIDIA backend's `CudaUtils.__init__`
(where 3.0-3.3 set the fill functions from their compiled module; 3.4+ have none), in the
module the active driver really uses and the tools
module's `create_*` functions where the release has that module.
"""

from __future__ import annotations

import ctypes
import importlib.util
import sys
import threading
import weakref
from collections import OrderedDict

from reprokit.common.shapes import contiguous_strides
from reprokit.trace.inprogram import WRAPPED

DESC_BYTES = 128
_KEEP = 4096  # fills remembered for matching (a program fills a few per launch)
_FILLS: OrderedDict = OrderedDict()  # descriptor bytes -> (record, weakref to the base tensor or None)
# the element size's dtype where no base tensor was found (an approximation the record says)
_BY_SIZE = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


def install(describe_tensor) -> list:
    """Wrap what this release has; returns the names wrapped (for the start record)."""
    wrapped = []
    for utils in utils_classes():
        if not getattr(utils.__init__, WRAPPED, False):
            _wrap_utils_class(utils, describe_tensor)
            wrapped.append("CudaUtils.fill_*_tma_descriptor")
    if importlib.util.find_spec("triton.tools.experimental_descriptor") is not None:
        # 3.2-3.3: the public helpers (importing it imports torch, which such programs use anyway)
        from triton.tools import experimental_descriptor as tools

        for name in ("create_1d_tma_descriptor", "create_2d_tma_descriptor"):
            fn = getattr(tools, name, None)
            if fn is not None and not getattr(fn, WRAPPED, False):
                setattr(tools, name, _wrap_create(fn, name))
                wrapped.append(f"experimental_descriptor.{name}")
    return wrapped


def utils_classes() -> list:
    """The NVIDIA backend's CudaUtils classes: the one `driver.active.utils` is made from lives in
    a module that triton.backends loads from its file under another name (not
    `triton.backends.nvidia.driver`, which, when imported, is a second copy): both are wrapped."""
    import triton.backends

    out: list = []
    nvidia = (getattr(triton.backends, "backends", None) or {}).get("nvidia")
    driver_cls = getattr(nvidia, "driver", None)
    init = getattr(driver_cls, "__init__", None)
    cls = (getattr(init, "__globals__", None) or {}).get("CudaUtils")
    if isinstance(cls, type):
        out.append(cls)
    try:
        from triton.backends.nvidia import driver as module
    except ImportError:
        return out
    cls = getattr(module, "CudaUtils", None)
    if isinstance(cls, type) and cls not in out:
        out.append(cls)
    return out


def _wrap_utils_class(cls, describe_tensor):
    original = cls.__init__

    def __init__(self, *args, **kwargs):
        original(self, *args, **kwargs)
        _wrap_instance(self, describe_tensor)

    __init__.__dict__[WRAPPED] = True
    cls.__init__ = __init__
    existing = cls.__dict__.get("instance")  # made before the recorder was installed
    if existing is not None:
        _wrap_instance(existing, describe_tensor)


def _wrap_instance(utils, describe_tensor) -> None:
    for rank in (1, 2):
        name = f"fill_{rank}d_tma_descriptor"
        fn = getattr(utils, name, None)
        if fn is not None and not getattr(fn, WRAPPED, False):
            setattr(utils, name, _wrap_fill(fn, rank, f"driver.active.utils.{name}", describe_tensor))


_CREATING = threading.local()  # per thread: the create_* call a fill runs under (its name is the record's api)


def _creating() -> list:
    stack = getattr(_CREATING, "stack", None)
    if stack is None:
        stack = _CREATING.stack = []
    return stack


def _wrap_create(fn, name):
    def create(*args, **kwargs):
        _creating().append(f"triton.tools.experimental_descriptor.{name}")
        try:
            return fn(*args, **kwargs)
        finally:
            _creating().pop()

    create.__dict__[WRAPPED] = True
    return create


def _wrap_fill(fn, rank, api, describe_tensor):
    def fill(*args):
        result = fn(*args)
        try:
            stack = _creating()
            remember(rank, args, stack[-1] if stack else api, describe_tensor, sys._getframe(1))
        except (TypeError, ValueError, OverflowError):  # not the arguments a fill takes: the fill ran, no record
            pass
        return result

    fill.__dict__[WRAPPED] = True
    return fill


def remember(rank: int, args: tuple, api: str, describe_tensor, frame) -> dict:
    """Record one fill (`fill_Nd_tma_descriptor(ptr, dims..., blocks..., element_size, buffer)`)
    by the bytes it wrote."""
    ptr, rest, buf = int(args[0]), [int(a) for a in args[1:-1]], args[-1]
    dims, block, esize = rest[:rank], rest[rank:2 * rank], rest[2 * rank]
    data = read_buffer(buf)
    base = find_base(ptr, frame)
    rec = {"api": api, "rank": rank, "dims": dims, "block": block, "element_size": esize}
    if base is not None:
        rec.update(base=describe_tensor(base), offset=ptr - int(base.data_ptr()), base_found=True)
    else:
        rec.update(base={"tensor": dims, "dtype": _BY_SIZE.get(esize, "uint8"), "strides": list(contiguous_strides(dims)), "align": 16},
                   offset=0, base_found=False)
    _FILLS[data] = (rec, weakref.ref(base) if base is not None else None, ptr)
    _FILLS.move_to_end(data)
    while len(_FILLS) > _KEEP:
        _FILLS.popitem(last=False)
    return rec


def read_buffer(buf) -> bytes:
    """The 128 bytes a fill wrote: 3.0 takes a writable buffer (numpy, bytearray), 3.1-3.3 an address."""
    if isinstance(buf, int):
        return ctypes.string_at(buf, DESC_BYTES)
    return bytes(memoryview(buf).cast("B")[:DESC_BYTES])


def find_base(ptr: int, frame, depth: int = 8):
    """The tensor the filled address points into, among the locals of the fill's callers (the
    program's `fill(t.data_ptr(), ...)`): the one starting at `ptr`, else one whose elements span it."""
    inside = None
    while frame is not None and depth > 0:
        for v in list(frame.f_locals.values()):
            if not (hasattr(v, "data_ptr") and hasattr(v, "element_size") and hasattr(v, "stride")):
                continue
            start = int(v.data_ptr())
            if start == ptr:
                return v
            span = (1 + sum((n - 1) * s for n, s in zip(v.shape, v.stride()))) * v.element_size() if v.numel() else 0
            if inside is None and start < ptr < start + span:
                inside = v
        frame, depth = frame.f_back, depth - 1
    return inside


def has_fills() -> bool:
    return bool(_FILLS)


def descriptor_bytes(value):
    """A launch argument's bytes when it can be a host-filled descriptor, else None: a 128-byte
    tensor (on the GPU: copied back, once per new specialisation) or a TmaDescKernelParam."""
    if hasattr(value, "tma_desc_cpu_ptr"):
        return ctypes.string_at(int(value.tma_desc_cpu_ptr()), DESC_BYTES)
    if not (hasattr(value, "data_ptr") and hasattr(value, "element_size") and hasattr(value, "numel")):
        return None
    if value.numel() * value.element_size() != DESC_BYTES or not value.is_contiguous():
        return None
    host = value.detach().reshape(-1).cpu()
    return ctypes.string_at(int(host.data_ptr()), DESC_BYTES)


def match(bound: dict) -> tuple[dict, dict]:
    """For a launch's bound arguments: ({param: fill record}, {param: base tensor}) of those that
    are bytes a recorded fill wrote. Two fills over one tensor, or a fill over a tensor the kernel
    also takes as an argument, say so (`shares`: that parameter), so the replay uses one tensor."""
    records: dict = {}
    bases: dict = {}
    seen_ptrs: dict = {}
    for name, v in bound.items():
        if hasattr(v, "data_ptr") and hasattr(v, "stride") and not _maybe_descriptor(v):
            seen_ptrs.setdefault(int(v.data_ptr()), name)
    for name, v in bound.items():
        data = descriptor_bytes(v)
        hit = _FILLS.get(data) if data is not None else None
        if hit is None:
            continue
        rec, ref, ptr = hit
        rec = dict(rec)
        base = ref() if ref is not None else None
        key = int(base.data_ptr()) if base is not None else ptr - rec["offset"]
        if key in seen_ptrs and base is not None:
            rec["shares"] = seen_ptrs[key]
        else:
            seen_ptrs[key] = name
            if base is not None:
                bases[name] = base
        records[name] = rec
    return records, bases


def _maybe_descriptor(v) -> bool:
    return v.numel() * v.element_size() == DESC_BYTES and str(v.dtype).endswith("int8")
