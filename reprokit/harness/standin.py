"""Stand-ins for what a compile-only stack lacks: a GPU driver, torch, and tensors with no data.

A user's kernel file is written for a machine with a GPU and torch. On a compile-only stack it
must still load and be specialised the way the running release's JIT would specialise a real
call, so three things stand in:

- `Driver`: what `triton.runtime.driver.active` answers (the GPU profile's target, device 0, its
  SM count and shared memory), for module-level calls such as Triton's tutorials make
  (`driver.active.get_active_torch_device()`, `.utils.get_device_properties(0)`,
  `.get_current_target()`) and for the JIT's own questions while it binds a call.
- `torch_module()`: a minimal `torch` put in `sys.modules` only when the real one is absent.
  Its limits, on purpose: dtypes (every name Triton maps, with `itemsize` and
  `is_floating_point`), `torch.dtype`, `torch.device`, `torch.Tensor` (= `Tensor` below),
  `empty`/`empty_strided`/`zeros`/`ones`/`randn`/`rand` that make data-less tensors,
  `cuda.is_available()` (False), `cuda.current_device()` (0) and `__version__`. There is no
  arithmetic, no data, no autograd, no `torch.nn`/`torch.library`: a kernel file that computes
  with torch at import, or decorates with torch APIs, fails to load with Python's own error,
  which the case reports.
- `numpy_module()`: a minimal `numpy`, likewise only when numpy is absent: the constants (e, pi,
  inf, nan), the scalar math functions of `math` (log, log2, exp, sqrt, ...), `prod` and the
  dtype names. Any other name is a placeholder that raises, saying so, only when called: a
  kernel file that uses numpy in its host functions still loads.
- `Tensor`: shape, dtype, strides and a data pointer with the recorded alignment, which is all
  the JIT reads from a tensor argument.
"""

from __future__ import annotations

import sys
import types

from reprokit.common.shapes import contiguous_strides

# The largest power of two up to 16 that divides a pointer is all the JIT reads from it: a base
# address far from zero keeps stand-in pointers plausible (and never null).
_BASE_PTR = 1 << 32

# name -> (itemsize, floating point): the torch dtypes Triton's type_canonicalisation_dict maps.
DTYPES = {
    "bool": (1, False), "uint8": (1, False), "int8": (1, False), "int16": (2, False), "uint16": (2, False),
    "int32": (4, False), "uint32": (4, False), "int64": (8, False), "uint64": (8, False),
    "float16": (2, True), "bfloat16": (2, True), "float32": (4, True), "float64": (8, True),
    "float8_e4m3fn": (1, True), "float8_e5m2": (1, True), "float8_e4m3fnuz": (1, True),
    "float8_e5m2fnuz": (1, True),
}
_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "long": "int64", "int": "int32",
            "short": "int16", "bfloat": "bfloat16"}


class dtype:  # torch's own spelling: kernel files test `isinstance(x, torch.dtype)`
    """A torch dtype as Triton reads it: `str()` gives `torch.<name>`."""

    __module__ = "torch"

    def __init__(self, name: str):
        self.name = name
        self.itemsize, self.is_floating_point = DTYPES[name]

    def __repr__(self) -> str:
        return "torch." + self.name

    __str__ = __repr__

    def __eq__(self, other) -> bool:
        return str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))


_DTYPE_OBJS = {name: dtype(name) for name in DTYPES}


def torch_dtype(name: str):
    """The dtype named `name` (torch's spelling, e.g. "float16"): torch's own when torch is
    present, else the stand-in's."""
    name = _ALIASES.get(name, name)
    torch = sys.modules.get("torch")
    if torch is not None and not getattr(torch, "__reprokit_standin__", False):
        return getattr(torch, name)
    if name not in _DTYPE_OBJS:
        raise ValueError(f"unknown dtype {name!r} (one of {', '.join(sorted(DTYPES))})")
    return _DTYPE_OBJS[name]


class device:  # torch's spelling
    __module__ = "torch"

    def __init__(self, type="cuda", index=None):
        if isinstance(type, str) and ":" in type:
            type, index = type.split(":")[0], int(type.split(":")[1])
        self.type, self.index = str(type), index

    def __repr__(self) -> str:
        return f"device(type='{self.type}'" + (f", index={self.index})" if self.index is not None else ")")

    def __str__(self) -> str:
        return self.type if self.index is None else f"{self.type}:{self.index}"

    def __eq__(self, other) -> bool:
        return str(other) == str(self)

    def __hash__(self) -> int:
        return hash(str(self))


class Tensor:
    """A tensor argument with no data: what the JIT and a kernel file's host code read from one
    (dtype, shape, strides, data pointer and its alignment, element size, device)."""

    __module__ = "torch"

    def __init__(self, shape, dt, strides=None, align: int = 16, device_=None):
        self.shape = tuple(int(n) for n in shape)
        self.dtype = dt if not isinstance(dt, str) else torch_dtype(dt)
        self._strides = tuple(int(s) for s in strides) if strides is not None else contiguous_strides(self.shape)
        self._align = int(align)
        self.device = device_ if device_ is not None else device("cuda", 0)

    def data_ptr(self) -> int:
        # `align` 16 means "16 or more"; below 16 the pointer is off by exactly that power of two.
        return _BASE_PTR + (self._align % 16)

    def stride(self, dim=None):
        return self._strides if dim is None else self._strides[dim]

    def size(self, dim=None):
        return self.shape if dim is None else self.shape[dim]

    def dim(self) -> int:
        return len(self.shape)

    ndim = property(dim)

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def element_size(self) -> int:
        return self.dtype.itemsize

    @property
    def is_cuda(self) -> bool:
        return getattr(self.device, "type", "cuda") == "cuda"

    def is_contiguous(self) -> bool:
        return self._strides == contiguous_strides(self.shape)

    def ptr_range(self) -> int:  # read by AMD's buffer-op specialisation in some releases
        return 0

    # What a kernel file's module-level set-up calls on a tensor: no data, so only the metadata moves.
    def to(self, *args, **kwargs) -> Tensor:
        dt = next((a for a in (*args, kwargs.get("dtype")) if isinstance(a, dtype)), None)
        return Tensor(self.shape, dt or self.dtype, self._strides, self._align, self.device) if dt else self

    def cuda(self, *args, **kwargs) -> Tensor:
        return self

    def contiguous(self) -> Tensor:
        return self if self.is_contiguous() else Tensor(self.shape, self.dtype, None, self._align, self.device)

    def half(self) -> Tensor:
        return self.to(torch_dtype("float16"))

    def float(self) -> Tensor:
        return self.to(torch_dtype("float32"))

    def bfloat16(self) -> Tensor:
        return self.to(torch_dtype("bfloat16"))

    def __repr__(self) -> str:
        return f"Tensor(shape={list(self.shape)}, dtype={self.dtype}, strides={list(self._strides)}, align={self._align})"


def _make(shape_args, kwargs, strides=None):
    shape = shape_args[0] if len(shape_args) == 1 and isinstance(shape_args[0], (tuple, list)) else shape_args
    dt = kwargs.get("dtype") or torch_dtype("float32")
    dev = kwargs.get("device")
    return Tensor(shape, dt, strides=strides, device_=device(dev) if isinstance(dev, str) else dev)


def _module(name: str, attrs: dict) -> types.ModuleType:
    mod = types.ModuleType(name)
    vars(mod).update(attrs)
    return mod


def torch_module() -> types.ModuleType:
    """The minimal `torch` described in this module's docstring."""
    def make(*shape, **kw):
        return _make(shape, kw)

    cuda = _module("torch.cuda", {"is_available": lambda: False, "current_device": lambda: 0,
                                  "device_count": lambda: 0})
    return _module("torch", {
        "__reprokit_standin__": True, "__version__": "0+reprokit.standin", "__file__": None,
        **_DTYPE_OBJS, **{alias: _DTYPE_OBJS[name] for alias, name in _ALIASES.items()},
        "dtype": dtype, "device": device, "Tensor": Tensor,
        "empty": make, "zeros": make, "ones": make, "randn": make, "rand": make,
        "empty_strided": lambda shape, strides, **kw: _make((shape,), kw, strides=strides),
        "cuda": cuda, "manual_seed": lambda seed: None,
    })


def numpy_module() -> types.ModuleType:
    """The minimal `numpy` described in this module's docstring."""
    import math

    def missing(name):
        def refuse(*args, **kwargs):
            raise RuntimeError(f"numpy.{name}: numpy is not installed in this stack (reprokit's stand-in "
                               "has only constants, scalar math and dtype names)")
        return refuse

    def module_getattr(name):
        if name.startswith("__"):  # import machinery and pickling probe dunders: a real miss
            raise AttributeError(name)
        return missing(name)

    scalar = ("log", "log2", "log10", "exp", "exp2", "sqrt", "ceil", "floor", "sin", "cos", "tanh", "isnan",
              "isinf", "isfinite")
    return _module("numpy", {
        "__reprokit_standin__": True, "__version__": "0+reprokit.standin", "__getattr__": module_getattr,
        **{name: getattr(math, name) for name in ("e", "pi", "inf", "nan")},
        **{name: getattr(math, name, None) or (lambda x: 2.0 ** x) for name in scalar},  # exp2: 3.11+ only
        "prod": math.prod, **{name: name for name in DTYPES},
    })


def ensure_numpy() -> bool:
    """Make `import numpy` work: the real numpy when installed, else the stand-in."""
    if "numpy" in sys.modules:
        return bool(getattr(sys.modules["numpy"], "__reprokit_standin__", False))
    try:
        import numpy  # noqa: F401
    except ImportError:
        sys.modules["numpy"] = numpy_module()
        return True
    return False


def ensure_torch() -> bool:
    """Make `import torch` work: the real torch when installed, else the stand-in (installed in
    sys.modules). Returns True when the stand-in is in use."""
    existing = sys.modules.get("torch")
    if existing is not None:
        return bool(getattr(existing, "__reprokit_standin__", False))
    try:
        import torch  # noqa: F401
    except ImportError:
        mod = torch_module()
        sys.modules["torch"] = mod
        sys.modules["torch.cuda"] = mod.cuda
        return True
    return False


class _Utils:
    def __init__(self, profile: dict):
        self._profile = profile

    def get_device_properties(self, device=0) -> dict:
        p = self._profile
        return {"max_shared_mem": int(p["smem_per_block"]), "multiprocessor_count": int(p["sm_count"]),
                "max_num_regs": 65536, "warpSize": 32, "sm_clock_rate": 0, "mem_clock_rate": 0,
                "mem_bus_width": 0}


class Driver:
    """What `triton.runtime.driver.active` answers with no GPU: the profile's target and facts.

    `torch_device` is the device kernel files get from `get_active_torch_device()`: "cuda" on a
    compile-only stack (no tensor is ever made there), "cpu" under the interpreter, where
    programs must make real tensors on the CPU.
    """

    backend = "cuda"

    def __init__(self, profile: dict, torch_device: str = "cuda"):
        self.profile = profile
        self.utils = _Utils(profile)
        self._torch_device = torch_device

    @classmethod
    def is_active(cls) -> bool:
        return False

    def get_current_target(self):
        # compat imports Triton: loaded only where a stand-in needs the release's target.
        from reprokit.harness import compat

        return compat.gpu_target(int(self.profile["capability"]))

    def get_current_device(self) -> int:
        return 0

    def set_current_device(self, device) -> None:
        pass

    def get_current_stream(self, device=None) -> int:
        return 0

    def get_active_torch_device(self):
        import torch

        return torch.device(self._torch_device, 0) if self._torch_device == "cuda" else torch.device("cpu")

    def get_device_interface(self):
        import torch

        return torch.cuda

    def map_python_to_cpp_type(self, ty: str) -> str:
        return "void*" if ty.startswith("*") else ty

    def get_benchmarker(self):
        def refuse(*args, **kwargs):
            raise RuntimeError("no GPU: reprokit's stand-in driver cannot time a kernel")

        return refuse

    def get_empty_cache_for_benchmark(self):
        raise RuntimeError("no GPU: reprokit's stand-in driver has no cache to flush")


def install_driver(profile: dict, torch_device: str = "cuda") -> Driver:
    """Make a stand-in the active Triton driver (undone by `restore_driver`)."""
    from triton.runtime.driver import driver

    stand_in = Driver(profile, torch_device)
    driver.set_active(stand_in)
    return stand_in


def restore_driver() -> None:
    """The real driver again, created lazily when next asked (as Triton does at start)."""
    from triton.runtime.driver import driver

    if hasattr(driver, "_active"):  # 3.2+: properties over _default/_active
        driver._active = driver._default
    else:  # 3.0-3.1: `active` is a plain attribute, `default` the lazy proxy
        driver.active = driver.default


def active_is_standin() -> bool:
    from triton.runtime.driver import driver

    current = getattr(driver, "_active", None) if hasattr(driver, "_active") else driver.active
    return isinstance(current, Driver)
