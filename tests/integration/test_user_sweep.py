"""`reprokit sweep NAME` over a project's own declared cases (tests/data/usersweep/reprokit.toml),
compile-only on a real Triton 3.6 venv, run from the project's folder outside the checkout: the
reduced grids give the answers the shipped sweeps give (boundaries per axis, failing passes, the
shared-memory frontier, hypotheses), an autotuned kernel's configs are one axis and its stages
move within each config, and the bundles carry the project's kernels, not the suite's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle

pytestmark = pytest.mark.triton
STACK = "triton-3.6-cu130"
ROOT = Path(__file__).resolve().parents[2]
H100_SMEM = 232448   # stacks.toml's h100 smem_per_block: the limit the frontier is drawn at


@pytest.fixture(scope="module")
def swept(tmp_path_factory, stack_ready):
    stack_ready(STACK)
    tmp = tmp_path_factory.mktemp("usersweep")
    proj = tmp / "proj"
    shutil.copytree(ROOT / "tests" / "data" / "usersweep", proj)
    # The project's kernel file is the declared-cases tests' own (one copy in the tree).
    (proj / "kernels").mkdir()
    shutil.copy(ROOT / "tests" / "data" / "usercases" / "persistent_matmul.py", proj / "kernels")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": "1700000000"}
    out = {}
    for name in ("add-box", "matmul-stages", "matmul-bk"):
        p = subprocess.run([sys.executable, "-m", "reprokit", "sweep", name, "--reduced", "--executor", "venv",
                            "--work", str(tmp / "work"), "--out", str(tmp / "out" / name), "--json"],
                           cwd=proj, env=env, capture_output=True, text=True, timeout=900, check=False)
        assert p.returncode == 0, p.stderr[-3000:]
        (outcome,) = json.loads(p.stdout)["outcomes"]
        out[name] = outcome
    return proj, out


def _group(outcome: dict) -> dict:
    (g,) = outcome["answers"]["groups"]
    return g


def test_one_at_a_time_finds_the_descriptor_box_boundary(swept):
    _, out = swept
    g = _group(out["add-box"])
    assert g["base"]["status"] == "ok" and g["base"]["verdict"] == "tma"
    axes = {a["axis"]: a for a in g["axes"]}
    # TMA's rule: a box's inner dimension holds at least 16 bytes (fp16: 8 elements)
    below = axes["BLOCK_N"]["boundary"]["below"]
    assert below["label"] == "4" and below["status"] == "compile_error" and "16 bytes" in below["error"]
    assert axes["BLOCK_N"]["tried"] == ["4", "8", "64", "256", "512"]
    assert [c["label"] for c in axes["BLOCK_N"]["cells"] if c["status"] == "ok"] == ["8", "64", "256", "512"]
    assert axes["num_warps"]["flips"] == [] and "no flip" in axes["num_warps"]["answer"]


def test_autotune_configs_are_an_axis_and_stages_move_within_each(swept):
    _, out = swept
    g = _group(out["matmul-stages"])
    assert g["points"] == 4 and g["failures"] == []
    b = open_bundle(Path(out["matmul-stages"]["bundle"]))
    rec = {c["id"]: c for c in b.results["cases"]}
    plan = {c["id"]: c for c in b.plan["cases"]}
    for cid, r in rec.items():
        params = plan[cid]["sweep"]["params"]
        at = r["call"]["autotune"]
        # the config the point names, as declared, with its stages moved
        assert at["config"] == params["config"] and at["num_stages"] == 3, cid
        assert r["call"]["options"]["num_stages"] == params["num_stages"] == at["tune"]["num_stages"], cid
        assert r["call"]["constexprs"]["BLOCK_N"] == (128, 256)[params["config"]], cid
    smem = {cid: r["metadata"]["shared_bytes"] for cid, r in rec.items()}
    assert smem["matmul-stages.config0-num_stages5"] > smem["matmul-stages.config0-num_stages3"]
    # the frontier against the h100's limit, from the points' own shared memory
    fr = g["frontier"]
    assert fr["limit"] == H100_SMEM
    assert fr["too_big_ids"] == sorted(cid for cid, n in smem.items() if n > H100_SMEM)
    assert fr["too_big_ids"] == ["matmul-stages.config1-num_stages5"]   # 128x256x64 fp16 at 5 stages
    assert fr["max_stages_fitting"] == {"config0": 5, "config1": 3}
    (h,) = g["hypotheses"]
    assert h["name"] == "deep-pipelines" and h["selected"] == 2 and not h["holds"]


def test_a_value_moved_within_a_config_reaches_its_pre_hook(swept):
    """BLOCK_K moved within config 1: the config's pre_hook sets the host descriptors' block
    shapes from it, and Triton 3.6 types a host descriptor by its block shape."""
    _, out = swept
    b = open_bundle(Path(out["matmul-bk"]["bundle"]))
    rec = {c["id"]: c["call"] for c in b.results["cases"]}
    assert sorted(rec) == ["matmul-bk.base", "matmul-bk.block_k-32"]
    base, moved = rec["matmul-bk.base"], rec["matmul-bk.block_k-32"]
    assert base["autotune"]["config"] == moved["autotune"]["config"] == 1 and "tune" not in base["autotune"]
    assert moved["autotune"]["tune"] == {"BLOCK_K": 32} and moved["constexprs"]["BLOCK_K"] == 32
    assert base["constexprs"]["BLOCK_K"] == 64
    assert "[128, 64]" in base["signature"]["a_desc"] and "[256, 64]" in base["signature"]["b_desc"]
    assert "[128, 32]" in moved["signature"]["a_desc"] and "[256, 32]" in moved["signature"]["b_desc"]


def test_the_bundles_carry_the_projects_kernels_and_verify(swept):
    proj, out = swept
    mine = sorted(p.relative_to(proj / "kernels").as_posix() for p in (proj / "kernels").rglob("*.py"))
    for name, outcome in out.items():
        b = open_bundle(Path(outcome["bundle"]))
        kernels = sorted(m.split("/", 1)[1] for m in b.members if m.startswith("kernels/"))
        assert kernels == mine, name   # not the suite's kernels/ (no suite.toml)
        assert b.plan["suite"] == f"sweep:{name}" and b.plan["sweep"]["name"] == name
        assert json.loads(b.read("sweep.json")) == outcome["answers"]
        v = subprocess.run([sys.executable, "-m", "reprokit", "verify", outcome["bundle"]], cwd=proj,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=300)
        assert v.returncode == 0, v.stderr


def test_the_same_sweep_from_another_copy_of_the_project_packs_the_same_bytes(swept, tmp_path):
    """Another folder for the project, the work and TMPDIR, another hash seed: the same bundle."""
    proj, out = swept
    again = tmp_path / "elsewhere" / "proj"
    shutil.copytree(proj, again)
    (tmp_path / "tmp").mkdir()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SOURCE_DATE_EPOCH": "1700000000", "PYTHONHASHSEED": "7",
           "TMPDIR": str(tmp_path / "tmp")}
    p = subprocess.run([sys.executable, "-m", "reprokit", "sweep", "add-box", "--reduced", "--executor", "venv",
                        "--work", str(tmp_path / "work"), "--out", str(tmp_path / "out"), "--json"],
                       cwd=again, env=env, capture_output=True, text=True, timeout=900, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    (outcome,) = json.loads(p.stdout)["outcomes"]
    first, second = Path(out["add-box"]["bundle"]), Path(outcome["bundle"])
    assert first.name == second.name and first.read_bytes() == second.read_bytes()
