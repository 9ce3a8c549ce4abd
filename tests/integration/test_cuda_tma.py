"""The CUDA C++ ground truth (kernels/cuda/tma_copy.cu) built by the harness with nvcc, as a case
of the suite: TMA by hand shows UTMALDG/UTMASTG in SASS whatever Triton the stack pins.

Needs nvcc: skips without one, or fails when REPROKIT_REQUIRE_NVCC=1 (a GPU host or CUDA image)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from reprokit.harness.kinds import cudacpp
from tests.conftest import by_id
from tests.helpers.runs import planned

pytestmark = pytest.mark.triton


@pytest.fixture(scope="module")
def nvcc():
    path = cudacpp.find_nvcc()
    if path is None:
        if os.environ.get("REPROKIT_REQUIRE_NVCC") == "1":
            pytest.fail(f"REPROKIT_REQUIRE_NVCC=1 but {cudacpp.missing_nvcc()}", pytrace=False)
        pytest.skip(cudacpp.missing_nvcc())
    return path


@pytest.mark.parametrize("stack", ["triton-3.0-cu129", "triton-3.6-cu130"])
def test_hand_written_tma_shows_utmaldg_in_sass(nvcc, captured, stack):
    cap = captured(stack, cases="cuda_tma.*")
    c = by_id(cap)["cuda_tma.p0"]
    assert c["status"] == "ok" and c["verdict"] == "tma" and c["met"] is True, c.get("error")
    assert c["tma"]["ptx"] == 2 and c["tma"]["sass"] >= 2  # one load, one store
    sass = (cap.out_dir / c["artifacts"]["sass"]).read_text()
    assert re.search(r"\bUTMALDG\.2D\b", sass) and re.search(r"\bUTMASTG\.2D\b", sass)
    assert "SYNCS.ARRIVE.TRANS64" in sass  # the mbarrier the load completes
    ptx = (cap.out_dir / c["artifacts"]["ptx"]).read_text()
    assert "cp.async.bulk.tensor.2d.shared::cluster.global" in ptx and "mbarrier.try_wait" in ptx
    assert ".target sm_90a" in ptx
    assert c["nvcc"]["version"] and c["nvcc"]["runs"][1]["argv"][:3] == ["nvcc", "-cubin", "-arch=sm_90a"]
    # 128x128 fp16 tile (32 KB) and its barrier, statically allocated: it fits an H100's block.
    assert 32768 < c["launch"]["shared_bytes"] < 40000 and c["launch"]["fits"] is True
    # No host path in what nvcc wrote (no -lineinfo).
    for art in ("ptx", "cubin"):
        assert str(cap.out_dir).encode() not in (cap.out_dir / c["artifacts"][art]).read_bytes()


def test_a_broken_source_is_the_compilers_error(nvcc, stack_ready, config, venv_executor, tmp_path):
    from reprokit.run.capture import capture
    from reprokit.suite import build_plan, kernels_dir

    kernels = tmp_path / "kernels"
    (kernels / "cuda").mkdir(parents=True)
    src = (kernels_dir() / "cuda" / "tma_copy.cu").read_text()
    (kernels / "cuda" / "tma_copy.cu").write_text(src.replace("cp.async.bulk.commit_group;", "cp.async.bulk.commit;"))
    (kernels / "suite.toml").write_text((kernels_dir() / "suite.toml").read_text())
    stack = stack_ready("triton-3.6-cu130")
    plan = build_plan(config.gpu("h100"), stack.pins(), only="cuda_tma.p0").to_json()
    cap = capture(stack, venv_executor, tmp_path / "cap", *planned(config.gpu("h100"), plan=plan, kernels=kernels))
    c = by_id(cap)["cuda_tma.p0"]
    assert c["status"] == "compile_error" and "error" in c["error"] and c["verdict"] != "tma", c
    assert "kernel.ptx" in c["error"] and "error" in c["error"] and str(tmp_path) not in c["error"]
    assert c["nvcc"]["runs"][-1]["returncode"] != 0 and "kernel.cubin" not in c["artifacts"]
    assert "Ptx assembly aborted" in (cap.out_dir / c["artifacts"]["compile_log"]).read_text()


def test_a_bundle_replays_its_own_cuda_source(nvcc, stack_ready, tmp_path, repo_root):
    """The CUDA source travels in the bundle under kernels/cuda/ and replay builds that copy."""
    import json
    import subprocess
    import sys

    stack_ready("triton-3.6-cu130")

    def reprokit(*args):
        return subprocess.run([sys.executable, "-m", "reprokit", *args, "--executor", "venv", "--json"],
                              capture_output=True, text=True, cwd=repo_root, timeout=600)

    p = reprokit("run", "--gpu", "h100", "--stacks", "triton-3.6-cu130", "--cases", "cuda_tma.p0",
                 "--out", str(tmp_path / "a"))
    assert p.returncode == 0, p.stderr
    (original,) = (tmp_path / "a").glob("*.tgz")
    r = reprokit("replay", str(original), "--out", str(tmp_path / "b"))
    assert r.returncode == 0, r.stderr
    (replayed,) = (tmp_path / "b").glob("*.tgz")
    from reprokit.bundle.reader import open_bundle

    b = open_bundle(replayed)
    assert "kernels/cuda/tma_copy.cu" in b.data
    assert {c["id"]: c["verdict"] for c in b.results["cases"]} == {"cuda_tma.p0": "tma"}
    assert json.loads(r.stdout)["parent"]

