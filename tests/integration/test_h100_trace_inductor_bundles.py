"""The H100 trace bundles of torch.compile programs (bundles/examples/, traced on torch 2.11 +
Triton 3.6.0 by scripts/examples.py's device commands, where Inductor compiles in its worker pool
and points TRITON_PTXAS_PATH at torch's ptxas): norms and attention in the default mode, the MLP
with max-autotune (its GEMM templates' configs compiled as candidates, one chosen per autotuner):
what they recorded, read as a maintainer receives them, and their replay compile-only with no GPU
on the Triton-only stack of the same release, which has no torch and so not that ptxas."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "bundles" / "examples"
# bundle -> (generated kernels compiled, of them launched: the rest are configs its autotuning dropped).
# Max-autotune's choices vary from run to run (which GEMM template or extern kernel wins, which
# configs fold): the committed mlp bundle compiled 93 and launched 10; an earlier run, 96 and 12.
BUNDLES = {"h100-trace-inductor-norms-triton-3.6.0.tgz": (5, 4),
           "h100-trace-inductor-attention-triton-3.6.0.tgz": (16, 6),
           "h100-trace-inductor-mlp-triton-3.6.0.tgz": (93, 10)}
MAX_AUTOTUNE = "h100-trace-inductor-mlp-triton-3.6.0.tgz"


def _member(path: Path, suffix: str) -> dict:
    with tarfile.open(path) as tar:
        return json.load(tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith(suffix))))


@pytest.mark.parametrize("bundle", sorted(BUNDLES))
def test_every_kernel_of_the_program_was_recorded_and_its_compile_reproduced(bundle):
    path = EXAMPLES / bundle
    tj = _member(path, "/trace/trace.json")
    # the program, Inductor's compile sidecar and its 16 forked workers; the workers compiled (and,
    # with max-autotune, the program compiles its GEMM templates' configs itself, spread over the
    # workers as they come free: 12 of the 16 in one run, 13 in another)
    procs = dict(tj["processes"])
    compiled_in = procs.pop("compiled")
    assert procs == {"recorded": 18, "forked": 16, "launched": 1}
    assert 2 <= compiled_in <= 17 if bundle == MAX_AUTOTUNE else compiled_in == 1
    assert tj["exit_code"] == 0 and tj["missed"] == [] and tj["torch"] == "2.11.0" and tj["triton"] == "3.6.0"
    plan = {c["id"]: c for c in _member(path, "/plan.json")["cases"]}
    results = _member(path, "/results.json")["cases"]
    compiled, launched = BUNDLES[bundle]
    assert len(results) == compiled and all(c["kind"] == "generated" for c in plan.values())
    assert sum(1 for c in plan.values() if c["trace"]["launched"]) == launched
    for rec in results:
        case = plan[rec["id"]]
        assert rec["status"] == "ok" and rec["reproduced"]["same"] is True, rec
        if bundle == MAX_AUTOTUNE:
            # launched 3 times by _check.py, or as often as its autotuner benchmarked it
            assert (case["trace"]["launches"] > 0) == case["trace"]["launched"]
        elif case["trace"]["launched"]:
            assert case["trace"]["launches"] == 3  # _check.py runs the compiled module 3 times
        else:
            # a config its autotuner compiled and dropped before benchmarking (default mode)
            assert case["trace"]["launches"] == 0 and (case["trace"].get("autotune") or {}).get("chosen") is False
        torch_ptxas = {"ptxas": {"from": "torch", "file": "bin/ptxas", "version": "13.0", "env": "TRITON_PTXAS_PATH"}}
        if bundle == MAX_AUTOTUNE and "toolchain" not in case["trace"]:
            # the program compiled it with Triton's own ptxas (no other toolchain recorded), as the
            # capture does
            assert "toolchain" not in rec
            continue
        assert case["trace"]["toolchain"] == torch_ptxas
        assert rec["toolchain"]["ptxas"] == {"from": "torch", "file": "bin/ptxas", "version": "13.0"}


def test_max_autotune_records_its_candidates_and_marks_each_autotuners_choice():
    plan = _member(EXAMPLES / MAX_AUTOTUNE, "/plan.json")["cases"]
    tuned = [c["trace"]["autotune"] for c in plan if c["trace"].get("autotune")]
    # every config of an autotuned kernel is a case; exactly one per autotuner is the chosen one
    assert tuned and sum(1 for a in tuned if a["chosen"]) >= 1
    for a in tuned:
        assert a["configs"] >= 2 and isinstance(a["chosen"], bool)
    candidates = [c for c in plan if c["trace"].get("candidate")]
    assert len(candidates) >= 60 and not any(c["trace"]["launched"] for c in candidates)


@pytest.mark.parametrize("bundle", sorted(BUNDLES))
def test_a_triton_only_stack_compiles_every_kernel_and_does_not_judge_another_ptxas(stack_ready, tmp_path, bundle):
    stack_ready("triton-3.6-cu130")
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", str(EXAMPLES / bundle), "--stacks",
                        "triton-3.6-cu130", "--executor", "venv", "--workers", "2", "--out", str(tmp_path), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200, check=False)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    out = json.loads(p.stdout)
    assert out["grid"]["significant"] is False
    for c in out["grid"]["cases"]:
        recorded, replayed = c["cells"]
        # Triton's own ptxas (12.8) writes another PTX and SASS than torch's (13.0): that, and only that
        assert set(replayed["moved"]) <= {"ir.ptx", "ir.sass"}, (c["id"], replayed["moved"])
        assert replayed["status"] == "ok" and replayed["verdict"] == recorded["verdict"], c["id"]
        # TTIR, TTGIR and LLVM IR are the program's own; ptxas is Triton's here
        assert [replayed["ir"][lv] == recorded["ir"][lv] for lv in ("ttir", "ttgir", "llir")] == [True] * 3, c["id"]
    results = _member(Path(out["stacks"][0]["bundle"]), "/results.json")["cases"]
    plan = {c["id"]: c for c in _member(EXAMPLES / bundle, "/plan.json")["cases"]}
    for rec in results:
        if "toolchain" not in plan[rec["id"]]["trace"]:
            # compiled by the program with Triton's own ptxas: this stack has it, so it is judged
            assert rec["reproduced"]["same"] is True, rec
            continue
        assert rec["reproduced"]["same"] is None, rec
        assert "torch's ptxas 13.0 (torch/bin/ptxas), which this stack does not have" in rec["reproduced"]["reason"]



@pytest.mark.parametrize("stack", ["triton-3.5-cu130", "triton-3.9-cu132"])
def test_on_other_releases_every_generated_kernel_compiles_or_names_what_its_release_lacks(stack_ready, tmp_path,
                                                                                          stack):
    stack_ready(stack)
    for bundle in sorted(BUNDLES):
        p = subprocess.run([sys.executable, "-m", "reprokit", "replay", str(EXAMPLES / bundle), "--stacks", stack,
                            "--executor", "venv", "--workers", "2", "--out", str(tmp_path / bundle), "--json"],
                           capture_output=True, text=True, cwd=ROOT, timeout=1200, check=False)
        assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr[-3000:]  # 1: something moved, said in the grid
        out = json.loads(p.stdout)
        assert not out["grid"].get("failed"), out["grid"]
        for c in out["grid"]["cases"]:
            replayed = c["cells"][1]
            assert replayed["status"] in ("ok", "unsupported"), (bundle, c["id"], replayed)
            if replayed["status"] == "unsupported":
                assert replayed.get("error"), (bundle, c["id"], replayed)
