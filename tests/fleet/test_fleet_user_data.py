"""The user-data suite's fleet verbs (tests/integration/test_user_data.py has the others and the
census that names these): `fleet submit`, `fleet collect`, `fleet render` and `fleet task` against a
real one-host Slurm, with a user's files seeded at and around each output (the fleet folder, its
grid.json, report.md and task bundles, the manifests folder, $TMPDIR). Each seeded file is
byte-identical afterwards, and the same invocations in an unseeded tree exit 0 and write their
outputs."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprokit.fleet import state
from reprokit.fleet.status import status
from tests.fleet.conftest import SLURM_STACKS
from tests.integration.test_user_data import (
    FLEET_RECIPES,
    ROOT,
    Inv,
    _around,
    _leftovers,
    _one_line,
    _tmp,
    seed,
)

pytestmark = [pytest.mark.slurm, pytest.mark.triton]
CASE = "block_ptr.p0"


def _cli(args: list, tmp: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp)}
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], cwd=tmp.parent, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def _settle(d: Path, timeout_s: float = 300.0) -> None:
    fleet = state.load(d)
    deadline = time.monotonic() + timeout_s
    while not all(s.state in ("done", "failed", "missing") for s in status(fleet)):
        assert time.monotonic() < deadline, f"fleet {d} did not settle in {timeout_s:g} s"
        time.sleep(1.0)


@pytest.fixture(scope="module")
def plan(tmp_path_factory, stack_ready):
    stack_ready(SLURM_STACKS[0])
    out = tmp_path_factory.mktemp("fleet-plan")
    tmp = out / "tmp"
    tmp.mkdir()
    r = _cli(["run", "--gpu", "h100", "--stacks", SLURM_STACKS[0], "--executor", "venv", "--cases", CASE,
              "--out", out / "b"], tmp)
    assert r.returncode == 0, r.stderr
    (b,) = (out / "b").glob("*.tgz")
    return b


def _flow(plan: Path, t: Path, seeded: dict | None) -> None:
    """submit, collect, render and task in tree `t`; with `seeded`, the user's files are put
    around each output as it comes to exist (the fleet folder is a new folder of reprokit's)."""
    tmp = t / "tmp"
    tmp.mkdir(parents=True)
    fleet, k8s = t / "fleet", t / "k8s"
    submit = Inv(["fleet", "submit", "--plan", plan, "--stacks", SLURM_STACKS[0], "--gpus", "h100", "--dir", fleet,
                  "--mode", "compile-only"], [(fleet, "whole")], lambda: (fleet / state.FILE).is_file())
    if seeded is not None:
        seeded.update(seed(submit, tmp, at=False, lock=True))
    r = _cli(submit.argv, tmp)
    assert r.returncode == 0 and submit.made(), r.stderr
    _settle(fleet)
    bundles = state.load(fleet).bundle_dir(0)
    if seeded is not None:
        for name in ("grid.json", "report.md"):
            _around(seeded, fleet, name, lock=True)
        _around(seeded, bundles.parent, bundles.name, lock=True)
        _put_cell(seeded, bundles)
        _tmp(seeded, tmp)
    collect = Inv(["fleet", "collect", fleet], [(fleet / "grid.json", "file"), (fleet / "report.md", "file")],
                  lambda: (fleet / "grid.json").is_file() and (fleet / "report.md").is_file())
    r = _cli(collect.argv, tmp)
    assert r.returncode == 0 and collect.made(), r.stderr + r.stdout
    render = Inv(["fleet", "render", fleet, "--k8s", "--image", "reprokit:test", "--claim", "fleet-claim",
                  "--out", k8s], [(k8s, "into")], lambda: any(k8s.iterdir()))
    if seeded is not None:
        seeded.update(seed(render, tmp, at=True, lock=True))
    r = _cli(render.argv, tmp)
    assert r.returncode == 0 and render.made(), r.stderr
    task = Inv(["fleet", "task", fleet, "0"], [(bundles, "into")], lambda: any(bundles.glob("*.tgz")))
    r = _cli(task.argv, tmp)
    assert r.returncode == 0 and task.made(), r.stderr
    for inv in (submit, collect, render, task):
        assert _leftovers(inv, tmp, seeded or {}) == [], inv.argv[:2]


def _put_cell(seeded: dict, folder: Path) -> None:
    from tests.integration.test_user_data import CELL, _put

    _put(seeded, folder / "thesis.txt", b"my thesis\n")
    _put(seeded, folder / CELL / "thesis.txt", b"my thesis, in a folder named like a capture\n")
    _around(seeded, folder, CELL, lock=True)


def test_fleet_verbs_keep_every_user_file(slurm_cluster, plan, tmp_path):
    assert set(FLEET_RECIPES) == {"fleet submit", "fleet collect", "fleet render", "fleet task"}
    _flow(plan, tmp_path / "clean", None)
    seeded: dict = {}
    _flow(plan, tmp_path / "seeded", seeded)
    changed = [str(f) for f, data in seeded.items() if not f.is_file() or f.read_bytes() != data]
    assert seeded and changed == []


def test_fleet_submit_refuses_a_user_folder(slurm_cluster, plan, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    fleet = tmp_path / "fleet"
    submit = Inv(["fleet", "submit", "--plan", plan, "--stacks", SLURM_STACKS[0], "--gpus", "h100", "--dir", fleet,
                  "--mode", "compile-only"], [(fleet, "whole")], lambda: False)
    seeded = seed(submit, tmp, at=True, lock=False)
    r = _cli(submit.argv, tmp)
    assert r.returncode == 2 and _one_line(r), r.stderr
    assert all(f.read_bytes() == data for f, data in seeded.items())
    assert _leftovers(submit, tmp, seeded) == []
