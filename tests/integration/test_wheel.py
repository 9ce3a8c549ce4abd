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
import subprocess
import sys
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


@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _index_or_fail(_pip("wheel", "-q", "--no-deps", "--wheel-dir", str(out), str(ROOT)), "build the wheel")
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
    modules = {str(p.relative_to(ROOT)) for p in (ROOT / "reprokit").rglob("*.py") if "__pycache__" not in p.parts}
    assert modules and modules <= names, sorted(modules - names)
    tracked = subprocess.run(["git", "ls-files", "stacks.toml", "Dockerfiles", "schemas", "kernels"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout.split()
    data = {f"reprokit/defaults/{t}" for t in tracked}
    assert {"reprokit/defaults/stacks.toml", "reprokit/defaults/kernels/suite.toml",
            "reprokit/defaults/Dockerfiles/stack.Dockerfile"} <= data
    assert data <= names, sorted(data - names)
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
