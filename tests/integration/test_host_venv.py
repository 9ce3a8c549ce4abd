"""The host venv of `make ... EXECUTOR=local` sees the packages of the interpreter that made it,
also when that interpreter is itself a venv (the lab H100's python3 is /opt/torch/.venv, and
`venv --system-site-packages` shows its base interpreter's packages instead); pip counts them as
installed; and the Makefile installs the extras a wheelhouse was made with."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IN_A_VENV = sys.prefix != sys.base_prefix


def _imports(python: Path, module: str) -> str:
    p = subprocess.run([str(python), "-c", f"import {module}; print({module}.__file__)"],
                       capture_output=True, text=True, timeout=120, check=False)
    return p.stdout.strip() if p.returncode == 0 else ""


@pytest.mark.skipif(not IN_A_VENV, reason="needs the tests to run in a venv, as on the lab H100")
def test_the_host_venv_sees_a_venv_interpreters_packages(tmp_path):
    import matplotlib  # this venv has it (the html extra); its base interpreter need not

    # What --system-site-packages gives: the base interpreter's packages, not this venv's.
    plain = tmp_path / "plain"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(plain)],
                   check=True, timeout=300)
    base_has_it = _imports(plain / "bin" / "python", "matplotlib")
    assert not base_has_it.startswith(sys.prefix)

    target = tmp_path / "host-local"
    p = subprocess.run([sys.executable, "-m", "reprokit.hostvenv", str(target), "--see-this-python"],
                       capture_output=True, text=True, cwd=ROOT, timeout=300, check=False)
    assert p.returncode == 0, p.stderr
    vpy = target / "bin" / "python"
    assert _imports(vpy, "matplotlib") == matplotlib.__file__
    # pip (this interpreter's, through the .pth file) finds it installed: nothing to fetch.
    empty = tmp_path / "no-wheels"
    empty.mkdir()
    pip = subprocess.run([str(vpy), "-m", "pip", "install", "--disable-pip-version-check", "--no-index",
                          "--find-links", str(empty), "matplotlib>=3.5"], capture_output=True, text=True, timeout=300,
                         check=False)
    assert pip.returncode == 0 and "already satisfied" in pip.stdout, pip.stdout + pip.stderr
    # Its own packages come first: a package installed into it shadows the interpreter's.
    order = subprocess.run([str(vpy), "-c", "import sys; print(sys.path)"], capture_output=True, text=True,
                           timeout=60, check=True).stdout
    assert order.index(str(target)) < order.index(str(Path(matplotlib.__file__).parents[1]))


def test_without_see_this_python_the_venv_is_isolated(tmp_path):
    target = tmp_path / "host"
    subprocess.run([sys.executable, "-m", "reprokit.hostvenv", str(target)], check=True, cwd=ROOT,
                   capture_output=True, timeout=600)
    assert _imports(target / "bin" / "python", "pip")  # its own pip (ensurepip)
    assert not list((target / "lib").glob("python*/site-packages/_reprokit_host_python.pth"))


def _make_dry(*args: str) -> str:
    p = subprocess.run(["make", "-n", "-B", ".reprokit/host-local/.installed", *args], capture_output=True,
                       text=True, cwd=ROOT, timeout=60, check=False)
    assert p.returncode == 0, p.stderr
    return p.stdout


def test_the_makefile_installs_the_extras_the_wheelhouse_was_made_with(tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / "extras.txt").write_text("test\n")
    out = _make_dry("EXECUTOR=local", f"WHEELHOUSE={wheels}", "PYTHON=/some/conda/env/bin/python")
    assert "/some/conda/env/bin/python -m reprokit.hostvenv .reprokit/host-local --see-this-python" in out
    assert f"--no-index --find-links {wheels}" in out and "-e '.[test]'" in out
    (wheels / "extras.txt").write_text("\n")
    assert "-e '.'" in _make_dry("EXECUTOR=local", f"WHEELHOUSE={wheels}")
    # Without a wheelhouse: the extras a default wheelhouse holds, so the two always agree.
    from reprokit.wheelhouse import DEFAULT_EXTRAS

    assert f"-e '.[{','.join(DEFAULT_EXTRAS)}]'" in _make_dry("EXECUTOR=local")
