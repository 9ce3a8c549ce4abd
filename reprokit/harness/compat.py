"""What differs between Triton releases, in one place: API probes, ASTSource, targets, tools.

Every probe asks the installed Triton what it has (attributes, parameters) instead of
comparing version numbers, so releases we have not seen keep working where their API does.
"""

from __future__ import annotations

import importlib
import inspect
import os
import re

import triton
import triton.language as tl

from reprokit.harness import astsource
from reprokit.harness.kinds import cudacpp
from reprokit.harness.toolbox import DISASSEMBLERS, file_digest, tool_path, tool_version

VERSION = triton.__version__


def missing_requirement(requires: list) -> str | None:
    """Return a one-line reason when an API the case needs is absent, else None.

    Each entry is `tl.NAME`, `module:dotted.name`, `tool:nvcc` (a CUDA C++ case's compiler), or
    alternatives joined by `|`.
    """
    for req in requires or []:
        if req == "tool:nvcc":
            why = cudacpp.missing_nvcc()
            if why:
                return why
        elif not any(_has(alt.strip()) for alt in req.split("|")):
            return f"triton {VERSION} lacks {req.replace('|', ' and ')}"
    return None


def _has(req: str) -> bool:
    if req.startswith("tl."):
        return hasattr(tl, req[3:])
    if req.startswith("module:"):
        try:
            mod = importlib.import_module(req[7:])
        except ImportError:
            return False
        return not getattr(mod, "__reprokit_standin__", False)  # reprokit.harness.standin's torch
    raise ValueError(f"unknown requirement form {req!r}")


_LACKS = re.compile(r"^module 'triton\.language' has no attribute '(\w+)'")
_REMOVED = re.compile(r"\bha(?:s|ve) been removed\b")


def removed_api(exc: BaseException | None) -> str | None:
    """The compiler's own words when a compile failed because this release keeps a name but
    dropped what it did, else None.

    3.9 still has `tl.make_block_ptr`, so the attribute probe above passes, but calling it raises
    NotImplementedError("Block pointers have been removed in favor of the tensor descriptor
    API"), which the code generator wraps in a CompilationError. Any NotImplementedError raised
    from Triton's own code, anywhere in the exception's chain, is read so; so is an
    AttributeError on `triton.language` (a kernel calling `tl.make_tensor_descriptor` on 3.0-3.3):
    the release lacks the API, the compiler did not fail.
    """
    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        lacks = _LACKS.match(str(exc)) if isinstance(exc, AttributeError) else None
        if lacks:  # the kernel calls tl.NAME, which this release does not have (make_tensor_descriptor before 3.4)
            return f"triton {VERSION} lacks tl.{lacks.group(1)}"
        if isinstance(exc, NotImplementedError) and _raised_in_triton(exc):
            return str(exc).strip().splitlines()[0] if str(exc).strip() else f"triton {VERSION}: not implemented"
        if _REMOVED.search(str(exc)) and _raised_in_triton(exc):
            # 3.9's Gluon: "async_copy_global_to_shared has been removed; call async_load instead"
            return next(ln.strip() for ln in str(exc).splitlines() if _REMOVED.search(ln))
        exc = exc.__cause__ or exc.__context__
    return None


def _raised_in_triton(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    root = os.path.dirname(triton.__file__) + os.sep
    return tb is not None and tb.tb_frame.f_code.co_filename.startswith(root)


def gpu_target(capability: int, warp_size: int = 32):
    try:
        from triton.backends.compiler import GPUTarget
    except ImportError:  # pragma: no cover - pre-3.0 layout
        from triton.compiler.compiler import GPUTarget
    return GPUTarget("cuda", capability, warp_size)


def _astsource_takes_constexprs() -> bool:
    from triton.compiler import ASTSource

    return "constexprs" in inspect.signature(ASTSource.__init__).parameters


def make_source(fn, signature: dict, constexprs: dict, divisible_by_16: list):
    """ASTSource for `fn` from a name-keyed signature, in whichever form this release takes
    (astsource.make_source, the same function every reproducer carries), after checking that
    every name is an argument of `fn`."""
    names = list(fn.arg_names)
    unknown = [a for a in list(signature) + list(constexprs) if a not in names]
    if unknown:
        raise ValueError(f"{fn.__name__} has no argument(s) {', '.join(unknown)}")
    return astsource.make_source(fn, signature, constexprs, divisible_by_16)


def astsource_form() -> str:
    """Which of make_source's three forms this release takes, by the same probes: "constexprs"
    (3.3+), "hints" (3.2) or "index" (3.0-3.1); the standalone reproducers write that form out."""
    if _astsource_takes_constexprs():
        return "constexprs"
    attrs_cls = _attrs_descriptor_class()
    return "hints" if attrs_cls is not None and hasattr(attrs_cls, "from_hints") else "index"


def _attrs_descriptor_class():
    from triton.compiler import compiler as c

    return getattr(c, "AttrsDescriptor", None)


def compile_options(num_warps: int, num_stages: int) -> dict:
    return {"num_warps": num_warps, "num_stages": num_stages}


def warm_up(capability: int) -> list:
    """Do once, before the runner forks, the set-up that every first compile in a process repeats.

    Only work that starts no thread is done here (hashing libtriton for the cache key, importing
    the code generator and backend, asking ptxas its version, registering LLVM's targets): no
    MLIR context is created, so no compiler thread exists when the process forks. Returns what
    was warmed, for the log.
    """
    warmed = []
    importlib.import_module("triton.compiler.code_generator")
    for mod_name in ("triton.runtime.cache", "triton.compiler.compiler"):
        key = getattr(importlib.import_module(mod_name), "triton_key", None)
        if key is not None:
            key()
            warmed.append(f"{mod_name}.triton_key")
            break
    from triton.compiler import compiler as cc

    if hasattr(cc, "make_backend"):
        cc.make_backend(gpu_target(capability))
        warmed.append("backend")
    nv = importlib.import_module("triton.backends.nvidia.compiler")
    get = getattr(nv, "get_ptxas_version", None)
    if get is not None:
        params = inspect.signature(get).parameters
        get(capability) if params else get()
        warmed.append("ptxas version")
    for name in ("ptxas", "ptxas-blackwell"):
        tool_version(tool_path(name))
    if os.environ.get("REPROKIT_SASS_CACHE"):  # the SASS cache keys on the disassemblers' bytes
        for path in filter(None, (tool_path(name) for name, _ in DISASSEMBLERS)):
            file_digest(path)
        warmed.append("disassembler digests")
    # LLVM's target registry is filled once per process by the first compile (about 20 ms a case
    # here); it only registers static tables, so doing it before the fork leaves no thread behind.
    llvm = getattr(importlib.import_module("triton._C.libtriton"), "llvm", None)
    if llvm is not None and hasattr(llvm, "init_targets"):
        llvm.init_targets()
        warmed.append("LLVM targets")
    return warmed
