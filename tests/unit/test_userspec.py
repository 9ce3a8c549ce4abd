"""A user's project (issue 19): reprokit.toml made by `reprokit init`, judged by `reprokit check`
(every problem at once, as file:line, kernel files parsed and never imported), and planned as
declared call cases (strides and align made explicit, kernel folders staged whole). The CLI runs
in a real process, from the project's folder, as a user runs it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.config import load_config, use_project
from reprokit.errors import ProjectInvalid
from reprokit.userspec import plan as userplan
from reprokit.userspec.check import examine
from reprokit.userspec.project import load

ROOT = Path(__file__).resolve().parents[2]

# Written the way public kernels are: torch at module level, an autotuner over a named list of
# configs, a heuristic, a None default, a helper @jit, and a helper module beside it.
MATMUL = '''import torch
import triton
import triton.language as tl

from helpers.acts import relu

CONFIGS = [triton.Config({"BM": 128, "BN": 128}, num_warps=8), triton.Config({"BM": 64, "BN": 64})]


@triton.jit
def _tile(x):
    return x


@triton.autotune(configs=CONFIGS, key=["M"])
@triton.heuristics({"EVEN": lambda a: a["M"] % 128 == 0})
@triton.jit
def mm(a, b, c, M, N, BM: tl.constexpr, BN: tl.constexpr, EVEN: tl.constexpr, ACT: tl.constexpr = None):
    pass


launch = triton.jit(_tile)
'''
GOOD = '''[project]
name = "mine"
kernels = ["kernels/"]

[[case]]
id = "mm.fp16"
kernel = "kernels/mm.py:mm"
configs = [1]
grid = [4, 2]
num_stages = 4
expect = "sass:UTMALDG"

[case.args]
a = { tensor = [128, 64], dtype = "half" }
b = { tensor = [64, 128], dtype = "float16", strides = [1, 64], align = 8 }
c = { tensor = [2, 3, 4] }
M = 128
N = 128
ACT = { none = true }
'''
BAD = '''[project]
name = "bad"
colour = "blue"

[[case]]
id = "mm.fp16"
kernel = "kernels/mm.py:mm"
[case.args]
a = { tensor = [128, 128], dtype = "float16" }
b = { tensor = [128, 128], dtype = "float16" }
c = { tensor = [128, 128], dtype = "float16" }
M = 128
N = 128

[[case]]
id = "mm.fp16"
kernel = "kernels/mm.py:mm"
configs = [0, 5]
grid = [0, 1, 1, 1]
expect = "fast"
num_warps = 3
[case.args]
a = { tensor = [128, 128], dtype = "float17" }
b = { tensor = [128, 128], dtype = "float16", align = 3 }
BM = 64
Q = 1
DT = { dtype = "fp99" }

[[case]]
id = "Bad Id"
kernel = "kernels/nope.py:mm"

[[case]]
id = "x.y"
kernel = "kernels/mm.py:mmm"
args = { a = 1 }

[[case]]
id = "plain"
kernel = "kernels/mm.py:_tile"
configs = "all"
'''
# (line, words the message holds): every problem of BAD, each at its own line.
BAD_PROBLEMS = [
    (3, "[project] has no key 'colour'"),
    (16, "case 'mm.fp16': duplicate id (also the case at line 5)"),
    (18, "configs [0, 5] goes past the autotuner's 2 configs"),
    (19, "grid [0, 1, 1, 1] must be 1 to 3 whole numbers"),
    (20, "expect 'fast' is not one of"),
    (21, "num_warps 3 must be a whole number, a power of two"),
    (22, "no value for c, M, N (mm has no default for them)"),   # at [case.args]
    (23, "argument a: dtype 'float17' is not a tensor dtype"),
    (24, "argument b: align 3 must be one of 1, 2, 4, 8, 16"),
    (25, "argument BM: the autotuner's configs set it"),
    (26, "argument Q: mm has no parameter 'Q'"),
    (27, "argument DT: dtype 'fp99' is not a triton.language dtype"),
    (27, "argument DT: mm has no parameter 'DT'"),
    (30, "case 'Bad Id': id 'Bad Id' must be lower-case"),
    (31, "kernel file kernels/nope.py does not exist"),
    (35, "kernels/mm.py defines no function or kernel object 'mmm'"),
    (38, "case 'plain': no value for x (_tile has no default for it)"),   # no [case.args]: the case's line
    (41, "configs is for @triton.autotune kernels, and _tile is not autotuned"),
]


def cli(*args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, timeout=120, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})


def project(tmp_path: Path, toml: str) -> Path:
    (tmp_path / "kernels" / "helpers").mkdir(parents=True)
    (tmp_path / "kernels" / "mm.py").write_text(MATMUL)
    (tmp_path / "kernels" / "helpers" / "acts.py").write_text("def relu(x):\n    return x\n")
    (tmp_path / "kernels" / "__pycache__").mkdir()
    (tmp_path / "kernels" / "__pycache__" / "mm.cpython-311.pyc").write_bytes(b"\0")
    (tmp_path / "reprokit.toml").write_text(toml)
    return tmp_path


def test_init_writes_a_starter_that_checks_and_never_overwrites(tmp_path):
    p = cli("init", "--example", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    toml, kernel = tmp_path / "reprokit.toml", tmp_path / "kernels" / "scale_rows.py"
    assert toml.read_text().startswith("# reprokit.toml") and "def scale_rows" in kernel.read_text()
    c = cli("check", cwd=tmp_path / "kernels")   # found from a folder below
    assert c.returncode == 0 and c.stdout == "", c.stderr
    assert "1 case(s), no problem" in c.stderr
    toml.write_text("# mine\n")
    for args in (["init"], ["init", "--example"], ["init", "."]):
        again = cli(*args, cwd=tmp_path)
        assert again.returncode == 2, again.stderr
        (line,) = again.stderr.strip().splitlines()
        assert "reprokit.toml exists; reprokit init never replaces a file" in line
    assert toml.read_text() == "# mine\n"
    # Only the example kernel in the way: refused before reprokit.toml is written.
    other = tmp_path / "other"
    (other / "kernels").mkdir(parents=True)
    (other / "kernels" / "scale_rows.py").write_text("# theirs\n")
    p = cli("init", other, "--example", cwd=tmp_path)
    assert p.returncode == 2 and not (other / "reprokit.toml").exists()
    assert (other / "kernels" / "scale_rows.py").read_text() == "# theirs\n"
    # Without --example: the starter has no case yet, which check says at the [project] line.
    bare = tmp_path / "bare"
    assert cli("init", bare, cwd=tmp_path).returncode == 0
    c = cli("check", "--project", bare, cwd=tmp_path)
    assert c.returncode == 2 and c.stdout.splitlines() == [
        "bare/reprokit.toml:5: no [[case]] declared: a project names at least one kernel call "
        "(reprokit init --example shows one)"], c.stdout


def test_check_reports_every_problem_at_once_with_its_line(tmp_path):
    project(tmp_path, BAD)
    p = cli("check", cwd=tmp_path)
    assert p.returncode == 2
    got = p.stdout.strip().splitlines()
    assert len(got) == len(BAD_PROBLEMS), p.stdout
    for line, (n, words) in zip(got, BAD_PROBLEMS):
        assert line.startswith(f"reprokit.toml:{n}: ") and words in line, (line, n, words)
    assert p.stderr.strip() == f"reprokit: {len(BAD_PROBLEMS)} problem(s) in reprokit.toml"
    j = cli("check", "--json", cwd=tmp_path)
    data = json.loads(j.stdout)
    assert j.returncode == 2 and not data["ok"] and [x["line"] for x in data["problems"]] == [n for n, _ in BAD_PROBLEMS]
    # run refuses it the same way, before anything runs or is written
    r = cli("run", "--gpu", "h100", "--stacks", "triton-3.6-cu130", "--executor", "venv", "--mode", "compile-only",
            "--out", tmp_path / "out", cwd=tmp_path)
    assert r.returncode == 2 and not (tmp_path / "out").exists()
    lines = r.stderr.strip().splitlines()
    assert lines == [f"reprokit: {x}" for x in got] or lines[:len(got)] == [f"reprokit: {x}" for x in got], r.stderr


def test_check_names_the_kernel_files_own_line_and_malformed_toml(tmp_path):
    project(tmp_path, GOOD)
    (tmp_path / "kernels" / "mm.py").write_text("import triton\n\n@triton.jit\ndef mm(a:\n    pass\n")
    p = cli("check", cwd=tmp_path)
    assert p.returncode == 2
    (line,) = p.stdout.strip().splitlines()
    assert line.startswith(f"{(tmp_path / 'kernels' / 'mm.py').resolve()}:4: case 'mm.fp16': the kernel file does not parse")
    (tmp_path / "reprokit.toml").write_text(GOOD.replace('M = 128', 'M = = 128'))
    p = cli("check", cwd=tmp_path)
    assert p.returncode == 2
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith(f"reprokit: {tmp_path / 'reprokit.toml'}:17: not valid TOML"), line


def test_a_project_plans_normalised_calls_and_stages_its_kernel_folders(tmp_path):
    proj = load(project(tmp_path, GOOD) / "reprokit.toml")
    assert examine(proj).problems == []
    prof = load_config().gpu("h100")
    plan = userplan.build_plan(proj, prof, {"name": "triton-3.6-cu130"}, timeout_s=42).to_json()
    (case,) = plan["cases"]
    assert plan["suite"] == "mine" and case["kind"] == "call" and case["kernel"] == {"file": "mm.py", "function": "mm"}
    assert case["call"] == {
        "args": {"a": {"tensor": [128, 64], "dtype": "float16", "strides": [64, 1], "align": 16},
                 "b": {"tensor": [64, 128], "dtype": "float16", "strides": [1, 64], "align": 8},
                 "c": {"tensor": [2, 3, 4], "dtype": "float32", "strides": [12, 4, 1], "align": 16},
                 "M": 128, "N": 128, "ACT": {"none": True}},
        "grid": [4, 2], "options": {"num_stages": 4}}
    assert (case["configs"], case["expect"], case["num_warps"], case["num_stages"], case["timeout_s"]) == \
        ([1], "sass:UTMALDG", 4, 4, 42.0)
    with pytest.raises(Exception, match="matches no case"):
        userplan.build_plan(proj, prof, {"name": "s"}, only="nothing.*").to_json()
    staged = tmp_path / "staged"
    names = userplan.stage_kernels(proj, staged)
    assert names == ["helpers/acts.py", "mm.py"]   # the helper module too; no __pycache__
    assert (staged / "mm.py").read_text() == MATMUL
    (tmp_path / "reprokit.toml").write_text(GOOD.replace("id = ", "idd = "))
    with pytest.raises(ProjectInvalid) as e:
        userplan.build_plan(load(tmp_path / "reprokit.toml"), prof, {"name": "s"}).to_json()
    assert any("unknown key 'idd'" in p for p in e.value.problems)


def test_a_kernels_folder_too_big_to_travel_is_a_problem(tmp_path):
    project(tmp_path, GOOD.replace('kernels = ["kernels/"]', 'kernels = ["kernels/", "."]'))
    (tmp_path / "venv").mkdir()
    for i in range(501):
        (tmp_path / "venv" / f"m{i}.py").write_text("")
    p = cli("check", cwd=tmp_path)
    assert p.returncode == 2
    (line,) = p.stdout.splitlines()
    assert line.startswith(f"reprokit.toml:3: kernels folder {tmp_path} holds 504 files"), line   # 501 + mm.py, acts.py, reprokit.toml


def test_a_projects_own_stacks_and_gpus_join_the_defaults(tmp_path):
    project(tmp_path, GOOD + '''
[stacks."triton-3.6-mine"]
triton = "3.6.0"
dockerfile = "docker/mine.Dockerfile"

[gpus.h100-mine]
name = "NVIDIA H100 PCIe"
capability = 90
sm_count = 114
smem_per_block = 232448
mem_bandwidth_gbs = 2000
fp16_tflops = 756
''')
    (tmp_path / "docker").mkdir()
    (tmp_path / "docker" / "mine.Dockerfile").write_text("FROM scratch\n")
    p = cli("stacks", "--json", cwd=tmp_path / "kernels")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["stacks"]["triton-3.6-mine"]["dockerfile"] == "docker/mine.Dockerfile"   # as written: no path
    assert "triton-3.0-cu129" in data["stacks"] and {"h100", "h100-mine"} <= set(data["gpus"])
    # --gpu and --stacks may name them (checked at the door against the merged list)
    r = cli("capture", "--gpu", "h100-mine", "--stack", "triton-3.6-mine", "--executor", "venv", "--cases", "none",
            "--out", tmp_path / "cap", cwd=tmp_path)
    assert r.returncode == 2 and "--cases 'none' matches no case" in r.stderr, r.stderr
    try:
        use_project(tmp_path / "reprokit.toml")
        assert load_config().gpu("h100-mine").sm_count == 114
        from reprokit.executors.docker import DockerExecutor
        from reprokit.options import HostEnv

        docker = DockerExecutor(root=ROOT, host=HostEnv())
        mine, default = load_config().stack("triton-3.6-mine"), load_config().stack("triton-3.6-cu130")
        assert docker.dockerfile(mine) == tmp_path / "docker" / "mine.Dockerfile"
        assert docker.dockerfile(default) == ROOT / "Dockerfiles" / "stack.Dockerfile"
    finally:
        use_project(None)
    assert "h100-mine" not in load_config().gpus
    # check judges them as load_config reads them, each at its own line
    (tmp_path / "docker" / "mine.Dockerfile").unlink()
    with open(tmp_path / "reprokit.toml", "a") as f:
        f.write('\n[stacks.nopin]\npython = "3.12"\n\n[gpus.half]\nname = "x"\ncapability = 0\n')
    p = cli("check", cwd=tmp_path)
    n = len(GOOD.splitlines())
    assert p.returncode == 2 and p.stdout.splitlines() == [
        f"reprokit.toml:{n + 4}: stack 'triton-3.6-mine': dockerfile 'docker/mine.Dockerfile' does not exist "
        f"(relative to {tmp_path})",
        f"reprokit.toml:{n + 14}: stack 'nopin' has no 'triton' pin (a version, e.g. \"3.6.0\")",
        f"reprokit.toml:{n + 17}: GPU profile 'half' lacks fp16_tflops, mem_bandwidth_gbs, sm_count, smem_per_block",
        f"reprokit.toml:{n + 19}: GPU profile 'half': capability must be a whole number above 0"], p.stdout


def test_a_folder_the_user_may_not_search_holds_no_project(tmp_path, monkeypatch):
    from reprokit.userspec import project

    real = Path.is_file

    def is_file(self):
        if self.parent == tmp_path / "locked":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "is_file", is_file)
    (tmp_path / "locked" / "work").mkdir(parents=True)
    (tmp_path / "reprokit.toml").write_text("[project]\n")
    assert project.find(tmp_path / "locked" / "work") == tmp_path / "reprokit.toml"
