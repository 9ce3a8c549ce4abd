"""Fleets of a user's bundles through a real one-host Slurm: a bundle made by `reprokit trace`
(a program run under Triton's interpreter) and one made by `reprokit run` in a user's project
(`reprokit init --example`) are each submitted, run, collected and checked. Everything a task
compiles comes from the bundle: the program and the project folder are gone before the fleet
is submitted, the fleet runs from a folder outside the checkout, and each task's bundle holds
exactly the plan bundle's kernel files and cases; its verdicts agree with a direct replay."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.compare.grid import compare
from reprokit.errors import ExecutorError
from reprokit.fleet import state
from reprokit.fleet.status import status
from tests.conftest import skip_or_fail_triton
from tests.fleet.conftest import SLURM_STACKS
from tests.helpers.interp import interpreter_python
from tests.helpers.runs import host

pytestmark = [pytest.mark.slurm, pytest.mark.triton]
ROOT = Path(__file__).resolve().parents[2]


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def settle(d: Path, timeout_s: float = 300.0) -> None:
    fleet = state.load(d)
    deadline = time.monotonic() + timeout_s
    while not all(s.state in ("done", "failed", "missing") for s in status(fleet)):
        assert time.monotonic() < deadline, f"fleet {d} did not settle in {timeout_s:g} s"
        time.sleep(1.0)


def kernel_files(b) -> dict:
    return {m: b.read(m) for m in sorted(b.members) if m.startswith("kernels/")}


@pytest.fixture(scope="module")
def user_bundles(tmp_path_factory, stack_ready) -> dict:
    """{"trace": bundle, "project": bundle}, made where their sources then disappear."""
    stack_ready(SLURM_STACKS[0])
    try:
        python = str(interpreter_python(host()))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    tmp = tmp_path_factory.mktemp("userbundles")
    src = tmp / "src"
    src.mkdir()
    program = src / "classic.py"
    shutil.copyfile(ROOT / "tests" / "data" / "trace" / "classic.py", program)
    r = cli("trace", "--json", "--out", tmp / "trace", "--", python, program, cwd=src)
    assert r.returncode == 0, r.stderr[-3000:]
    traced = Path(json.loads(r.stdout)["bundle"])
    r = cli("init", "proj", "--example", cwd=src)
    assert r.returncode == 0, r.stderr
    r = cli("run", "--gpu", "h100", "--stacks", SLURM_STACKS[0], "--executor", "venv", "--out", tmp / "project",
            "--json", cwd=src / "proj")
    assert r.returncode == 0, r.stderr[-3000:]
    (project,) = (tmp / "project").glob("*.tgz")
    shutil.rmtree(src)   # nothing of the program or the project remains but the bundles
    return {"trace": traced, "project": project}


@pytest.mark.parametrize("kind,shards", [("trace", 2), ("project", 1)])
def test_a_fleet_replays_a_user_bundle_from_the_bundle_alone(slurm_cluster, user_bundles, stack_ready, kind, shards,
                                                             tmp_path):
    stack = SLURM_STACKS[1]   # another release than the bundle was made with
    triton = stack_ready(stack).triton
    plan = open_bundle(user_bundles[kind])
    assert {c.get("kind") for c in plan.plan["cases"]} == {"call"}
    away = tmp_path / "elsewhere"   # no checkout, no project here or above
    away.mkdir()
    d = tmp_path / "fleet"
    r = cli("fleet", "submit", "--plan", user_bundles[kind], "--stacks", stack, "--gpus", "h100", "--dir", d,
            "--mode", "compile-only", "--shards", shards, "--json", cwd=away)
    assert r.returncode == 0, r.stderr
    settle(d)
    r = cli("fleet", "collect", d, "--json", cwd=away)
    assert r.returncode == 0, r.stderr + r.stdout
    got = json.loads(r.stdout)
    assert got["complete"] and [t["state"] for t in got["tasks"]] == ["done"] * shards
    assert (d / "report.md").is_file()

    ran = []
    for b in got["bundles"]:
        tb = open_bundle(Path(b))
        assert tb.manifest["parent"] == plan.sha256
        assert kernel_files(tb) == kernel_files(plan)   # the plan bundle's kernels, nothing of the suite's
        assert tb.results["triton"] == triton
        ran += [c["id"] for c in tb.results["cases"]]
    want = [c["id"] for c in plan.plan["cases"]]
    assert sorted(ran) == sorted(want)   # the shards hold the plan's cases, each once
    assert {c["id"] for c in got["grid"]["cases"]} == set(want)

    # The same bundle replayed directly on the same stack: no verdict moves against the fleet's.
    direct = tmp_path / "direct"
    # every config, as the fleet runs the plan whole (a replay runs only the chosen ones unless asked)
    r = cli("replay", user_bundles[kind], "--stacks", stack, "--executor", "venv", "--candidates", "--out", direct,
            "--json", cwd=away)
    assert r.returncode in (0, 1), r.stderr[-3000:]
    (replayed,) = direct.glob(f"{stack}-*.tgz")
    fleet_bundles = [Path(b) for b in got["bundles"]]
    for fb in fleet_bundles:
        grid = compare([fb, replayed])
        moved = [(row.case, row.cells[1].moved) for row in grid.rows
                 if row.cells[0].present and row.cells[1].moved]
        assert not moved, f"fleet and direct replay differ: {moved}"
        statuses = {c["id"]: c["status"] for c in open_bundle(fb).results["cases"]}
        assert set(statuses.values()) == {"ok"}, statuses
