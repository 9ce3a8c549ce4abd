"""A project's own sweeps (`[[sweep]]` in reprokit.toml, docs/user-cases.md): every problem of a
malformed one reported at its `file:line` by `reprokit check` (real files, real kernel sources
read with ast), and a valid one expanded into the plan the harness runs: each point its base
case's call with the point's values where Triton takes them."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.config import load_config
from reprokit.sweep.spec import build_sweep_plan, expand
from reprokit.userspec import project as projects
from reprokit.userspec import sweeps

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "usersweep"


@pytest.fixture
def proj(tmp_path) -> Path:
    d = tmp_path / "proj"
    shutil.copytree(DATA, d)
    # The project's kernel file is the declared-cases tests' own (one copy in the tree).
    (d / "kernels").mkdir()
    shutil.copy(ROOT / "tests" / "data" / "usercases" / "persistent_matmul.py", d / "kernels")
    return d


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "reprokit", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def line_of(text: str, needle: str, after: str = "") -> int:
    rows = text.splitlines()
    start = next(i for i, r in enumerate(rows) if after in r) if after else 0
    return next(i for i in range(start, len(rows)) if needle in rows[i]) + 1


def plan_of(proj: Path, name: str, reduced: bool = False) -> dict:
    spec = sweeps.load(projects.load(proj / "reprokit.toml"), name, str(proj / "kernels"))
    return build_sweep_plan(spec, load_config().gpu("h100"), {"name": "triton-3.6-cu130"}, reduced=reduced).to_json()


def test_the_shipped_example_project_checks_clean_and_names_its_sweeps(proj):
    r = cli("check", "--json", cwd=proj)
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(r.stdout)
    assert doc["ok"] and doc["sweeps"] == ["add-box", "matmul-bk", "matmul-stages"]


def test_every_problem_of_a_bad_sweep_is_one_line_at_its_own_line(proj):
    bad = '''
[[sweep]]
name = "Bad Name"
base = "add.devdesc"
gpus = ["h100", "h999"]
stacks = ["no-such-stack"]
vary = "sideways"
colour = "red"
base_config = 1

[sweep.axes]
BLOCK_N = [16, 16]
num_warps = [3]
WIDTH = [1, 2]
config = [0]

[[sweep]]
name = "tuned"
base = "matmul.persistent"
gpus = ["h100"]
vary = "product"
reduced = { num_stages = [9] }

[sweep.axes]
config = [0, 7]
num_stages = [2, 3]
BLOCK_K = [32, { none = true }]

[[sweep]]
name = "orphan"
base = "no.such.case"
gpus = ["h100"]
axes = { num_warps = [4] }
'''
    path = proj / "reprokit.toml"
    path.write_text(path.read_text() + bad)
    text = path.read_text()
    r = cli("check", cwd=proj)
    assert r.returncode == 2
    got = r.stdout.splitlines()
    f = "reprokit.toml"
    def at(needle: str) -> int:   # in the sweeps appended here, not the project's own
        return line_of(text, needle, after='name = "Bad Name"')

    want = {
        (at('name = "Bad Name"'), "name 'Bad Name' must be lower-case"),
        (at("gpus = [\"h100\", \"h999\"]"), "no GPU profile 'h999'"),
        (at("stacks = [\"no-such-stack\"]"), "no stack 'no-such-stack'"),
        (at('vary = "sideways"'), "vary 'sideways' is not one of"),
        (at('colour = "red"'), "unknown key 'colour'"),
        (at("base_config = 1"), "base_config is for @triton.autotune kernels"),
        (at("BLOCK_N = [16, 16]"), "axis 'BLOCK_N' gives one value twice"),
        (at("num_warps = [3]"), "num_warps 3 must be a whole number, a power of two"),
        (at("WIDTH = [1, 2]"), "axis 'WIDTH' is not a parameter of add_device_descriptor"),
        (at("config = [0]"), "config is for @triton.autotune kernels"),
        (at("config = [0, 7]"), "config 7 is not one of the autotuner's configs (0-2)"),
        (at("BLOCK_K = [32, { none"), "a product's axis holds numbers or labels, not both"),
        (at("reduced = { num_stages = [9] }"), "reduced num_stages: 9 is not one of the axis's values"),
        (at('base = "no.such.case"'), "base 'no.such.case' is no declared case"),
    }
    for line, message in want:
        assert any(g.startswith(f"{f}:{line}: ") and message in g for g in got), (line, message, got)
    assert len(got) == len(want), got
    # `sweep` refuses the same project, naming every problem, before anything compiles
    r = cli("sweep", "add-box", "--stacks", "triton-3.6-cu130", "--work", "w", "--out", "o", cwd=proj)
    assert r.returncode == 2 and f"{f}:{line_of(text, 'colour')}: " in r.stderr
    assert not (proj / "w").exists() and not (proj / "o").exists()


def test_one_at_a_time_points_move_one_value_of_the_declared_call(proj):
    plan = plan_of(proj, "add-box")
    cases = {c["id"]: c for c in plan["cases"]}
    assert list(cases)[0] == "add-box.base" and len(cases) == 1 + 7 + 3   # the base's own values run once
    base = cases["add-box.base"]
    assert base["kind"] == "call" and base["autotune"] is None
    assert base["call"]["args"]["BLOCK_N"] == 64 and base["call"]["options"] == {"num_warps": 4}
    four = cases["add-box.block_n-4"]
    assert four["call"]["args"] == {**base["call"]["args"], "BLOCK_N": 4}
    assert four["sweep"] == {"group": "add-box", "axis": "BLOCK_N", "label": "4", "name": None,
                             "params": {"BLOCK_N": 4, "num_warps": 4}}
    assert cases["add-box.num_warps-8"]["call"]["options"] == {"num_warps": 8}
    assert cases["add-box.num_warps-8"]["num_warps"] == 8
    grid = plan["sweep"]["groups"][0]
    assert grid["base"] == {"BLOCK_N": 64, "num_warps": 4}
    assert grid["order"]["BLOCK_N"] == ["4", "8", "16", "32", "64", "128", "256", "512"]
    reduced = {c["id"] for c in plan_of(proj, "add-box", reduced=True)["cases"]}
    assert reduced == {"add-box.base", "add-box.block_n-4", "add-box.block_n-8", "add-box.block_n-256",
                       "add-box.block_n-512", "add-box.num_warps-8"}


def test_an_autotuned_base_runs_one_config_per_point_and_moves_values_within_it(proj):
    plan = plan_of(proj, "matmul-stages")
    cases = {c["id"]: c for c in plan["cases"]}
    assert len(cases) == 3 * 4     # config = "all": the three configs the kernel file declares
    p = cases["matmul-stages.config1-num_stages5"]
    assert p["autotune"] == {"config": 1, "count": 3} and p["call"]["tune"] == {"num_stages": 5}
    assert "configs" not in p and p["num_stages"] == 5 and p["sass"] is False   # sass = "none"
    assert p["sweep"]["params"] == {"config": 1, "num_stages": 5}
    # the base: config 0 as the kernel file declares it (3 stages, read with ast)
    assert plan["sweep"]["groups"][0]["base"] == {"config": 0, "num_stages": 3}
    assert plan["sweep"]["hypotheses"] == [{"name": "deep-pipelines", "rule": {"num_stages": 5}}]


def test_one_at_a_time_on_configs_runs_each_config_as_declared(proj):
    path = proj / "reprokit.toml"
    path.write_text(path.read_text() + '''
[[sweep]]
name = "configs"
base = "matmul.persistent"
gpus = ["h100"]
base_config = 1

[sweep.axes]
config = "all"
BLOCK_K = [32, 128]
''')
    cases = {c["id"]: c for c in plan_of(proj, "configs")["cases"]}
    assert sorted(cases) == ["configs.base", "configs.block_k-128", "configs.block_k-32", "configs.config-0",
                             "configs.config-2"]
    assert cases["configs.base"]["autotune"] == {"config": 1, "count": 3} and "tune" not in cases["configs.base"]["call"]
    # a config point is that config as declared: nothing of the base's values moves it
    assert cases["configs.config-2"]["autotune"]["config"] == 2 and "tune" not in cases["configs.config-2"]["call"]
    assert cases["configs.block_k-32"]["autotune"]["config"] == 1
    assert cases["configs.block_k-32"]["call"]["tune"] == {"BLOCK_K": 32}


def test_a_computed_config_list_asks_for_indices_and_base_values(proj):
    """A comprehension of configs cannot be read without running the file: `all` and the base
    config's own values must then be given."""
    kernel = proj / "kernels" / "comprehension.py"
    kernel.write_text('''import triton
import triton.language as tl


@triton.autotune(configs=[triton.Config({"BLOCK": b}, num_warps=w) for b in (64, 128) for w in (4, 8)], key=["n"])
@triton.jit
def scale(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs, mask=offs < n) * 2, mask=offs < n)
''')
    path = proj / "reprokit.toml"
    head = path.read_text()
    path.write_text(head + '''
[[case]]
id = "scale"
kernel = "kernels/comprehension.py:scale"
args = { x_ptr = { tensor = [4096] }, n = 4096 }

[[sweep]]
name = "scale-block"
base = "scale"
gpus = ["h100"]
axes = { config = "all", BLOCK = [32, 64, 256] }
''')
    text = path.read_text()
    r = cli("check", cwd=proj)
    assert r.returncode == 2
    n = line_of(text, 'axes = { config = "all"')
    assert f"reprokit.toml:{n}: sweep 'scale-block': config = \"all\": scale's configs are computed" in r.stdout
    assert f"reprokit.toml:{n}: sweep 'scale-block': axis 'BLOCK': the base's value is not known here" in r.stdout
    path.write_text(text.replace('axes = { config = "all"', 'base_values = { BLOCK = 64 }\naxes = { config = [0, 3]'))
    cases = {c["id"]: c for c in plan_of(proj, "scale-block")["cases"]}
    assert sorted(cases) == ["scale-block.base", "scale-block.block-256", "scale-block.block-32",
                             "scale-block.config-3"]
    assert cases["scale-block.block-256"]["autotune"] == {"config": 0}   # how many: unknown here
    assert cases["scale-block.block-256"]["call"]["tune"] == {"BLOCK": 256}


def test_the_sweep_verb_finds_project_sweeps_and_only_those_names(proj, tmp_path):
    r = cli("sweep", "no-such-sweep", cwd=proj)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "no-such-sweep" in r.stderr
    # outside the project, its sweep's name means nothing
    r = cli("sweep", "add-box", cwd=tmp_path)
    assert r.returncode == 2 and "add-box" in r.stderr
