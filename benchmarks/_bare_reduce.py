"""Baseline for bench_reduce: a bare `triton.compile` of every candidate a reduction compiled, one
after another, each in a forked child (a candidate may abort the compiler), in one stack's Python.

    python _bare_reduce.py PLAN KERNELS CANDIDATES.jsonl

Each child prepares the case the way the harness does (a suite case's ASTSource, or the JIT's own
specialisation of a declared call) and compiles it for the plan's target; nothing is written.
Prints {"compiled": N, "failed": M, "wall_s": S}.
"""

import json
import os
import sys
import tempfile
import time

import triton  # noqa: F401 - loaded once here, so that every forked child starts with it

from reprokit.harness import case as case_mod
from reprokit.harness import compat


def one(case: dict, plan: dict, kernels: str) -> None:
    target = compat.gpu_target(plan["profile"]["capability"])
    prepared = case_mod.prepare_case(case, plan, kernels)
    if case.get("kind") == "call":
        d = prepared.derived
        if d is None:
            os._exit(2)
        triton.compile(d.src, target=target, options=d.options)
    else:
        triton.compile(prepared, target=target, options=compat.compile_options(case["num_warps"], case["num_stages"]))


def main() -> None:
    plan = json.load(open(sys.argv[1]))
    kernels = sys.argv[2]
    rows = [json.loads(line) for line in open(sys.argv[3]) if line.strip()]
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    compiled = failed = 0
    t0 = time.perf_counter()
    for i, row in enumerate(rows):
        case = json.loads(row["case"])
        name = f"bare_{i}.py"
        with open(os.path.join(kernels, name), "w") as f:
            f.write(row["source"])
        if isinstance(case.get("kernel"), dict):
            case["kernel"] = {**case["kernel"], "file": name}
        if "file" in case:
            case["file"] = name
        pid = os.fork()
        if pid == 0:
            os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="bare-cache-")
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            try:
                one(case, plan, kernels)
                os._exit(0)
            except BaseException:  # noqa: BLE001 - a candidate the compiler refuses is a result here
                os._exit(1)
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            compiled += 1
        else:
            failed += 1
    print(json.dumps({"compiled": compiled, "failed": failed, "wall_s": time.perf_counter() - t0}))


main()
