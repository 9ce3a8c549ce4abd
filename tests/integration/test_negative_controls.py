"""A negative control passes only for the compiler's own rejection: a bug planted in the
harness's option building, or options the compiler refuses for another reason, must fail
loudly (status harness_error or verdict error, the run exiting non-zero), never read as
"rejected, met". Real compiles of the stride-2 tensor-descriptor P1 under Triton 3.6."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.triton

STACK = "triton-3.6-cu130"
CASE = "tensor_descriptor.p1"

# Loaded by the stack's Python before the harness (site imports `sitecustomize` from PYTHONPATH).
TYPO = """
import reprokit.harness.compat as compat

def compile_options(num_warps, num_stages):
    opts = {"num_warps": num_warps, "num_stages": num_stages}
    return {"num_warps": opts["num_warp"], "num_stages": opts["num_stages"]}  # the planted typo

compat.compile_options = compile_options
"""
BAD_OPTIONS = """
import reprokit.harness.compat as compat

compat.compile_options = lambda num_warps, num_stages: {"num_warps": 3, "num_stages": num_stages}
"""


def _capture(tmp_path, repo_root, plant: str | None):
    env = dict(os.environ)
    if plant is not None:
        site = tmp_path / "plant"
        site.mkdir()
        (site / "sitecustomize.py").write_text(plant)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    out = tmp_path / "cap"
    p = subprocess.run([sys.executable, "-m", "reprokit", "capture", "--gpu", "h100", "--stack", STACK,
                        "--executor", "venv", "--workers", "1", "--cases", CASE, "--out", str(out), "--json"],
                       cwd=repo_root, env=env, capture_output=True, text=True, timeout=600)
    return p, json.loads((out / "results.json").read_text()) if (out / "results.json").is_file() else None


def test_without_a_plant_the_p1_is_the_compilers_rejection(tmp_path, repo_root, stack_ready):
    stack_ready(STACK)
    p, results = _capture(tmp_path, repo_root, None)
    assert p.returncode == 0, p.stderr
    c = {c["id"]: c for c in results["cases"]}[CASE]
    assert c["verdict"] == "rejected" and c["met"] is True and "last dim must be 1" in c["error"]


def test_a_bug_in_option_building_fails_loudly_not_as_a_met_negative_control(tmp_path, repo_root, stack_ready):
    stack_ready(STACK)
    p, results = _capture(tmp_path, repo_root, TYPO)
    c = {c["id"]: c for c in results["cases"]}[CASE]
    assert c["status"] == "harness_error" and c["verdict"] == "error" and c["met"] is not True, c
    assert "KeyError" in c["error"] and "num_warp" in c["error"]
    # The run says so and exits 4; --json output stays clean JSON and names the case.
    assert p.returncode == 4, p.stderr
    assert f"1 case(s) failed in the harness, not in the compiler, so they prove nothing: {CASE}" in p.stderr
    assert json.loads(p.stdout)["harness_errors"] == [CASE]
    log = (tmp_path / "cap" / "logs" / "harness.log").read_text()
    assert f"failed in the harness, not in the compiler: {CASE}" in log


def test_a_p1_rejected_for_the_wrong_reason_is_an_error(tmp_path, repo_root, stack_ready):
    stack_ready(STACK)
    p, results = _capture(tmp_path, repo_root, BAD_OPTIONS)
    assert p.returncode == 0, p.stderr  # the compiler's own refusal: a result, judged
    c = {c["id"]: c for c in results["cases"]}[CASE]
    assert c["status"] == "compile_error" and "power of 2" in c["error"], c
    assert c["verdict"] == "error" and c["met"] is False
    assert "not the expected rejection (/Tensor descriptor last dim must be 1 but got 2/)" in c["reason"]
