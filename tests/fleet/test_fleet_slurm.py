"""Fleets through a real Slurm (munged, slurmctld, slurmd on this host, scripts/slurm-local.sh):
a 2 stacks x 2 profiles compile-only fleet submitted, waited for, collected and checked against
single-machine runs of the same plan; a task with a bad stack pin and a task killed with
scancel show as failed with their reasons, and --resubmit completes the fleet without rerunning
what succeeded."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from reprokit.compare.grid import compare
from reprokit.config import Stack
from reprokit.fleet import slurm, state, task
from reprokit.fleet.collect import collect
from reprokit.fleet.spec import FleetSpec, Request
from reprokit.fleet.status import status
from tests.fleet.conftest import SLURM_STACKS, run_cli

pytestmark = [pytest.mark.slurm, pytest.mark.triton]

CASES = "tensor_descriptor.p0,host_descriptor.p1"
PROFILES = ("h100", "b200")


def _wait(fleet, until, timeout_s: float = 240.0):
    deadline = time.monotonic() + timeout_s
    while True:
        sts = status(fleet)
        if until(sts):
            return sts
        if time.monotonic() > deadline:
            pytest.fail(f"fleet {fleet.dir} not there after {timeout_s:g} s: "
                        f"{[(s.index, s.state, s.reason) for s in sts]}")
        time.sleep(1.0)


def _settled(sts) -> bool:
    return all(s.state in ("done", "failed", "missing") for s in sts)


@pytest.fixture(scope="module")
def plan_bundle(tmp_path_factory, stack_ready):
    """A small frozen plan: the two cases, captured once on one stack."""
    stack_ready(SLURM_STACKS[0])
    out = tmp_path_factory.mktemp("plan")
    r = run_cli("run", "--gpu", "h100", "--stacks", SLURM_STACKS[0], "--executor", "venv", "--cases", CASES,
                "--out", str(out), "--workers", "2", "--json")
    assert r.returncode == 0, r.stderr
    return Path(json.loads(r.stdout)["stacks"][0]["bundle"])


def test_fleet_runs_collects_and_agrees_with_direct_runs(slurm_cluster, plan_bundle, config, stack_ready,
                                                         tmp_path):
    for name in SLURM_STACKS:
        stack_ready(name)
    d = tmp_path / "fleet"
    r = run_cli("fleet", "submit", "--plan", str(plan_bundle), "--stacks", ",".join(SLURM_STACKS),
                "--gpus", ",".join(PROFILES), "--dir", str(d), "--mode", "compile-only", "--json")
    assert r.returncode == 0, r.stderr
    submitted = json.loads(r.stdout)
    assert len(submitted["tasks"]) == 4 and len(submitted["jobs"]) == 1   # one array: the same request
    fleet = state.load(d)
    _wait(fleet, _settled)

    r = run_cli("fleet", "collect", str(d), "--json")
    assert r.returncode == 0, r.stderr + r.stdout
    got = json.loads(r.stdout)
    assert got["complete"] and not got["problems"]
    assert [t["state"] for t in got["tasks"]] == ["done"] * 4
    assert (d / "report.md").is_file() and (d / "grid.json").is_file()
    columns = [c["label"] for c in got["grid"]["columns"]]
    assert columns == [f"{s}@{p}" for s in SLURM_STACKS for p in PROFILES]
    # Every bundle verified, names the frozen plan as its parent, and ran only the plan's cases.
    for b in got["bundles"]:
        assert run_cli("verify", b).returncode == 0
    for col in got["grid"]["columns"]:
        assert col["parent"] == fleet.plan_sha256

    # The same plan on this machine directly, per stack and profile: nothing moves.
    direct = tmp_path / "direct"
    for profile in PROFILES:
        r = run_cli("run", "--gpu", profile, "--stacks", ",".join(SLURM_STACKS), "--executor", "venv",
                    "--cases", CASES, "--out", str(direct / profile), "--mode", "compile-only", "--json")
        assert r.returncode == 0, r.stderr
        for entry in json.loads(r.stdout)["stacks"]:
            i = [t.index for t in fleet.tasks if t.stack["name"] == entry["stack"] and t.profile["key"] == profile]
            fleet_bundle = got["tasks"][i[0]]["bundle"]
            grid = compare([Path(fleet_bundle), Path(entry["bundle"])])
            moved = [(row.case, row.cells[1].moved) for row in grid.rows if row.cells[1].moved]
            assert not moved, f"{entry['stack']}@{profile}: fleet and direct run differ: {moved}"
            assert {row.case for row in grid.rows} == set(CASES.split(","))


def test_failed_tasks_show_why_and_resubmit_reruns_only_them(slurm_cluster, plan_bundle, config, stack_ready,
                                                             tmp_path):
    good = stack_ready(SLURM_STACKS[0])
    bad = Stack(name="triton-bad-pin", triton="0.0.1")   # no such release: its venv cannot be built
    h100 = config.gpu("h100")
    tasks = task.plan_tasks([good, bad], [h100], 1) + task.plan_tasks([good], [config.gpu("b200")], 1)
    tasks = tuple(state.Task(i, t.stack, t.profile, t.shard) for i, t in enumerate(tasks))
    fleet = task.submit(tmp_path / "fleet", plan_bundle, tasks, FleetSpec(Request(executor="venv"), {}),
                        "compile-only")
    job = fleet.jobs[0].job_id
    # Kill task 2 once it has started: its capture takes seconds more, so scancel finds it running.
    deadline = time.monotonic() + 120
    while not (fleet.task_dir(2) / f"attempt-{job}.json").exists():
        assert time.monotonic() < deadline, "task 2 never started"
        time.sleep(0.1)
    slurm.cancel([f"{job}_2"])
    sts = _wait(fleet, _settled)
    by = {s.index: s for s in sts}
    assert by[0].state == "done"
    assert by[1].state == "failed" and "Slurm: FAILED" in by[1].reason and "0.0.1" in by[1].reason
    assert by[2].state == "failed" and "CANCELLED" in by[2].reason

    done = collect(state.load(fleet.dir))
    assert not done.complete
    assert any("task 1" in p and "failed" in p for p in done.problems)
    assert any("task 2" in p and "CANCELLED" in p for p in done.problems)
    assert [c.label for c in done.grid.columns if c.error] == ["triton-bad-pin@h100", f"{good.name}@b200"]

    r = run_cli("fleet", "collect", str(fleet.dir), "--resubmit", "--json")
    assert r.returncode == 1 and json.loads(r.stdout)["resubmitted"] == [1, 2]
    again = state.load(fleet.dir)
    assert [j.tasks for j in again.jobs] == [(0, 1, 2), (1, 2)]
    sts = _wait(again, lambda s: _settled(s) and s[2].job_id == again.jobs[1].job_id)
    by = {s.index: s for s in sts}
    assert by[0].state == "done" and by[0].attempts == 1     # not rerun
    assert by[2].state == "done" and by[2].attempts == 2
    assert by[1].state == "failed"                           # the pin is still bad: said again, not hidden
