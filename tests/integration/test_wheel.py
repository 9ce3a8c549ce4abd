"""The installable tool (issue 19 item 1, issue 18 item 6): a wheel built from this checkout,
installed without extras into a fresh venv by a real pip, works from a folder outside any
checkout. It carries every module and the packaged defaults (stacks, suite, sweeps, Dockerfiles,
schemas); it verifies, shows, diffs and reports golden bundles; and a verb that needs a missing
extra stops with one line naming that extra.

The wheel is built once per session; the base's own wheels (jsonschema, rich, ...) are
downloaded once into $REPROKIT_CACHE/test-wheelhouse/<hash of the requirements> and the venv is
installed from there with --no-index, so only the first run ever asks the package index.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from reprokit.config import load_toml

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = sorted((ROOT / "bundles" / "golden").glob("*/*.tgz"))
# A process that must see nothing of this checkout or of the test's own environment.
CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REPROKIT_ROOT", "VIRTUAL_ENV")}


def _pip(*args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check", *args], capture_output=True,
                          text=True, timeout=timeout, env=CLEAN_ENV)


def _index_or_fail(p: subprocess.CompletedProcess, what: str) -> None:
    if p.returncode == 0:
        return
    if os.environ.get("REPROKIT_REQUIRE_TRITON") != "1":
        pytest.skip(f"cannot {what} (no package index?): {p.stderr.strip().splitlines()[-1:]}")
    pytest.fail(f"cannot {what}: {p.stderr[-2000:]}")


def _source_files() -> list[str]:
    """The checkout's files as a clone has them (tracked, or new and not ignored)."""
    return subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.split()


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    # Built from a copy of the checkout's own files: setuptools' build/ folder in a checkout keeps
    # modules that were since deleted, and a wheel built there would ship them.
    src = tmp_path_factory.mktemp("src")
    for rel in _source_files():
        if (ROOT / rel).is_file():
            (src / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / rel, src / rel)
    out = tmp_path_factory.mktemp("dist")
    _index_or_fail(_pip("wheel", "-q", "--no-deps", "--wheel-dir", str(out), str(src)), "build the wheel")
    (whl,) = out.glob("*.whl")
    return whl


@pytest.fixture(scope="session")
def base_wheelhouse() -> Path:
    """The base requirements' wheels, downloaded once and kept (keyed by the requirements)."""
    reqs = load_toml(ROOT / "pyproject.toml")["project"]["dependencies"]
    key = hashlib.sha256(json.dumps([sys.version_info[:2], reqs]).encode()).hexdigest()[:16]
    cache = Path(os.environ.get("REPROKIT_CACHE") or Path.home() / ".cache" / "reprokit")
    house = cache / "test-wheelhouse" / key
    if not (house / ".done").is_file():
        _index_or_fail(_pip("download", "-q", "--dest", str(house), *reqs), "download the base's wheels")
        (house / ".done").write_text("\n".join(reqs) + "\n")
    return house


@pytest.fixture(scope="session")
def installed(wheel, base_wheelhouse, tmp_path_factory) -> Path:
    """A fresh venv with the wheel and its base only; returns its bin/ folder."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300, env=CLEAN_ENV)
    p = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check",
                        "--no-index", "--find-links", str(base_wheelhouse), str(wheel)],
                       capture_output=True, text=True, timeout=600, env=CLEAN_ENV)
    assert p.returncode == 0, p.stderr[-2000:]
    return venv / "bin"


def cli(bin_dir: Path, *args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(bin_dir / "reprokit"), *map(str, args)], capture_output=True, text=True, cwd=cwd,
                          timeout=300, env=CLEAN_ENV)


def test_the_wheel_carries_every_module_and_the_defaults(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    modules = {f for f in _source_files() if f.startswith("reprokit/") and f.endswith(".py")}
    shipped = {n for n in names if n.endswith(".py") and not n.startswith("reprokit/defaults/")}
    assert modules and modules == shipped, (sorted(modules - shipped), sorted(shipped - modules))
    data = {f"reprokit/defaults/{t}" for t in _source_files()
            if t == "stacks.toml" or t.startswith(("Dockerfiles/", "schemas/", "kernels/"))}
    assert {"reprokit/defaults/stacks.toml", "reprokit/defaults/kernels/suite.toml",
            "reprokit/defaults/Dockerfiles/stack.Dockerfile"} <= data
    assert data == {n for n in names if n.startswith("reprokit/defaults/")}, sorted(data ^ set(names))
    meta = zipfile.ZipFile(wheel).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    # The distribution's own name, never the index's unrelated `reprokit`; the base has no extra's module.
    assert "Name: reprokit-gpu\n" in meta
    base = [line for line in meta.splitlines() if line.startswith("Requires-Dist:") and "extra ==" not in line]
    assert base and not any(m in line for line in base for m in ("docker", "nvidia-ml-py", "matplotlib", "pytest"))


def test_installed_without_extras_it_verifies_shows_diffs_and_reports_from_any_folder(installed, tmp_path):
    python = installed / "python"
    for module in ("docker", "pynvml", "matplotlib"):
        p = subprocess.run([str(python), "-c", f"import {module}"], capture_output=True, text=True, env=CLEAN_ENV)
        assert p.returncode == 1 and "ModuleNotFoundError" in p.stderr, module
    where = subprocess.run([str(python), "-c", "import reprokit; print(reprokit.__file__)"], capture_output=True,
                           text=True, cwd=tmp_path, env=CLEAN_ENV).stdout
    assert where.startswith(str(installed.parent)), where
    old, new = GOLDEN[0], GOLDEN[-1]
    v = cli(installed, "verify", old, cwd=tmp_path)
    assert v.returncode == 0 and v.stdout.startswith("OK "), v.stderr
    s = cli(installed, "show", new, "--json", cwd=tmp_path)
    assert s.returncode == 0 and json.loads(s.stdout)["cases"], s.stderr
    d = cli(installed, "diff", old, new, "--json", cwd=tmp_path)
    # diff exits 1 when verdicts moved, as they do from 3.0 to 3.6 (docs/compare.md)
    assert d.returncode == 1 and json.loads(d.stdout)["moved"], d.stderr
    r = cli(installed, "report", old, new, "--out", tmp_path / "r.md", cwd=tmp_path)
    assert r.returncode == 0 and "reprokit verify" in (tmp_path / "r.md").read_text(), r.stderr
    # The packaged defaults answer from a folder that holds no stacks.toml.
    st = cli(installed, "stacks", "--json", cwd=tmp_path)
    assert st.returncode == 0 and "h100" in json.loads(st.stdout)["gpus"], st.stderr
    assert sorted(x.name for x in tmp_path.iterdir()) == ["r.md"]


@pytest.mark.parametrize("args,extra", [
    (["run", "--gpu", "h100", "--mode", "compile-only", "--executor", "docker", "--stacks", "triton-3.6-cu130",
      "--out", "b"], "docker"),
    (["run", "--gpu", "h100", "--mode", "gpu", "--executor", "venv", "--stacks", "triton-3.6-cu130", "--out", "b"],
     "gpu"),
    (["report", str(GOLDEN[0]), "--format", "html", "--out", "r.html"], "html"),
])
def test_a_verb_that_needs_a_missing_extra_says_which_in_one_line(installed, tmp_path, args, extra):
    p = cli(installed, *args, cwd=tmp_path)
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert f"install reprokit with its {extra!r} extra: pip install '<reprokit wheel or checkout>[{extra}]'" in line
    assert "pip install reprokit " not in line and "pip install reprokit[" not in line
    assert list(tmp_path.iterdir()) == []   # nothing written


# --- a user's project from the installed wheel (issue 19's first "done when") ---------------------

USERCASES = ROOT / "tests" / "data" / "usercases"
# Two kernel files written the way public Triton kernels are (tests/data/usercases): autotune,
# heuristics, a None constexpr, a helper @jit, torch imported at module level; host and device
# tensor descriptors, and block pointers.
CASES = '''
[[case]]
id = "softmax.even"
kernel = "kernels/block_ptr_softmax.py:scaled_softmax"
grid = [256]
num_warps = 4
[case.args]
x_ptr = { tensor = [4096, 1024], dtype = "float16" }
out_ptr = { tensor = [4096, 1024], dtype = "float16" }
M = 4096
N = 1024
stride_xm = 1024
stride_om = 1024
scale = 0.5
BLOCK_M = 16
BLOCK_N = 1024
SCALE2 = 1.0
USE_EXP2 = true
ACT = "relu"
OUT_DTYPE = { dtype = "float16" }
MASK = { none = true }

[[case]]
id = "matmul.persistent"
kernel = "kernels/persistent_matmul.py:matmul_tma_persistent"
grid = [132]
configs = [0, 2]
expect = "sass:UTMALDG"
[case.args]
a_desc = { descriptor = { tensor = [4096, 4096], dtype = "float16" }, block = [1, 1] }
b_desc = { descriptor = { tensor = [4096, 4096], dtype = "float16" }, block = [1, 1] }
c_desc = { descriptor = { tensor = [4096, 4096], dtype = "float16" }, block = [1, 1] }
bias_ptr = { none = true }
M = 4096
N = 4096
K = 4096
NUM_SMS = 132

[[case]]
id = "add.devdesc"
kernel = "kernels/persistent_matmul.py:add_device_descriptor"
grid = [16, 16]
expect = "tma"
[case.args]
x_ptr = { tensor = [1024, 1024], dtype = "float16" }
y_ptr = { tensor = [1024, 1024], dtype = "float16" }
out_ptr = { tensor = [1024, 1024], dtype = "float16" }
M = 1024
N = 1024
BLOCK_M = 64
BLOCK_N = 64
'''


@pytest.mark.triton
def test_a_users_project_from_the_wheel_runs_replays_diffs_and_reports(installed, tmp_path, stack_ready):
    for s in ("triton-3.6-cu130", "triton-3.5-cu130", "triton-3.4-cu129"):
        stack_ready(s)   # the shared venv cache, so that the wheel's runs build nothing
    proj = tmp_path / "proj"
    p = cli(installed, "init", proj, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    for f in ("block_ptr_softmax.py", "persistent_matmul.py"):
        shutil.copyfile(USERCASES / f, proj / "kernels" / f)
    with open(proj / "reprokit.toml", "a") as f:
        f.write(CASES)
    c = cli(installed, "check", cwd=proj)
    assert c.returncode == 0 and "3 case(s), no problem" in c.stderr, c.stdout + c.stderr
    # --executor auto without the docker extra: venv, and it says why
    r = cli(installed, "run", "--gpu", "h100", "--stacks", "triton-3.6-cu130,triton-3.5-cu130", "--executor", "auto",
            "--mode", "compile-only", "--workers", "2", "--out", "b", "--json", cwd=proj)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "executor: venv (docker-py is not installed (reprokit's 'docker' extra))" in r.stderr
    bundles = {s["stack"]: proj / s["bundle"] for s in json.loads(r.stdout)["stacks"]}
    for stack, bundle in bundles.items():
        shown = json.loads(cli(installed, "show", bundle, "--json", cwd=proj).stdout)
        statuses = {c["id"]: c["status"] for c in shown["cases"]}
        # the autotuned case is one case per chosen config
        assert sorted(statuses) == ["add.devdesc", "matmul.persistent.cfg0", "matmul.persistent.cfg2",
                                    "softmax.even"], (stack, statuses)
        assert set(statuses.values()) == {"ok"}, (stack, statuses)
        with tarfile.open(bundle) as tar:
            kernels = sorted(m.name.split("/kernels/", 1)[1] for m in tar.getmembers()
                             if "/kernels/" in m.name and m.isfile())
        assert kernels == ["block_ptr_softmax.py", "persistent_matmul.py"]
    rp = cli(installed, "replay", bundles["triton-3.6-cu130"], "--stacks", "triton-3.4-cu129", "--executor", "venv",
             "--workers", "2", "--out", "r", "--json", cwd=proj)
    moved = json.loads(rp.stdout)["grid"]["moved"] if rp.stdout.strip() else None
    assert rp.returncode == (1 if moved else 0), rp.stderr[-3000:]   # docs/compare.md: 1 when a cell moved
    d = cli(installed, "diff", bundles["triton-3.5-cu130"], bundles["triton-3.6-cu130"], "--json", cwd=proj)
    assert d.returncode == (1 if json.loads(d.stdout)["moved"] else 0), d.stderr
    rep = cli(installed, "report", *bundles.values(), "--out", "report.md", cwd=proj)
    assert rep.returncode == 0 and "scaled_softmax" in (proj / "report.md").read_text(), rep.stderr
