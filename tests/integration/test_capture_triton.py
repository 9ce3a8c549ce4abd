"""Real compiles with pinned Triton 3.0.0, 3.5.0 and 3.6.0, compile-only, no GPU."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ALL_STACKS, by_id

pytestmark = pytest.mark.triton

# What each release offers (and so which positive controls must show TMA).
TMA_P0 = {
    "triton-3.0-cu129": ["experimental_descriptor.p0"],
    "triton-3.5-cu130": ["tensor_descriptor.p0", "host_descriptor.p0"],
    "triton-3.6-cu130": ["tensor_descriptor.p0", "host_descriptor.p0"],
}
UNSUPPORTED_FAMILIES = {
    "triton-3.0-cu129": ["tensor_descriptor", "host_descriptor"],
    "triton-3.5-cu130": ["experimental_descriptor"],
    "triton-3.6-cu130": ["experimental_descriptor"],
}
PTXAS_MAJOR_MINOR = {"triton-3.0-cu129": "12.4", "triton-3.5-cu130": "12.8", "triton-3.6-cu130": "12.8"}


@pytest.fixture(scope="module", params=ALL_STACKS)
def h100(request, captured):
    """The whole suite, h100, made with conftest.CAPTURE_ENV set (as every shared capture is)."""
    return request.param, captured(request.param)


def test_block_pointer_p0_emits_no_tma(h100):
    _, cap = h100
    c = by_id(cap)["block_ptr.p0"]
    assert c["status"] == "ok"
    assert c["verdict"] == "no-tma" and c["met"] is False
    assert set(c["tma"]) == {"ttir", "ttgir", "llir", "ptx", "sass"}
    assert all(v == 0 for v in c["tma"].values())
    sass = (cap.out_dir / c["artifacts"]["sass"]).read_text()
    assert "LDG" in sass and "STG" in sass and "UTMALDG" not in sass


def test_block_pointer_p2_is_inconclusive_when_p0_shows_no_tma(h100):
    _, cap = h100
    c = by_id(cap)["block_ptr.p2"]
    assert c["status"] == "ok" and c["verdict"] == "inconclusive" and c["met"] is None


def test_positive_controls_emit_tma_at_ttgir_ptx_and_sass(h100):
    stack, cap = h100
    cases = by_id(cap)
    for cid in TMA_P0[stack]:
        c = cases[cid]
        assert c["verdict"] == "tma" and c["met"] is True, (cid, c["reason"])
        for level in ("ttgir", "ptx", "sass"):
            assert c["tma"][level] >= 2, (cid, level, c["tma"])  # one load and one store
        sass = (cap.out_dir / c["artifacts"]["sass"]).read_text()
        assert "UTMALDG" in sass and "UTMASTG" in sass


def test_no_negative_control_emits_tma(h100):
    _, cap = h100
    p1s = [c for c in cap.results.to_json()["cases"] if c["control"] == "P1"]
    assert len(p1s) == 4
    for c in p1s:
        assert c["verdict"] in ("no-tma", "rejected", "crashed", "unsupported"), (c["id"], c["verdict"])
        assert not any((c.get("tma") or {}).values()), (c["id"], c["tma"])


def test_missing_apis_are_unsupported_not_crashes(h100):
    stack, cap = h100
    for c in cap.results.to_json()["cases"]:
        if c["family"] in ("cuda_tma", "inductor"):
            continue  # nvcc's and the GPU's to decide: tests/integration/test_cuda_tma.py, tests/gpu
        if c["family"] in UNSUPPORTED_FAMILIES[stack]:
            assert c["status"] == "unsupported" and c["verdict"] == "unsupported", c["id"]
            assert "lacks" in c["error"]
        else:
            assert c["status"] != "unsupported", c["id"]


def test_aggressive_gemm_configs_compile_but_cannot_launch_on_h100(h100):
    _, cap = h100
    gemms = [c for c in cap.results.to_json()["cases"] if c["control"] == "gemm" and c["status"] == "ok"]
    assert len(gemms) == 5
    for c in gemms:
        aggressive = "-w16-s4" in c["id"]
        assert c["launch"]["fits"] is not aggressive, (c["id"], c["launch"])
        assert c["verdict"] == "tma"
        if aggressive:
            assert c["launch"]["shared_bytes"] > 232448 and "h100 allows 232448" in c["launch"]["reason"]


def test_compile_metadata_and_the_ptxas_that_ran(h100):
    stack, cap = h100
    c = by_id(cap)["block_ptr.p0"]
    md = c["metadata"]
    assert md["num_warps"] == 8 and md["num_stages"] == 4 and md["registers"] > 0
    assert md["spill_stores"] == 0 and md["shared_bytes"] == 0
    assert c["compile_s"] > 0
    ptxas = c["ptxas"]
    assert ptxas["version"].startswith(PTXAS_MAJOR_MINOR[stack])
    assert "/triton/backends/nvidia/bin/ptxas" in ptxas["path"]
    assert any(a.startswith("--gpu-name=sm_90") for a in ptxas["argv"])
    assert ptxas["argv"][-2] == "-o" and "2>" not in ptxas["argv"]  # the command, not 3.0's shell plumbing
    for kind, rel in c["artifacts"].items():
        assert (cap.out_dir / rel).is_file(), kind


def test_env_snapshot(h100):
    stack, cap = h100
    env = json.loads((cap.out_dir / "env.json").read_text())
    assert env["packages"]["triton"]["version"] == cap.stack.triton
    assert env["tools"]["ptxas"]["version"].startswith(PTXAS_MAJOR_MINOR[stack])
    assert any(p.startswith("triton==") for p in env["pip_freeze"])
    unread = {k["name"]: k for k in env["unread_knobs"]}
    assert unread["TRITON_TMA_ENABLE"]["set"] is True
    assert env["env_vars"]["TRITON_REMOTE_CACHE_TOKEN"] == "<redacted>"
    assert "TRITON_REMOTE_CACHE_TOKEN" in env["redacted"]
    assert b"tok-3f9a1c77e5" not in (cap.out_dir / "env.json").read_bytes()
    if stack == "triton-3.0-cu129":
        assert env["knobs"] is None
    else:
        assert "nvidia" in env["knobs"] and "cache" in env["knobs"]


def test_summary_has_one_row_per_case(h100):
    _, cap = h100
    rows = (cap.out_dir / "summary.tsv").read_text().splitlines()
    assert rows[0].split("\t")[:5] == ["id", "family", "control", "status", "verdict"]
    assert [r.split("\t")[0] for r in rows[1:]] == [c["id"] for c in cap.results.to_json()["cases"]]


def test_compiler_abort_leaves_evidence_and_the_run_goes_on(captured):
    cap = captured("triton-3.0-cu129")
    c = by_id(cap)["experimental_descriptor.p1"]
    assert c["status"] == "crash" and c["signal"] == "SIGABRT" and c["verdict"] == "crashed"
    assert "UNREACHABLE" in c["error"] and "UNREACHABLE" in c["stderr_tail"]
    log = (cap.out_dir / c["artifacts"]["compile_log"]).read_text()
    assert "unsupported shared memory layout" in log
    # The crash is compiled once more with a reproducer path, which only failed cases get.
    assert "tt.func" in (cap.out_dir / c["artifacts"]["reproducer"]).read_text()
    ok = by_id(cap)["experimental_descriptor.p0"]
    # (Every case has its standalone reproducer.py; only failed ones an MLIR reproducer.)
    assert "reproducer" not in ok["artifacts"] and not list((cap.out_dir / "cases" / ok["id"]).glob("*.mlir"))
    after = [x for x in cap.results.to_json()["cases"] if x["status"] == "ok"]
    assert len(after) >= 8  # the cases queued after the crash still compiled


def test_mlir_pass_failure_names_the_pass_and_keeps_a_reproducer(captured):
    cap = captured("triton-3.6-cu130")
    c = by_id(cap)["host_descriptor.p1"]
    assert c["status"] == "compile_error" and c["verdict"] == "rejected" and c["met"] is True
    assert c["failing_pass"] == "TritonNvidiaGPUTMALoweringPass"
    planned = {p["id"]: p for p in json.loads((cap.out_dir / "plan.json").read_text())["cases"]}
    assert "at most 5" in planned[c["id"]]["description"]
    assert "between 1 and 5 coordinates" in c["error"]
    repro = (cap.out_dir / c["artifacts"]["reproducer"]).read_text()
    assert "tt.descriptor_load" in repro
    # A front-end refusal fails before any pass runs: no reproducer, and no rerun for one.
    assert "reproducer" not in by_id(cap)["tensor_descriptor.p1"]["artifacts"]


def test_timeout_kills_the_case_and_the_others_complete(captured):
    def edit(plan):
        for case in plan["cases"]:
            if "gemm" in case["id"]:
                # Far below this GEMM's compile (its ptxas alone runs longer); 0.3 s let it finish once
                case["timeout_s"] = 0.05
        return plan

    cap = captured("triton-3.6-cu130", cases="tensor_descriptor.p0,tensor_descriptor.gemm-128x256x64-w8-s3",
                   edit=edit, key="timeout")
    cases = by_id(cap)
    g = cases["tensor_descriptor.gemm-128x256x64-w8-s3"]
    assert g["status"] == "timeout" and g["signal"] == "SIGKILL" and g["verdict"] == "timeout"
    assert "0.05 s" in g["error"] and g["wall_s"] < 5
    assert cases["tensor_descriptor.p0"]["verdict"] == "tma"


@pytest.mark.parametrize("stack", ["triton-3.0-cu129", "triton-3.5-cu130", "triton-3.6-cu130"])
@pytest.mark.parametrize("gpu", ["b200", "gb10"])
def test_blackwell_profiles_say_truthfully_what_fails(captured, stack, gpu):
    cap = captured(stack, gpu=gpu, cases="block_ptr.p0,tensor_descriptor.p0,experimental_descriptor.p0")
    cases = by_id(cap)
    arch = {"b200": "sm_100", "gb10": "sm_121"}[gpu]
    if stack == "triton-3.0-cu129":
        # Its ptxas (CUDA 12.4) predates Blackwell; its LLVM cannot lower some intrinsics for it.
        bp = cases["block_ptr.p0"]
        assert bp["status"] == "compile_error" and f"Value '{arch}' is not defined" in bp["error"]
        ed = cases["experimental_descriptor.p0"]
        assert ed["status"] in ("crash", "compile_error") and ed["error"]
    elif stack == "triton-3.5-cu130" and gpu == "gb10":
        # 3.5 ships ptxas 12.8, which knows sm_120 but not sm_121.
        td = cases["tensor_descriptor.p0"]
        assert td["status"] == "compile_error" and "sm_121a" in td["stderr_tail"]
    else:
        td = cases["tensor_descriptor.p0"]
        assert td["status"] == "ok" and td["verdict"] == "tma" and td["tma"]["ptx"] >= 2
        if gpu == "gb10" and stack == "triton-3.6-cu130":
            # The wheel's cuobjdump 12.8 cannot decode SM121a: SASS is missing, and says why.
            assert "sass" not in td["tma"] and "cuobjdump" in td["sass_error"]
        else:
            assert td["tma"]["sass"] >= 2
        assert td["ptxas"]["argv"][0].endswith("ptxas-blackwell" if stack == "triton-3.6-cu130" else "ptxas")


def test_cli_capture_json(tmp_path, stack_ready, repo_root):
    stack_ready("triton-3.6-cu130")
    out = tmp_path / "cap"
    p = subprocess.run([sys.executable, "-m", "reprokit", "capture", "--gpu", "h100", "--out", str(out),
                        "--executor", "venv", "--stack", "triton-3.6-cu130", "--cases", "host_descriptor.*",
                        "--workers", "2", "--json"], capture_output=True, text=True, cwd=repo_root, timeout=600)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert [c["id"] for c in data["cases"]] == ["host_descriptor.p0", "host_descriptor.p1", "host_descriptor.p2"]
    for c in data["cases"]:
        assert {"id", "family", "control", "status", "tma", "verdict"} <= set(c)
        assert c["family"] == "host_descriptor"
    assert data["cases"][0]["tma"]["sass"] == 2
    for name in ("results.json", "env.json", "plan.json", "summary.tsv", "logs/harness.log", "kernels/suite.toml"):
        assert (out / name).is_file(), name
    assert not Path(str(out) + ".partial").exists()
    # The same folder again is refused, with one line and exit code 2.
    again = subprocess.run([sys.executable, "-m", "reprokit", "capture", "--gpu", "h100", "--out", str(out),
                            "--executor", "venv", "--stack", "triton-3.6-cu130"], capture_output=True, text=True,
                           cwd=repo_root)
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "not empty" in again.stderr
