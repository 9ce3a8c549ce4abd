"""Launching a compiled case on the GPU, in the case's own process: inputs, the launch itself
(through Triton's JIT with the case's exact config), a torch reference, determinism by output
hashes, and the benchmarks of P0 copies and GEMMs against torch's copy and cuBLAS.

Which arguments a suite kernel takes, and what it must compute, is written here once per kernel
function (RECIPES): a case with no recipe is reported as not launched, with the reason. A launch
failure (out of resources, illegal address, unsupported) becomes the case's GPU status with the
real error text; an illegal address poisons the CUDA context, which is one more reason each case
has its own process.
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import time
import traceback
from dataclasses import dataclass
from typing import Any

from reprokit.harness import bench, nvml, stats
from reprokit.harness.kinds import cudacpp
from reprokit.harness.toolbox import case_timeout, cubin_digest, load_kernel
from reprokit.harness.turns import GpuLock, Turns

POISON = float("nan")  # an fp16 NaN never comes out of a copy of random data or of a GEMM
DETERMINISM_RUNS = 5
COPY_BENCH_SIZES = ((4096, 4096), (8192, 8192))
GEMM_BENCH_SIZES = (2048, 4096, 8192)
# A GPU sweep's points (gemm-configs: hundreds of configs) are timed at the two sizes the
# config-fix proposal argues about, with the sweep's lighter budget (bench.SWEEP).
SWEEP_GEMM_SIZES = (4096, 8192)
# Correctness runs at sizes with tails: 4000 = 31 x 128 + 32, and TMA's 16-byte stride rule holds
# (4000 x 2 B is a multiple of 16). Tiled kernels without boundary handling run at the problem size.
TAIL = 4000
GEMM_CHECK = 2000  # 2000 = 15 x 128 + 80 = 7 x 256 + 208 = 62 x 32 + 16: tails on M, N and K
# The benchmark's L2 flush and idle gap, kept only where they change the answer (docs/gpu.md has
# the H100's figures with and without each): copies read data that would otherwise sit in the
# 50 MB L2 from the previous launch, so they are flushed; GEMMs of 4096 and more draw enough
# power to meet the board's cap back to back, so they idle 3x their time between launches.
IDLE_GEMM_FROM = 4096


def bench_policy(kind: str, size: dict) -> dict:
    """The options reprokit.harness.bench.compare takes for a benchmark of `kind` at `size`."""
    if kind == "gemm":
        return {"flush": True, "idle_factor": bench.IDLE_FACTOR if size["M"] >= IDLE_GEMM_FROM else 0.0}
    return {"flush": True, "idle_factor": 0.0}


@dataclass(frozen=True)
class Recipe:
    kind: str            # "copy" or "gemm"
    args: str            # how the kernel takes its operands (see _bind)
    grid: str            # "tiles" (M/BM x N/BN), "rows" (cdiv(M, BM)), "gemm"
    tails: bool          # the kernel handles sizes that are not multiples of its tile
    bench: bool          # benchmarked (P0 copies and GEMMs); the rest are checked only


# (family, kernel function) -> how to run it. Negative controls that compile are run only where
# what they compute is defined (block_ptr.p1 reads and writes a transposed view of the same bytes).
RECIPES = {
    ("block_ptr", "copy_p0"): Recipe("copy", "ptr_mn", "tiles", False, True),
    ("block_ptr", "copy_p1_strided"): Recipe("copy", "ptr_mn", "tiles", False, False),
    ("block_ptr", "copy_p2_stress"): Recipe("copy", "ptr_mn", "rows", True, False),
    ("experimental_descriptor", "copy_p0"): Recipe("copy", "exp_desc", "tiles", False, True),
    ("experimental_descriptor", "copy_p2_stress"): Recipe("copy", "exp_desc_mn", "rows", True, False),
    ("tensor_descriptor", "copy_p0"): Recipe("copy", "ptr_mn", "tiles", False, True),
    ("tensor_descriptor", "copy_p2_stress"): Recipe("copy", "ptr_mn", "rows", True, False),
    ("host_descriptor", "copy_p0"): Recipe("copy", "host_desc", "tiles", False, True),
    ("host_descriptor", "copy_p2_stress"): Recipe("copy", "host_desc_n", "rows", True, False),
    ("experimental_descriptor", "gemm_experimental_descriptor"): Recipe("gemm", "exp_desc_mnk", "gemm", True, True),
    ("tensor_descriptor", "gemm_tensor_descriptor"): Recipe("gemm", "ptr_mnk", "gemm", True, True),
    # The CUDA C++ ground truth: its own driver-API launcher (reprokit.harness.kinds.cudacpp).
    ("cuda_tma", "tma_copy_2d"): Recipe("copy", "cuda", "tiles", False, True),
}

NO_RECIPE = {
    ("tensor_descriptor", "copy_p1_strided"): "negative control: an innermost stride of 2 describes no "
                                              "TMA box, so what it would compute is undefined",
    ("experimental_descriptor", "copy_p1_narrow"): "negative control: an 8-byte box is below TMA's minimum",
    ("host_descriptor", "copy_p1_rank6"): "negative control: a 6-D box is beyond TMA's 5 dimensions",
    ("inductor", "mm"): "torch.compile cases run on the GPU inside their compile: Inductor launches and "
                        "times its candidates while it autotunes (reprokit.harness.kinds.inductor)",
}


def recipe_for(case: dict):
    """(Recipe, None) or (None, why this case is not launched)."""
    key = (case["family"], case["kernel"]["function"])
    if key in RECIPES:
        return RECIPES[key], None
    return None, NO_RECIPE.get(key, f"no launch recipe for {key[0]}/{key[1]}")


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


class Bound:
    """A kernel bound to operands of one size: `run()` launches it, `baseline()` runs torch's own
    op (copy or cuBLAS) into a separate output, `reference()` is what `out` must hold. `device`
    is "cpu" only under Triton's interpreter (a standalone reproducer's `--launch` in CI).
    Inlined into the standalone reproducers (reprokit.harness.reprolaunch): names only what is
    inlined beside it, and `stats.` names only stats' pure functions."""

    def __init__(self, torch, triton, fn, case: dict, recipe: Recipe, size: dict, seed: int = 0, cubin=None,
                 device: str = "cuda", fill: bool = True):
        self.torch, self.fn, self.case, self.recipe, self.size = torch, fn, case, recipe, size
        self.cubin, self.device = cubin, device
        cx = case["constexprs"]
        g = torch.Generator(device=device)
        g.manual_seed(seed)
        dev = device

        def rand(*shape):
            # fill=False: allocated, never written (no GPU work: a JIT warm-up beside another's timing)
            if fill:
                return torch.randn(*shape, device=dev, dtype=torch.float16, generator=g)
            return torch.empty(*shape, device=dev, dtype=torch.float16)

        if recipe.kind == "copy":
            M, N = size["M"], size["N"]
            self.src = rand(M, N)
            self.out = torch.empty_like(self.src)
            self.base_out = torch.empty_like(self.src)
            self.inputs = (self.src,)
        else:
            M, N, K = size["M"], size["N"], size["K"]
            self.a = rand(M, K)
            self.b = rand(K, N)
            self.out = torch.empty(M, N, device=dev, dtype=torch.float16)
            self.base_out = torch.empty_like(self.out)
            # (inlined into reproducers, which carry no types: a copy has one input, a GEMM two)
            self.inputs = (self.a, self.b)  # type: ignore[assignment]
        BM, BN = cx.get("BM", 128), cx.get("BN", 128)
        if recipe.grid == "tiles":
            self.grid = (M // BM, N // BN)
        elif recipe.grid == "rows":
            # (inlined into reproducers, which carry no types: one grid of one or two dimensions)
            self.grid = (_cdiv(M, BM),)  # type: ignore[assignment]
        else:
            self.grid = (_cdiv(M, BM), _cdiv(N, BN))
        self.args = self._bind(torch, triton, recipe.args, cx)
        self.kwargs = dict(cx, num_warps=case["num_warps"], num_stages=case["num_stages"])
        self.compiled = None

    def _bind(self, torch, triton, how: str, cx: dict) -> tuple:
        BM, BN, BK = cx.get("BM", 128), cx.get("BN", 128), cx.get("BK", 64)
        if how == "cuda":
            self.fn = cudacpp.TmaCopy(self.cubin, BM, BN, self.case["kernel"]["function"])
            return (self.src, self.out)
        if how == "ptr_mn":
            if self.case["family"] == "tensor_descriptor":
                _set_allocator(torch, triton, self.device)
            return (self.src, self.out, self.size["M"], self.size["N"])
        if how == "ptr_mnk":
            _set_allocator(torch, triton, self.device)
            return (self.a, self.b, self.out, self.size["M"], self.size["N"], self.size["K"])
        if how in ("host_desc", "host_desc_n"):
            from triton.tools.tensor_descriptor import TensorDescriptor

            s = TensorDescriptor.from_tensor(self.src, [BM, BN])
            d = TensorDescriptor.from_tensor(self.out, [BM, BN])
            return (s, d) if how == "host_desc" else (s, d, self.size["N"])
        if how in ("exp_desc", "exp_desc_mn"):
            self._descs = [experimental_descriptor(torch, triton, t, BM, BN) for t in (self.src, self.out)]
            return tuple(self._descs) + ((self.size["M"], self.size["N"]) if how == "exp_desc_mn" else ())
        if how == "exp_desc_mnk":
            self._descs = [experimental_descriptor(torch, triton, self.a, BM, BK),
                           experimental_descriptor(torch, triton, self.b, BK, BN),
                           experimental_descriptor(torch, triton, self.out, BM, BN)]
            return tuple(self._descs) + (self.size["M"], self.size["N"], self.size["K"])
        raise ValueError(f"unknown argument binding {how!r}")

    def run(self):
        if self.recipe.args == "cuda":
            return self.fn(*self.args)
        self.compiled = self.fn[self.grid](*self.args, **self.kwargs)
        return self.compiled

    def baseline(self):
        if self.recipe.kind == "copy":
            self.base_out.copy_(self.src)
        else:
            self.torch.matmul(self.a, self.b, out=self.base_out)

    def reference(self):
        if self.recipe.kind == "copy":
            return self.src
        return self.torch.matmul(self.a.float(), self.b.float())

    def poison(self):
        self.out.fill_(POISON)


def _set_allocator(torch, triton, device: str = "cuda") -> None:
    """Device-side descriptors need global scratch at launch (3.4+); 3.3 has no hook and none
    is needed there."""
    if hasattr(triton, "set_allocator"):
        triton.set_allocator(lambda size, align, stream: torch.empty(size, device=device, dtype=torch.int8))


def experimental_descriptor(torch, triton, t, box_rows: int, box_cols: int):
    """The 3.0-era host-filled CUtensorMap: 128 bytes filled on the host by Triton's own
    `fill_2d_tma_descriptor(ptr, rows, cols, box_rows, box_cols, elem_size, host_ptr)` and
    copied to the GPU; the kernel takes its address (`*i8`)."""
    fill = triton.runtime.driver.active.utils.fill_2d_tma_descriptor
    dims = (t.data_ptr(), t.shape[0], t.shape[1], box_rows, box_cols, t.element_size())
    host = torch.empty(128, dtype=torch.int8)
    try:
        fill(*dims, host.data_ptr())  # 3.1-3.3: the host buffer's address
    except TypeError:
        buf = bytearray(128)  # 3.0: a writable buffer (its tutorial passes a numpy array)
        fill(*dims, buf)
        host = torch.frombuffer(buf, dtype=torch.int8).clone()
    return host.to(t.device)


def output_digest(torch, t) -> str:
    """sha256 of a tensor's bytes (copied to the host)."""
    h = t.detach().contiguous().cpu()
    return hashlib.sha256(ctypes.string_at(h.data_ptr(), h.numel() * h.element_size())).hexdigest()


def check(torch, out, ref, exact: bool) -> dict:
    """Compare `out` with `ref` elementwise: unwritten elements (still the poison), mismatches
    beyond the dtype's tolerance, the largest error and the relative Frobenius error."""
    tol = stats.tolerance("float16", exact=exact)
    o, r = out.float(), ref.float()
    unwritten = int(torch.isnan(o).sum().item())
    diff = (o - r).abs()
    bound = tol["atol"] + tol["rtol"] * r.abs()
    bad = ~(diff <= bound)  # NaN counts as bad
    max_excess = float((diff - bound).nan_to_num(nan=float("inf")).max().item())
    rel_fro = float((torch.linalg.vector_norm((o - r).nan_to_num(nan=float("inf")))
                     / torch.linalg.vector_norm(r)).item())
    return {"ok": stats.within(max_excess, rel_fro, tol) and unwritten == 0, "elements": out.numel(),
            "unwritten": unwritten, "mismatched": int(bad.sum().item()),
            "max_abs_err": float(diff.nan_to_num(nan=float("inf")).max().item()), "rel_fro_err": rel_fro,
            "tolerance": tol, "dtype": "float16"}


def check_size(case: dict, recipe: Recipe, problem: dict) -> dict:
    if recipe.kind == "gemm":
        return {"M": GEMM_CHECK, "N": GEMM_CHECK, "K": GEMM_CHECK}
    if recipe.tails:
        return {"M": TAIL, "N": TAIL}
    return {"M": int(problem.get("M", 4096)), "N": int(problem.get("N", 4096))}


def run_on_gpu(case: dict, plan: dict, kernels_dir: str, case_dir: str, aot_cubin_digest) -> dict:
    """Everything a case does on the GPU; the dict goes under the record's `gpu` key. Benchmark
    samples go to `bench.json` beside the case's IR (the record holds their summaries).

    A sweep's point (plan `sweep`) is timed at SWEEP_GEMM_SIZES with the lighter bench.SWEEP
    budget. Every Triton case's JIT compiles before the case waits for the GPU (warm_jit): cases
    compile side by side while one at a time holds the GPU, instead of each compiling (and
    building its launcher stub) with the GPU held and the others waiting."""
    recipe, why = recipe_for(case)
    if recipe is None:
        return {"status": "not_launched", "reason": why}
    sweep_point = bool(case.get("sweep")) and bool(plan.get("sweep"))
    benched = recipe.bench and case["control"] in ("P0", "gemm")
    if benched and not sweep_point:
        import torch

        bench.warm_profiler(torch)  # seconds of CUPTI start-up, spent before waiting for the GPU
    fn = None if recipe.args == "cuda" else load_kernel(kernels_dir, case["kernel"]["file"],
                                                        case["kernel"]["function"])
    size = check_size(case, recipe, plan.get("problem") or {})
    cubin = os.path.join(case_dir, "kernel.cubin")
    if fn is not None:
        import torch
        import triton

        torch.cuda.init()
        # cuBLAS's handle (its library loaded, no kernel run) before the wait, not while holding the GPU
        torch.cuda.current_blas_handle()
        failed = warm_jit(torch, triton, fn, case, recipe, size)
        if failed is not None:
            return {"status": "ok", "device": torch.cuda.get_device_name(0), "check_size": size, **failed}
    t_wait = time.perf_counter()
    with GpuLock():
        import torch
        import triton

        torch.cuda.init()
        t_gpu = time.perf_counter()
        out = {"status": "ok", "device": torch.cuda.get_device_name(0), "check_size": size}
        try:
            bound = Bound(torch, triton, fn, case, recipe, size, cubin=cubin)
            bound.poison()
            bound.run()
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - the launch's failure is this case's GPU result
            traceback.print_exc()
            out.update(stats.classify_launch_error(type(e).__name__, str(e)))
            return out
        out["correctness"] = check(torch, bound.out, bound.reference(), exact=recipe.kind == "copy")
        compiled = bound.compiled
        if compiled is not None and isinstance(getattr(compiled, "asm", None), dict) and "cubin" in compiled.asm:
            jit = cubin_digest(compiled.asm["cubin"])
            out["jit_cubin"] = {"sha256_less_debug_line": jit, "same_as_compiled": jit == aot_cubin_digest}
        out["determinism"] = determinism_on_device(torch, bound)
        if not out["correctness"]["ok"]:
            out["status"] = "wrong"
        elif not out["determinism"]["deterministic"]:
            out["status"] = "nondeterministic"
        if benched and (out["status"] == "ok" or not sweep_point):
            samples: list = []
            how: dict[str, Any] = {"sizes": SWEEP_GEMM_SIZES, "budget": bench.SWEEP} if sweep_point else {}
            how["turns"] = Turns.of(case["id"], case_timeout(case, plan))
            out["bench"] = benchmark(torch, triton, fn, case, recipe, plan["profile"], samples, cubin, **how)
            path = os.path.join(case_dir, "bench.json")
            with open(path, "w") as f:
                json.dump({"case": case["id"], "unit": "ms", "runs": samples}, f, indent=1, sort_keys=True)
                f.write("\n")
        del bound
        torch.cuda.empty_cache()
        out["gpu_s"] = round(time.perf_counter() - t_gpu, 3)  # how long this case held the GPU
        out["gpu_wait_s"] = round(t_gpu - t_wait, 3)  # and how long it waited for it
    return out


def warm_jit(torch, triton, fn, case: dict, recipe: Recipe, size: dict) -> dict | None:
    """Compile the kernel through the JIT for this process, without launching it and without the
    GPU lock: operands allocated, never written, so no GPU work runs beside another case's
    timing. Every size the case runs at specialises the same way (M, N, K multiples of 16,
    16-byte aligned pointers), so the launches under the lock find it compiled. None, or the
    launch failure (classify_launch_error) that the JIT raised: the case's GPU result."""
    try:
        warm = Bound(torch, triton, fn, case, recipe, size, fill=False)
        kernel = fn.warmup(*warm.args, grid=warm.grid, **warm.kwargs)
        # The launcher stub (a C file built with the host's compiler, 0.5 s, never cached across
        # points: each has its own Triton cache) and the module's load happen at the first launch,
        # and so would under the lock: here instead. The load checks the shared memory a block
        # needs against the device's: a config that cannot launch fails here with that error.
        if hasattr(kernel, "_init_handles"):
            kernel._init_handles()
    except Exception as e:  # noqa: BLE001 - the JIT's failure is this case's GPU result
        traceback.print_exc()
        return stats.classify_launch_error(type(e).__name__, str(e))
    del warm
    return None


def determinism(torch, bound: Bound, runs: int = DETERMINISM_RUNS) -> dict:
    """The same inputs, `runs` launches, a fresh poison before each: the output's sha256 must
    not change (Triton issue #6638 reports TMA stores that do)."""
    digests = []
    for _ in range(runs):
        bound.poison()
        bound.run()
        if bound.out.is_cuda:
            torch.cuda.synchronize()
        digests.append(output_digest(torch, bound.out))
    return {"runs": runs, "distinct": len(set(digests)), "deterministic": len(set(digests)) == 1,
            "sha256": digests[0] if len(set(digests)) == 1 else digests}


_SAME_SIZE_INT = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def determinism_on_device(torch, bound: Bound, runs: int = DETERMINISM_RUNS) -> dict:
    """determinism()'s record, made with the GPU held for less: the first run's output is kept
    where it is and each later one compared with it bit for bit there, and one sha256 is made
    (of the first) instead of one per run, each after a copy to the host (for a 4096^2 copy the
    five copies and hashes held the GPU 0.38 s of the case's 0.39 s of checks, on the H100).
    Where any run differs, determinism() itself runs, for its record of every digest."""
    as_int = getattr(torch, _SAME_SIZE_INT.get(bound.out.element_size(), "uint8"))
    first = None
    for _ in range(runs):
        bound.poison()
        bound.run()
        if first is None:
            first = bound.out.detach().clone()
        elif not torch.equal(bound.out.view(as_int), first.view(as_int)):
            del first
            return determinism(torch, bound, runs)
    if bound.out.is_cuda:
        torch.cuda.synchronize()
    return {"runs": runs, "distinct": 1, "deterministic": True, "sha256": output_digest(torch, first)}


def benchmark(torch, triton, fn, case: dict, recipe: Recipe, profile: dict, samples: list, cubin=None,
              sizes: tuple = GEMM_BENCH_SIZES, budget: bench.Budget = bench.SUITE, turns=None) -> list:
    """The kernel against torch's copy (copies) or cuBLAS (GEMMs), at each benchmark size (GEMMs:
    `sizes`), each timed by the profiler, CUDA events and CUDA graphs (reprokit.harness.bench;
    `budget` says which and how long), NVML watching, its rounds in turn with other stacks' where
    `turns` says (reprokit.harness.turns); summaries returned, raw samples appended to `samples`."""
    rows = []
    if recipe.kind == "copy":
        shapes = [{"M": m, "N": n, "elem_bytes": 2} for m, n in COPY_BENCH_SIZES]
        peak, baseline = profile.get("mem_bandwidth_gbs"), "torch.copy_"
    else:
        shapes = [{"M": s, "N": s, "K": s} for s in sizes]
        peak, baseline = profile.get("fp16_tflops"), "cublas (torch.matmul)"
    for i, size in enumerate(shapes):
        bound = Bound(torch, triton, fn, case, recipe, size, seed=1, cubin=cubin)
        try:
            bound.run()  # compile + load before timing
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - recorded, like the check's launch
            rows.append({"size": size, **stats.classify_launch_error(type(e).__name__, str(e))})
            continue
        res = bench.compare({"kernel": bound.run, "baseline": bound.baseline}, nvml.index_for_cuda_device(0),
                            **bench_policy(recipe.kind, size), budget=budget, turns=turns, bench_index=i)
        samples.append({"size": size, "raw": res.pop("raw")})
        row = {"size": size, "baseline_name": baseline, **res}
        for who in ("kernel", "baseline"):
            row[who].update(stats.throughput(recipe.kind, size, row[who]["median_ms"], peak))
        row["ratio_to_baseline"] = row["baseline"]["median_ms"] / row["kernel"]["median_ms"]
        rows.append(row)
        del bound
    return rows
