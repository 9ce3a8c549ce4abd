"""Launch one suite case at a benchmark size, either timed by reprokit's benchmark (`--time`,
prints JSON) or launched N times with the L2 flushed before each (`--launches N`, for ncu to
measure). The GPU tier compares the two."""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path.insert(0, ROOT)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--size", type=int, required=True)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--time", action="store_true")
    g.add_argument("--launches", type=int)
    args = ap.parse_args()
    import torch
    import triton

    if args.case == "empty":
        return _empty(torch, triton, args)

    from reprokit.config import load_config
    from reprokit.harness import bench
    from reprokit.harness.kinds import launch
    from reprokit.harness.toolbox import load_kernel
    from reprokit.suite import build_plan

    case = build_plan(load_config().gpu("h100"), {"name": "local"}, only=args.case).to_json()["cases"][0]
    recipe, why = launch.recipe_for(case)
    fn = load_kernel(os.path.join(ROOT, "kernels"), case["kernel"]["file"], case["kernel"]["function"])
    size = {"M": args.size, "N": args.size} if recipe.kind == "copy" else {"M": args.size, "N": args.size, "K": args.size}
    bound = launch.Bound(torch, triton, fn, case, recipe, size, seed=1)
    bound.run()
    torch.cuda.synchronize()
    if args.time:
        res = bench.compare({"kernel": bound.run}, **launch.bench_policy(recipe.kind, size))
        k = res["kernel"]
        print(json.dumps({"median_ms": k["median_ms"], "headline": k["headline"],
                          "events_ms": k["events"]["median_ms"], "graph_median_ms": k["graph_median_ms"],
                          "spread": k["spread"], "agreement": k["agreement"], "profiler_error": k["profiler_error"],
                          "throttled": res["nvml"].get("throttled_for")}))
        return 0
    flush = bench._flusher(torch)
    for _ in range(args.launches):
        flush()
        bound.run()
    torch.cuda.synchronize()
    return 0


def _empty(torch, triton, args) -> int:
    """A kernel that does nothing (one program stores one word): what a launch costs each
    timing method by itself. ncu minus the profiler on it is ncu's fixed offset per launch."""
    import triton.language as tl

    from reprokit.harness import bench

    @triton.jit
    def empty_kernel(x):
        tl.store(x, 1.0)

    x = torch.zeros(1, device="cuda")

    def run():
        empty_kernel[(1,)](x)

    run()
    torch.cuda.synchronize()
    if args.time:
        k = bench.compare({"kernel": run}, flush=True)["kernel"]
        print(json.dumps({"median_ms": k["median_ms"], "headline": k["headline"], "events_ms": k["events"]["median_ms"]}))
        return 0
    flush = bench._flusher(torch)
    for _ in range(args.launches):
        flush()
        run()
    torch.cuda.synchronize()
    return 0


if __name__ == "__main__":
    sys.exit(main())
