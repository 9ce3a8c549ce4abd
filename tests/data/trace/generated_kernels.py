"""What Inductor does, without a GPU: write a generated kernel module (importing its runtime
helpers, triton_helpers and libdevice, and what its benchmark harness imports, as Inductor's
output does: torch._dynamo's rand_strided) into a cache folder, load it
from there, and compile each kernel with `triton.compile(ASTSource(...))` for sm_90, once per
config (the second kernel has two: autotune candidates), as
torch/_inductor/runtime/triton_heuristics.py's _precompile_config does. Nothing launches: the
compiled kernels are what a trace must record.

With `--listener`, the program sets a compile listener of its own first (as a tool such as
tritonparse would), which must still see every compile. With `--patch`, it changes a global of
the generated module before compiling (as a program that patches a module's settings does): the
module's file no longer says what was compiled, and a capture from it cannot be the program's.
With `--ptxas PATH`, it points TRITON_PTXAS_PATH at another ptxas before compiling, as Inductor
points it at the one inside torch's package.
"""

import hashlib
import importlib.util
import os
import sys
import tempfile

# Inductor compiles ahead of time with the real JIT; under TRITON_INTERPRET=1 @triton.jit would
# give interpreted functions, which triton.compile cannot take.
os.environ["TRITON_INTERPRET"] = "0"

import triton  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler.compiler import ASTSource  # noqa: E402

MODULE = '''
import triton
import triton.language as tl

from torch._inductor.runtime import triton_helpers, triton_heuristics
from torch._inductor.runtime.triton_helpers import libdevice, math as tl_math
from torch._inductor.runtime.hints import AutotuneHint, ReductionHint, TileHint, DeviceProperties
triton_helpers.set_driver_to_gpu()

from torch._dynamo.testing import rand_strided
import torch
SCALE = tl.constexpr(1.0)


@triton.jit
def triton_poi_fused_gelu_exp_0(in_ptr0, out_ptr0, xnumel, XBLOCK: tl.constexpr):
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:]
    xmask = xindex < xnumel
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (x0), xmask).to(tl.float32)
    tmp1 = 0.5
    tmp2 = tmp0 * tmp1
    tmp3 = 0.7071067811865476
    tmp4 = tmp0 * tmp3
    tmp5 = libdevice.erf(tmp4)
    tmp6 = 1.0
    tmp7 = tmp5 + tmp6
    tmp8 = tmp2 * tmp7
    tmp9 = tl_math.exp(tmp8 * SCALE)
    tl.store(out_ptr0 + (x0), tmp9, xmask)


@triton.jit
def triton_per_fused_amax_softmax_1(in_ptr0, out_ptr0, xnumel, r0_numel, XBLOCK: tl.constexpr):
    R0_BLOCK: tl.constexpr = 128
    xoffset = tl.program_id(0) * XBLOCK
    xindex = xoffset + tl.arange(0, XBLOCK)[:, None]
    xmask = xindex < xnumel
    r0_index = tl.arange(0, R0_BLOCK)[None, :]
    r0_1 = r0_index
    x0 = xindex
    tmp0 = tl.load(in_ptr0 + (r0_1 + 128 * x0), xmask, other=0.0)
    tmp1 = tl.broadcast_to(tmp0, [XBLOCK, R0_BLOCK])
    tmp3 = tl.where(xmask, tmp1, float("-inf"))
    tmp4 = triton_helpers.max2(tmp3, 1)[:, None]
    tmp5 = tmp0 - tmp4
    tmp6 = tl_math.exp(tmp5)
    tmp7 = tl.broadcast_to(tmp6, [XBLOCK, R0_BLOCK])
    tmp9 = tl.where(xmask, tmp7, 0)
    tmp10 = tl.sum(tmp9, 1)[:, None]
    tmp11 = tmp6 / tmp10
    tl.store(out_ptr0 + (r0_1 + 128 * x0), tmp11, xmask)
'''

# (kernel, signature, configs: (XBLOCK, num_warps, num_stages)) as Inductor's heuristics give them
KERNELS = (
    ("triton_poi_fused_gelu_exp_0", {"in_ptr0": "*fp16", "out_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
     ((1024, 4, 1),)),
    ("triton_per_fused_amax_softmax_1", {"in_ptr0": "*fp32", "out_ptr0": "*fp32", "xnumel": "i32", "r0_numel": "constexpr",
                                         "XBLOCK": "constexpr"},
     ((1, 2, 1), (8, 8, 1))),
)


def load(folder: str):
    """As Inductor's PyCodeCache does: the module written to a file named by its hash (whole, by
    a rename, as its write_atomic does: compile workers load it while another writes it),
    imported from there."""
    path = os.path.join(folder, "cgxkernels.py")
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        f.write(MODULE)
    os.replace(tmp, path)
    # No GPU here: the module's set_driver_to_gpu() would find none (Inductor runs it on a GPU host).
    from torch._inductor.runtime import triton_helpers

    triton_helpers.set_driver_to_gpu = lambda: None
    spec = importlib.util.spec_from_file_location("cgxkernels", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def compile_config(name: str, xblock: int, warps: int, stages: int) -> str:
    """One config of one kernel, compiled as _precompile_config does; what a compile worker runs
    (generated_workers.py submits it to Inductor's own worker pool). Returns the kernel's name."""
    mod = load(_folder())
    signature = dict(next(k[1] for k in KERNELS if k[0] == name))
    fn = getattr(mod, name)
    constants = {"XBLOCK": xblock}
    if "r0_numel" in signature:
        constants["r0_numel"] = 128
    attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in ("in_ptr0", "out_ptr0")}
    binary = triton.compile(ASTSource(fn, signature, constants, attrs), target=GPUTarget("cuda", 90, 32),
                            options={"num_warps": warps, "num_stages": stages, "debug": False,
                                     "sanitize_overflow": False})
    assert binary.asm["cubin"], name
    return binary.metadata.name


def _folder() -> str:
    # As Inductor's cache: a folder named by the module's hash, the same on every run
    folder = os.path.join(tempfile.gettempdir(), "reprokit-generated-test", hashlib.sha256(MODULE.encode()).hexdigest()[:16])
    os.makedirs(folder, exist_ok=True)
    return folder


def main() -> int:
    seen = []
    if "--listener" in sys.argv:
        from triton import knobs

        def own_listener(*, src, metadata, metadata_group, times, cache_hit):
            seen.append(src.name)

        knobs.compilation.listener = own_listener
    mod = load(_folder())
    if "--patch" in sys.argv:
        import triton.language as tl

        mod.SCALE = tl.constexpr(2.0)
    if "--ptxas" in sys.argv:
        os.environ["TRITON_PTXAS_PATH"] = sys.argv[sys.argv.index("--ptxas") + 1]
    target = GPUTarget("cuda", 90, 32)
    compiled = 0
    for name, signature, configs in KERNELS:
        fn = getattr(mod, name)
        for xblock, warps, stages in configs:
            constants = {"XBLOCK": xblock}
            if "r0_numel" in signature:
                constants["r0_numel"] = 128
            attrs = {(fn.arg_names.index(a),): [["tt.divisibility", 16]] for a in ("in_ptr0", "out_ptr0")}
            src = ASTSource(fn, signature, constants, attrs)
            binary = triton.compile(src, target=target, options={"num_warps": warps, "num_stages": stages,
                                                                   "debug": False, "sanitize_overflow": False})
            assert binary.asm["cubin"], name
            compiled += 1
    print(f"compiled {compiled} kernels", f"(own listener saw {len(seen)})" if seen else "")
    return 0


if __name__ == "__main__":
    sys.exit(main())
