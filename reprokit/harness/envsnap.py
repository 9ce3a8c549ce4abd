"""The environment snapshot taken inside a stack: OS, Python, packages, NVIDIA tools, Triton
knobs and variables (secrets redacted before anything is written), NVML state on a GPU host."""

from __future__ import annotations

import mmap
import os
import platform
import re
import socket
import sys
import time

from reprokit.common import redact
from reprokit.harness import FORMAT, elf, nvml
from reprokit.harness.toolbox import tool_path, tool_version

ENV_PREFIXES = ("TRITON_", "MLIR_", "CUDA_", "NVIDIA_", "PYTORCH_", "TORCH_", "NCCL_")
ENV_NAMES = ("LD_LIBRARY_PATH", "PYTHONPATH", "PATH", "SOURCE_DATE_EPOCH")
# Names that public guides tell users to set; we always say whether this Triton reads them.
ALWAYS_CHECK = ("TRITON_TMA_ENABLE",)
_KNOB_NAME = re.compile(r"""["']((?:TRITON|MLIR)_[A-Z0-9_]+)["']""")


def snapshot(gpu: bool = False, index: int = 0) -> dict:
    """`index`: the NVML index of the GPU the run uses, whose board records env.json keeps."""
    import triton

    env_vars, redacted = redact.redact_env(
        {k: v for k, v in os.environ.items() if k.startswith(ENV_PREFIXES) or k in ENV_NAMES})
    return {
        "format": FORMAT,
        "taken": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "os": _os(),
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "implementation": platform.python_implementation()},
        "packages": {name: _package(name) for name in ("triton", "torch", "nvidia-ml-py", "numpy")},
        "tools": _tools(),
        "pip_freeze": _freeze(),
        "env_vars": env_vars,
        "redacted": redacted,
        "knobs": _knobs(triton),
        "unread_knobs": unread_knobs(os.environ),
        **_gpu(gpu, index),
    }


def _gpu(gpu: bool, index: int) -> dict:
    devices = nvml.snapshot_all() if gpu else None
    return {"gpu": devices, "board": nvml.board_records(devices, index)}


def _os() -> dict:
    distro = None
    try:
        with open("/etc/os-release") as f:
            for line in f:
                if line.startswith("PRETTY_NAME="):
                    distro = line.split("=", 1)[1].strip().strip('"')
    except OSError:
        pass
    return {"system": platform.system(), "release": platform.release(), "machine": platform.machine(),
            "distro": distro, "hostname": socket.gethostname(), "in_container": os.path.exists("/.dockerenv")}


def _package(name: str):
    from importlib import metadata, util

    try:
        version = metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
    spec = util.find_spec(name.replace("-", "_")) if name != "nvidia-ml-py" else util.find_spec("pynvml")
    location = os.path.dirname(spec.origin) if spec and spec.origin else None
    return {"version": version, "location": location}


def _tools() -> dict:
    out = {}
    for name in ("ptxas", "ptxas-blackwell", "cuobjdump", "nvdisasm"):
        path = tool_path(name)
        if path or name != "ptxas-blackwell":
            out[name] = {"path": path, "version": tool_version(path)}
    return out


def _freeze() -> list:
    from importlib import metadata

    seen = {}
    for d in metadata.distributions():
        name = d.metadata["Name"]
        if name and name.lower() not in seen:
            seen[name.lower()] = f"{name}=={d.version}"
    return sorted(seen.values(), key=str.lower)


def _knobs(triton):
    knobs = getattr(triton, "knobs", None)
    if knobs is None:
        return None
    out = {}
    for group_name in sorted(dir(knobs)):
        group = getattr(knobs, group_name)
        descriptors = getattr(group, "knob_descriptors", None)
        if group_name.startswith("_") or not isinstance(descriptors, dict):
            continue
        values = {}
        for name in sorted(descriptors):
            try:
                value = getattr(group, name)
            except (OSError, RuntimeError, ValueError) as e:  # a knob whose tool is missing
                value = f"<unavailable: {e}>"
            values[name] = value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)
        out[group_name] = values
    return out


def knobs_read_by_python() -> set:
    """Every TRITON_*/MLIR_* name that appears as a string literal in the installed Triton's Python."""
    import triton

    root = os.path.dirname(triton.__file__)
    names = set()
    for dirpath, _, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(dirpath, f), errors="replace") as fh:
                    names.update(_KNOB_NAME.findall(fh.read()))
    return names


def _read_by_library(names: set) -> set:
    """Which of `names` appear in libtriton.so (getenv in C++); only the names asked about.

    String literals live in the library's .rodata, about a tenth of its 400 MB: only that is
    searched when the file is an ELF we can read, else the whole file.
    """
    import triton

    found: set = set()
    lib_dir = os.path.join(os.path.dirname(triton.__file__), "_C")
    if not os.path.isdir(lib_dir) or not names:
        return found
    for f in os.listdir(lib_dir):
        if not f.endswith(".so"):
            continue
        with open(os.path.join(lib_dir, f), "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
            spans = _rodata_spans(m) or [(0, len(m))]
            for n in names - found:
                needle = n.encode() + b"\0"
                if any(m.find(needle, start, end) >= 0 for start, end in spans):
                    found.add(n)
    return found


def _rodata_spans(m) -> list:
    """(start, end) file offsets of the .rodata* sections, or [] when the file is no readable ELF."""
    return [(s.offset, s.offset + s.size) for s in elf.sections(m)
            if s.kind == elf.SHT_PROGBITS and s.name.startswith(b".rodata")]


def unread_knobs(environ) -> list:
    """Variables that look like Triton/MLIR knobs but that this Triton never reads."""
    import triton

    candidates = {k for k in environ if k.startswith(("TRITON_", "MLIR_"))} | set(ALWAYS_CHECK)
    # Variables the harness itself sets are read by every release it supports.
    candidates -= {"TRITON_HOME", "TRITON_DUMP_DIR", "TRITON_REPRODUCER_PATH"}
    unknown = candidates - knobs_read_by_python()
    unknown -= _read_by_library(unknown)
    out = []
    for name in sorted(unknown):
        where = "set in the environment" if name in environ else "not set"
        out.append({"name": name, "set": name in environ,
                    "why": f"triton {triton.__version__} reads {name} nowhere (Python sources and libtriton); {where}"})
    return out
