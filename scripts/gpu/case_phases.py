"""Where a launched suite case's time holding the GPU goes, step by step, on a GPU host.

    python scripts/gpu/case_phases.py [CASE ...]      # default: a P1 copy, a P0 copy, a GEMM

For each case, in this process (no lock, nothing else on the GPU), the steps run_on_gpu takes
with the GPU held (reprokit.harness.kinds.launch), each timed after a synchronize: the operands
made, the poison, the first launch, the check against torch, the determinism runs (launches,
copies to the host and sha256 apart), and the cache emptied. Prints one JSON line per case.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time

import torch
import triton

from reprokit.config import load_config
from reprokit.harness.kinds import launch
from reprokit.harness.toolbox import load_kernel
from reprokit.suite import build_plan, kernels_dir

CASES = sys.argv[1:] or ["block_ptr.p1", "block_ptr.p0", "tensor_descriptor.gemm-128x128x128-w16-s4"]


def timed(steps: dict, name: str, fn):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    out = fn()
    torch.cuda.synchronize()
    steps[name] = round(steps.get(name, 0.0) + time.perf_counter() - t0, 4)
    return out


def main() -> None:
    plan = build_plan(load_config().gpu("h100"), {"name": "local", "triton": triton.__version__}, mode="gpu").to_json()
    torch.cuda.init()
    torch.cuda.current_blas_handle()
    for cid in CASES:
        case = next(c for c in plan["cases"] if c["id"] == cid)
        recipe, why = launch.recipe_for(case)
        fn = load_kernel(str(kernels_dir()), case["kernel"]["file"], case["kernel"]["function"])
        size = launch.check_size(case, recipe, plan.get("problem") or {})
        launch.warm_jit(torch, triton, fn, case, recipe, size)
        steps: dict = {}
        t_all = time.perf_counter()
        bound = timed(steps, "operands", lambda: launch.Bound(torch, triton, fn, case, recipe, size))
        timed(steps, "poison", bound.poison)
        timed(steps, "first launch", bound.run)
        timed(steps, "check", lambda: launch.check(torch, bound.out, bound.reference(), exact=recipe.kind == "copy"))
        for _ in range(launch.DETERMINISM_RUNS):
            timed(steps, "determinism: launches", lambda: (bound.poison(), bound.run()))
            host = timed(steps, "determinism: to the host", lambda: bound.out.detach().contiguous().cpu())
            timed(steps, "determinism: sha256", lambda: hashlib.sha256(host.numpy().tobytes()).hexdigest())
        del bound
        timed(steps, "empty_cache", torch.cuda.empty_cache)
        steps["all"] = round(time.perf_counter() - t_all, 4)
        print(json.dumps({"case": cid, "size": size, "steps_s": steps}), flush=True)


if __name__ == "__main__":
    main()
