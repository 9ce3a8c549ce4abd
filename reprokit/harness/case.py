"""One case in its own forked process: prepare and compile it by its language (triton_case,
cudacpp, inductor, generated), launch it on the GPU in GPU mode (launch), and leave its record.

Runs in the child that the runner forks per case. Everything it learns goes to
`cases/<id>/metadata.json`; a crash or timeout leaves no metadata, and the runner then builds
the record from the exit status and compile.log instead.
"""

from __future__ import annotations

import os
import sys
import traceback

from reprokit.common.files import write_json
from reprokit.harness.kinds import callcase, callgpu, cudacpp, generated, inductor, launch, triton_case
from reprokit.harness.toolbox import cubin_digest, one_line


def prepare_case(case: dict, plan: dict, kernels_dir: str):
    """What comes before the compile; the runner lets this happen while the previous case still
    compiles. A CUDA C++ or torch.compile case has nothing to prepare: its kernels' folder is
    handed on."""
    if case.get("language") in ("cuda", "inductor"):
        return kernels_dir
    if case.get("kind") == "call":  # a user's kernel and a call to it: the release's JIT derives the rest
        return callcase.prepare(case, plan, kernels_dir)
    if case.get("kind") == "generated":  # a kernel the program compiled itself (Inductor's): its recorded ASTSource
        return generated.prepare(case, plan, kernels_dir)
    return triton_case.prepare(case, kernels_dir)


def compile_case(case: dict, plan: dict, case_dir: str, src) -> dict:
    """Compile one prepared case by its language and write its artifacts; the record for metadata.json."""
    if case.get("language") == "cuda":
        return cudacpp.compile_case(case, plan, src, case_dir)
    if case.get("language") == "inductor":
        return inductor.compile_case(case, plan, src, case_dir)
    if case.get("kind") == "call":
        return callcase.compile_case(case, plan, case_dir, src)
    if case.get("kind") == "generated":
        return generated.compile_case(case, plan, case_dir, src)
    return triton_case.compile_case(case, plan, case_dir, src)


def child_main(case: dict, plan: dict, kernels_dir: str, case_dir: str, wait_for_go=None) -> int:
    """Body of the forked child; stdout/stderr already point at compile.log.

    With `wait_for_go`, the case is prepared first and compiled only once that returns True
    (False: the run was called off, leave no record).
    """
    src = error = None
    try:
        src = prepare_case(case, plan, kernels_dir)
    except Exception as e:  # noqa: BLE001 - reported once the case's turn comes
        traceback.print_exc()
        error = e
    if wait_for_go is not None and not wait_for_go():
        return 0
    if error is not None:
        rec = _harness_error(case, error)
    else:
        try:
            rec = compile_case(case, plan, case_dir, src)
        except Exception as e:  # noqa: BLE001 - a harness-side failure must still leave a record
            traceback.print_exc()
            rec = _harness_error(case, e)
        if rec.get("status") == "ok" and plan.get("mode") == "gpu":
            rec["gpu"] = _on_gpu(case, plan, kernels_dir, case_dir, rec)
    sys.stdout.flush()
    sys.stderr.flush()
    write_json(os.path.join(case_dir, "metadata.json"), rec)
    return 0


def _on_gpu(case: dict, plan: dict, kernels_dir: str, case_dir: str, rec: dict) -> dict:
    """Launch, check and benchmark the compiled case (reprokit.harness.kinds.launch); a failure of the
    harness itself there is kept as the case's GPU result, not lost with the compile's record."""
    if case.get("kind") == "generated":
        return {"status": "not_launched", "reason": "a generated kernel is compiled and held to the program's own "
                                                    "compile; the trace does not record its launch arguments"}
    aot = None
    if "cubin" in rec["artifacts"]:
        with open(os.path.join(case_dir, rec["artifacts"]["cubin"]), "rb") as f:
            aot = cubin_digest(f.read())
    try:
        on_gpu = callgpu.run_on_gpu if case.get("kind") == "call" else launch.run_on_gpu
        gpu = on_gpu(case, plan, kernels_dir, case_dir, aot)
    except Exception as e:  # noqa: BLE001 - as for the compile: a record, never a lost case
        traceback.print_exc()
        return {"status": "harness_error", "error": f"{type(e).__name__}: {one_line(e)}"}
    if os.path.exists(os.path.join(case_dir, "bench.json")):
        rec["artifacts"]["bench"] = "bench.json"
    return gpu


def _harness_error(case: dict, e: BaseException) -> dict:
    return {"id": case["id"], "status": "harness_error", "error": f"{type(e).__name__}: {one_line(e)}",
            "artifacts": {}}
