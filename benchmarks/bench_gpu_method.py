"""On a GPU host: does the L2 flush, or the idle gap, change the answer? Each suite baseline
(torch's copy at 4096^2 and 8192^2 fp16, cuBLAS at 2048^3, 4096^3 and 8192^3 fp16) timed by the
harness's benchmark with the flush on and off and the idle gap at 0 and 3x, one after another in
one process. Prints per benchmark and option the median, the spread, the lowest SM clock read
with a sample, the samples discarded, whether the noise target was reached and the seconds it
took; --json writes every row. docs/gpu.md quotes the H100's figures."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--json", type=str, default=None, help="write the rows here")
    args = ap.parse_args()
    import torch

    from reprokit.harness import bench

    rows = []
    cases = []
    for n in (4096, 8192):
        src = torch.randn(n, n, device="cuda", dtype=torch.float16)
        dst = torch.empty_like(src)
        cases.append((f"copy {n}^2", lambda d=dst, s=src: d.copy_(s)))
    for n in (2048, 4096, 8192):
        a = torch.randn(n, n, device="cuda", dtype=torch.float16)
        b = torch.randn(n, n, device="cuda", dtype=torch.float16)
        c = torch.empty(n, n, device="cuda", dtype=torch.float16)
        cases.append((f"gemm {n}^3", lambda a=a, b=b, c=c: torch.matmul(a, b, out=c)))
    print(f"{'benchmark':<12} {'flush':>5} {'idle':>4} {'median us':>10} {'spread':>7} {'min MHz':>8} "
          f"{'disc':>4} {'reached':>7} {'s':>5}")
    for name, fn in cases:
        for flush, idle in ((True, 0.0), (False, 0.0), (True, 3.0), (False, 3.0)):
            t0 = time.perf_counter()
            res = bench.compare({"x": fn}, flush=flush, idle_factor=idle)
            took = time.perf_counter() - t0
            k = res["x"]
            row = {"benchmark": name, "flush": flush, "idle_factor": idle, "median_ms": k["median_ms"],
                   "spread": k["spread"], "clock": k["clock"], "stopping": k["stopping"], "seconds": took,
                   "nvml_throttled": res["nvml"].get("throttled_for"), "headline": k["headline"]}
            rows.append(row)
            clk = k["clock"] or {}
            print(f"{name:<12} {str(flush):>5} {idle:>4g} {1e3 * k['median_ms']:>10.2f} {100 * (k['spread'] or 0):>6.2f}% "
                  f"{clk.get('min_mhz') or 0:>8.0f} {clk.get('discarded', 0):>4} {str(k['stopping']['reached']):>7} "
                  f"{took:>5.1f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
