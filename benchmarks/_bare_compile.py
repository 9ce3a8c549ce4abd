"""Baseline for bench_capture: bare `triton.compile` of every plan case, sequential, one process.

Run with a stack's interpreter: python _bare_compile.py PLAN KERNELS. The caller times the whole
process, as it times the harness. Prints what ran, and `serial_s`: the import and Triton's cache
key (a hash of libtriton), which come before any compile and which no number of workers divides.
"""

import json
import os
import sys
import tempfile
import time

t0 = time.perf_counter()
import triton  # noqa: E402

from reprokit.harness import compat  # noqa: E402
from reprokit.harness.toolbox import load_kernel  # noqa: E402


def _triton_key():
    import importlib

    for mod_name in ("triton.runtime.cache", "triton.compiler.compiler"):
        key = getattr(importlib.import_module(mod_name), "triton_key", None)
        if key is not None:
            return key()
    return None


def main() -> None:
    plan = json.load(open(sys.argv[1]))
    kernels = sys.argv[2]
    target = compat.gpu_target(plan["profile"]["capability"])
    os.environ["TRITON_ALWAYS_COMPILE"] = "1"
    _triton_key()  # the first compile would compute it anyway (it is cached per process)
    serial_s = time.perf_counter() - t0
    compiled = failed = 0
    for case in plan["cases"]:
        if compat.missing_requirement(case["requires"]):
            continue
        os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="bare-cache-")
        fn = load_kernel(kernels, case["kernel"]["file"], case["kernel"]["function"])
        src = compat.make_source(fn, case["signature"], case["constexprs"], case["divisible_by_16"])
        try:
            triton.compile(src, target=target, options=compat.compile_options(case["num_warps"], case["num_stages"]))
            compiled += 1
        except Exception:  # noqa: BLE001 - negative controls are meant to fail
            failed += 1
    print(json.dumps({"serial_s": serial_s, "compiled": compiled, "failed": failed}))


main()
