"""CUDA C++ cases (kernels/cuda/): built with the stack's nvcc into PTX and a cubin, disassembled
and judged like a Triton case; on a GPU, launched through the CUDA driver API.

    compile_case(case, plan, kernels_dir, case_dir) -> record   (the case's process calls it)
    TmaCopy(cubin_path, BM, BN)(src, dst)                       copy one 2-D fp16 torch tensor

The launcher needs no compiler at run time: the cubin is loaded with cuModuleLoadData into the
context torch made current, the tensor maps are encoded with cuTensorMapEncodeTiled, and the
kernel is launched with cuLaunchKernel on torch's current stream, so the profiler, CUDA events and CUDA graph
capture time it like any other kernel. Standard library (ctypes) + torch, Python >= 3.9.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import time

from reprokit.common import oracle
from reprokit.harness import elf
from reprokit.harness.toolbox import add_sass, tool_version

NVCC_TIMEOUT_S = 300
# cuda.h's enums (CUtensorMapDataType, ...): the values this launcher uses.
_DTYPE_FLOAT16 = 6
_INTERLEAVE_NONE, _SWIZZLE_NONE, _L2_PROMOTION_128B, _OOB_FILL_NONE = 0, 0, 2, 0
_TENSOR_MAP_BYTES, _TENSOR_MAP_ALIGN = 128, 128


def find_nvcc() -> str | None:
    """The stack's nvcc: $CUDA_HOME/bin, then PATH, then /usr/local/cuda/bin."""
    candidates = [os.path.join(os.environ[v], "bin", "nvcc") for v in ("CUDA_HOME", "CUDA_PATH") if os.environ.get(v)]
    candidates += [shutil.which("nvcc") or "", "/usr/local/cuda/bin/nvcc"]
    return next((c for c in candidates if c and os.access(c, os.X_OK)), None)


def missing_nvcc() -> str | None:
    """Why a CUDA C++ case cannot be built here, or None."""
    return None if find_nvcc() else "no nvcc in this stack (CUDA_HOME, PATH, /usr/local/cuda/bin)"


def arch_flag(capability: int) -> str:
    """nvcc's -arch for a profile: the `a` variant from Hopper on, which TMA and wgmma need."""
    return f"sm_{capability}a" if capability >= 90 else f"sm_{capability}"


def nvcc_argv(nvcc: str, source: str, out: str, capability: int, constexprs: dict, kind: str) -> list:
    """kind: 'cubin' or 'ptx'. Constexprs become -D macros, as the kernel's #ifndef defaults expect."""
    defines = [f"-D{k}={v}" for k, v in sorted(constexprs.items())]
    # No -lineinfo: it writes the source's absolute path into the PTX and cubin (a host path, and
    # bytes that differ between two folders).
    return [nvcc, f"-{kind}", f"-arch={arch_flag(capability)}", "-O3", *defines, "-o", out, source]


def _run(argv: list, cwd: str) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, errors="replace", timeout=NVCC_TIMEOUT_S)


def compile_case(case: dict, plan: dict, kernels_dir: str, case_dir: str) -> dict:
    """Build one CUDA C++ case: PTX and cubin with nvcc, SASS with the stack's disassembler, the
    oracle's counts; the record has the shape of a Triton case's (status, artifacts, tma, nvcc)."""
    rec = {"id": case["id"], "status": "ok", "error": None, "artifacts": {}}
    nvcc = find_nvcc()
    if nvcc is None:  # no toolkit in this stack: what is missing, never a harness error
        return {**rec, "status": "unsupported", "error": missing_nvcc()}
    capability = plan["profile"]["capability"]
    # Relative to the kernels' parent folder, as Triton cases load theirs: the paths nvcc writes
    # into the PTX and line info then name no host folder.
    source = os.path.join(os.path.basename(kernels_dir), case["kernel"]["file"])
    cwd = os.path.dirname(os.path.abspath(kernels_dir))
    texts, runs = {}, []
    t0 = time.perf_counter()
    for kind in ("ptx", "cubin"):
        out = os.path.join(case_dir, "kernel." + kind)
        argv = nvcc_argv(nvcc, source, out, capability, case.get("constexprs", {}), kind)
        p = _run(argv, cwd)
        runs.append({"argv": [os.path.basename(nvcc), *argv[1:-3], "-o", "kernel." + kind, source],
                     "returncode": p.returncode})
        # ptxas names the file it assembles: the case folder's name, not this host's path.
        output = (p.stdout + p.stderr).replace(out, "kernel." + kind)
        sys.stderr.write(output)  # the case's compile.log
        if p.returncode != 0:
            lines = [ln for ln in output.splitlines() if ln.strip()]
            err = next((ln for ln in lines if "error" in ln), lines[-1] if lines else f"nvcc exited {p.returncode}")
            rec.update(status="compile_error", error=err.strip()[:500], exception="nvcc")
            break
        rec["artifacts"][kind] = "kernel." + kind
        if kind == "ptx":
            with open(out) as f:
                texts["ptx"] = f.read()
    rec["compile_s"] = round(time.perf_counter() - t0, 4)
    rec["nvcc"] = {"path": nvcc, "version": tool_version(nvcc), "runs": runs}
    if rec["status"] != "ok":
        return rec
    if plan.get("sass", True):
        add_sass(rec, case_dir, texts)
    rec["tma"], rec["tma_ops"] = oracle.scan_all(texts)
    shared = _static_shared_bytes(os.path.join(case_dir, "kernel.cubin"), case["kernel"]["function"])
    limit = plan["profile"]["smem_per_block"]
    rec["metadata"] = {"shared_bytes": shared, "num_warps": case["num_warps"], "num_stages": case["num_stages"],
                       "num_ctas": 1, "target_arch": capability}
    rec["launch"] = {"fits": shared <= limit, "shared_bytes": shared, "limit": limit}
    return rec


def _static_shared_bytes(cubin_path: str, function: str) -> int:
    """The kernel's static shared memory: the size of its .nv.shared.<function> section."""
    with open(cubin_path, "rb") as f:
        data = f.read()
    name = b".nv.shared." + function.encode()
    return sum(s.size for s in elf.sections(data) if s.name == name)


# -- launching on the GPU (driver API through ctypes) ----------------------------------------

class CudaError(RuntimeError):
    """A CUDA driver call failed; the message names the call and the driver's error."""


def _driver():
    lib = ctypes.CDLL("libcuda.so.1")
    lib.cuGetErrorName.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_char_p)]
    lib.cuTensorMapEncodeTiled.argtypes = [
        ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint64),
        ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint32),
        ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.cuLaunchKernel.argtypes = [
        ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint, ctypes.c_uint,
        ctypes.c_uint, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(ctypes.c_void_p)]
    lib.cuModuleLoadData.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_char_p]
    lib.cuModuleGetFunction.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_void_p, ctypes.c_char_p]
    lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    return lib


def _check(lib, what: str, result: int) -> None:
    if result != 0:
        name = ctypes.c_char_p()
        lib.cuGetErrorName(result, ctypes.byref(name))
        raise CudaError(f"{what} failed: {(name.value or b'CUDA error %d' % result).decode()}")


def tensor_map_args(rows: int, cols: int, row_stride_bytes: int, box_rows: int, box_cols: int):
    """cuTensorMapEncodeTiled's shape arrays for a row-major 2-D fp16 tensor, innermost first:
    (globalDim, globalStrides, boxDim, elementStrides). Pure, so that it is tested on the CPU."""
    if row_stride_bytes % 16:
        raise ValueError(f"TMA needs row strides that are multiples of 16 bytes, got {row_stride_bytes}")
    if box_cols * 2 % 16 or not (0 < box_rows <= 256 and 0 < box_cols <= 256):
        raise ValueError(f"TMA box {box_rows}x{box_cols} fp16: inner 16-byte multiple, at most 256 per dimension")
    return ((ctypes.c_uint64 * 2)(cols, rows), (ctypes.c_uint64 * 1)(row_stride_bytes),
            (ctypes.c_uint32 * 2)(box_cols, box_rows), (ctypes.c_uint32 * 2)(1, 1))


class _TensorMap:
    """A CUtensorMap in host memory, 128-byte aligned as cuda.h declares it."""

    def __init__(self):
        self._raw = ctypes.create_string_buffer(_TENSOR_MAP_BYTES + _TENSOR_MAP_ALIGN)
        base = ctypes.addressof(self._raw)
        self.address = (base + _TENSOR_MAP_ALIGN - 1) // _TENSOR_MAP_ALIGN * _TENSOR_MAP_ALIGN


class TmaCopy:
    """kernels/cuda/tma_copy.cu's tma_copy_2d, loaded from its cubin: `copy(src, dst)` copies one
    contiguous 2-D fp16 CUDA tensor into another of the same shape, on torch's current stream.
    Tensor maps are encoded once per (pointer, shape) pair and kept, as a user's code would."""

    def __init__(self, cubin_path: str, box_rows: int = 128, box_cols: int = 128, function: str = "tma_copy_2d"):
        import torch

        torch.cuda.init()  # torch's primary context becomes current on this thread
        torch.cuda.current_stream().synchronize()
        self.torch = torch
        self.box = (box_rows, box_cols)
        self.lib = lib = _driver()
        ctx = ctypes.c_void_p()
        _check(lib, "cuCtxGetCurrent", lib.cuCtxGetCurrent(ctypes.byref(ctx)))
        if not ctx.value:
            raise CudaError("no current CUDA context after torch.cuda.init()")
        with open(cubin_path, "rb") as f:
            self._image = f.read()
        self.module = ctypes.c_void_p()
        _check(lib, "cuModuleLoadData", lib.cuModuleLoadData(ctypes.byref(self.module), self._image))
        self.function = ctypes.c_void_p()
        _check(lib, "cuModuleGetFunction",
               lib.cuModuleGetFunction(ctypes.byref(self.function), self.module, function.encode()))
        self._maps: dict = {}

    def _map(self, t) -> _TensorMap:
        key = (t.data_ptr(), tuple(t.shape), tuple(t.stride()))
        tm = self._maps.get(key)
        if tm is None:
            if t.dtype != self.torch.float16 or t.dim() != 2 or t.stride(1) != 1 or not t.is_cuda:
                raise ValueError("TmaCopy takes 2-D fp16 CUDA tensors with unit innermost stride")
            tm = _TensorMap()
            dims, strides, box, elem = tensor_map_args(t.shape[0], t.shape[1], t.stride(0) * 2, *self.box)
            _check(self.lib, "cuTensorMapEncodeTiled", self.lib.cuTensorMapEncodeTiled(
                tm.address, _DTYPE_FLOAT16, 2, t.data_ptr(), dims, strides, box, elem,
                _INTERLEAVE_NONE, _SWIZZLE_NONE, _L2_PROMOTION_128B, _OOB_FILL_NONE))
            self._maps[key] = tm
        return tm

    def grid(self, rows: int, cols: int) -> tuple:
        return (-(-cols // self.box[1]), -(-rows // self.box[0]), 1)

    def __call__(self, src, dst) -> None:
        if tuple(src.shape) != tuple(dst.shape):
            raise ValueError(f"shapes differ: {tuple(src.shape)} and {tuple(dst.shape)}")
        s, d = self._map(src), self._map(dst)
        params = (ctypes.c_void_p * 2)(s.address, d.address)
        gx, gy, gz = self.grid(*src.shape)
        stream = self.torch.cuda.current_stream().cuda_stream
        _check(self.lib, "cuLaunchKernel", self.lib.cuLaunchKernel(
            self.function, gx, gy, gz, 32, 1, 1, 0, ctypes.c_void_p(stream), params, None))
