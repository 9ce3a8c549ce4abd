"""What `reprokit init` writes: a commented starter reprokit.toml and, on request, an example
kernel with a case that calls it. Files are created exclusively: an existing one is never
replaced, whoever made it."""

from __future__ import annotations

import os
from pathlib import Path

from reprokit.errors import FileSystemError, OutputExists
from reprokit.userspec.project import PROJECT_FILE

EXAMPLE_KERNEL = "kernels/scale_rows.py"

_HEAD = '''# reprokit.toml: this project's own kernels and the calls reprokit compiles them with.
# The format: docs/user-cases.md. Check it with `reprokit check`; run it with
# `reprokit run --gpu h100 --stacks triton-3.6-cu130` (stacks and GPU profiles: `reprokit stacks`).

[project]
name = "{name}"
# Folders or files the kernels live in, relative to this file; each travels whole in every bundle
# (a kernel's helper modules come along). Unsaid: the folders of the cases' kernel files.
kernels = ["kernels/"]
# timeout_s = 300                # seconds per case (default 300)
'''

_EXAMPLE_CASE = '''
# One case: a kernel and a call to it, as the kernel would see it. Triton's JIT derives the
# signature and specialisation from the call, on each stack's own release.
[[case]]
id = "scale-rows.fp16"                           # unique: a-z 0-9 _ . -
kernel = "kernels/scale_rows.py:scale_rows"      # file relative to this one, then the @jit name
grid = [64]                                      # 1-3 whole numbers; default [1]
num_warps = 4                                    # launch options: num_warps, num_stages, num_ctas, maxnreg, ...
# configs = "all"                                # @triton.autotune kernels: "all" or [0, 2] (config indices)
# expect = "no-tma"                              # optional: "tma", "no-tma", "sass:UTMALDG", "regs<=128", "smem<=200000"

[case.args]                                      # every parameter without a default, by name
x_ptr = {{ tensor = [64, 1024], dtype = "float16" }}     # contiguous, 16-byte aligned unless strides/align say
out_ptr = {{ tensor = [64, 1024], dtype = "float16" }}
n_cols = 1024                                    # scalars: int, float, bool
scale = 0.5
BLOCK = 1024                                     # constexprs too: also str, {{ none = true }}, {{ dtype = "float16" }}
'''

_CASE_SKELETON = '''
# Declare each call as a [[case]] (reprokit init --example writes a working one):
#
# [[case]]
# id = "matmul.fp16"
# kernel = "kernels/matmul.py:matmul_kernel"
# grid = [132]
# num_warps = 8
# num_stages = 3
# expect = "tma"
#
# [case.args]
# a = { tensor = [4096, 4096], dtype = "float16" }
# b = { tensor = [4096, 4096], dtype = "float16", strides = [1, 4096], align = 8 }
# M = 4096
# ACTIVATION = "relu"
# BIAS = { none = true }
# a_desc = { descriptor = { tensor = [4096, 4096], dtype = "float16" }, block = [128, 64] }

# Stacks and GPU profiles of this project's own, beside the defaults (`reprokit stacks`), in
# stacks.toml's form; a name the defaults have is replaced:
#
# [stacks."triton-3.6-mine"]
# triton = "3.6.0"
# python = "3.12"
#
# [gpus.h100-pcie]
# name = "NVIDIA H100 PCIe"
# capability = 90
# sm_count = 114
# smem_per_block = 232448
# mem_bandwidth_gbs = 2000
# fp16_tflops = 756
'''

_KERNEL = '''"""An example kernel for reprokit: scale each row of a matrix (plain loads and stores, no TMA)."""

import triton
import triton.language as tl


@triton.jit
def scale_rows(x_ptr, out_ptr, n_cols, scale, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    mask = cols < n_cols
    x = tl.load(x_ptr + row * n_cols + cols, mask=mask)
    tl.store(out_ptr + row * n_cols + cols, x * scale, mask=mask)
'''


def starter_text(name: str, example: bool) -> str:
    return _HEAD.format(name=name) + (_EXAMPLE_CASE.format() if example else "") + _CASE_SKELETON


def write(folder: Path, *, name: str | None = None, example: bool = False) -> list[Path]:
    """Write reprokit.toml (and the example kernel) into folder; OutputExists, before anything
    is written, when any of them exists."""
    folder = Path(folder)
    name = name or folder.absolute().name or "my-kernels"
    files = [(folder / PROJECT_FILE, starter_text(name, example))]
    if example:
        files.append((folder / EXAMPLE_KERNEL, _KERNEL))
    for path, _ in files:
        if path.exists() or path.is_symlink():
            raise OutputExists(f"{path} exists; reprokit init never replaces a file (move it away first)")
    written = []
    # The kernels folder the starter names (made when missing, never emptied).
    try:
        (folder / "kernels").mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(folder / "kernels", e, "cannot create") from None
    for path, text in files:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL: a file that appears meanwhile is refused, not overwritten.
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            raise OutputExists(f"{path} exists; reprokit init never replaces a file (move it away first)") from None
        except OSError as e:
            raise FileSystemError.of(path, e, "cannot create") from None
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        written.append(path)
    return written
