"""What moved between releases, with numbers, on a persistent TMA matmul written for the tests
(tests/data/persistent_matmul, a reprokit.toml project): the grid shows the register change, the
exit follows the class of change, and bisect --metric regs names the release where it moved."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
PROJECT = ROOT / "tests" / "data" / "persistent_matmul"


def reprokit(*args, cwd: Path):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=1200)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory, stack_ready):
    for s in ("triton-3.4-cu129", "triton-3.6-cu130"):
        stack_ready(s)
    work = tmp_path_factory.mktemp("pm")
    shutil.copytree(PROJECT, work / "project")
    p = reprokit("run", "--gpu", "h100", "--stacks", "triton-3.4-cu129,triton-3.6-cu130", "--executor", "venv",
                 "--out", work / "out", "--json", cwd=work / "project")
    assert p.returncode == 0, p.stderr
    got = {s["stack"]: Path(s["bundle"]) for s in json.loads(p.stdout)["stacks"]}
    return work / "project", got["triton-3.4-cu129"], got["triton-3.6-cu130"]


def test_the_grid_shows_the_register_change_and_exits_1(bundles):
    project, b34, b36 = bundles
    p = reprokit("diff", b34, b36, cwd=project)
    assert p.returncode == 1, p.stderr      # a metric moved
    assert "regs 164 -> 154" in p.stdout
    assert "1 of 1 cases moved (1 metric)" in p.stdout
    cell = json.loads(reprokit("diff", b34, b36, "--json", cwd=project).stdout)["cases"][0]["cells"][1]
    assert cell["change"] == "metric" and {"name": "regs", "before": 164, "after": 154} in cell["metrics"]
    assert cell["verdict"] == "tma"


def test_bisect_on_registers_names_the_first_release_where_they_moved(bundles, stack_ready, tmp_path):
    project, _, _ = bundles
    stack_ready("triton-3.5-cu130")
    p = reprokit("bisect", "--case", "matmul.persistent", "--versions", "3.4.0..3.5.0", "--gpu", "h100",
                 "--metric", "regs", "--out", tmp_path / "b", "--json", cwd=project)
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["metric"], r["last_same"], r["first_changed"]) == ("regs", "3.4.0", "3.5.0")
    assert [s["value"] for s in r["steps"]] == [164, 154]
    assert r["answer"] == ("matmul.persistent on h100: first changed in Triton 3.5.0 (regs 154); 3.4.0 gives "
                           "regs 164 (2 captures over 2 releases)")
    # within a threshold of 20 registers nothing moved; the TMA count at SASS never did
    for extra in (["--metric", "regs", "--threshold", "20"], ["--metric", "tma:sass"]):
        p = reprokit("bisect", "--case", "matmul.persistent", "--versions", "3.4.0..3.5.0", "--gpu", "h100",
                     *extra, "--out", tmp_path / extra[1].replace(":", "-"), "--json", cwd=project)
        assert p.returncode == 0 and json.loads(p.stdout)["first_changed"] is None, p.stderr
