"""A GPU host with no network (issue 9): the CLI imports a verb's dependencies only when the verb
runs, so `--help`, `stacks` and a local compile-only capture need no jsonschema or docker; a
verb that validates says in one line what is missing; and a wheelhouse made here installs the
host side with `pip install --no-index`, as on the lab node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What the lab H100 lacks (ARCHITECTURE.md): importing any of them fails in these processes.
MISSING = ("jsonschema", "referencing", "docker")
_BLOCKED = ("import sys; sys.modules.update({m: None for m in %r}); sys.path[1:1] = %r; sys.path += %r; "
            "from reprokit.cli import main; sys.exit(main(sys.argv[1:]))")


def offline(*args, python=sys.executable, extra_path_after=(), cwd=ROOT, timeout=300):
    code = _BLOCKED % (MISSING, [str(ROOT)], list(extra_path_after))
    return subprocess.run([python, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=timeout)


def test_help_and_every_verbs_help_need_none_of_them():
    from reprokit.parser import VERBS

    p = offline("--help")
    assert p.returncode == 0 and "wheelhouse" in p.stdout, p.stderr
    for verb in VERBS:
        p = offline(verb, "--help")
        assert p.returncode == 0 and "example:" in p.stdout, (verb, p.stderr)
    p = offline("stacks", "--json")
    assert p.returncode == 0 and "h100" in json.loads(p.stdout)["gpus"]


def test_a_verb_that_validates_names_what_is_missing_in_one_line():
    golden = sorted((ROOT / "bundles" / "golden").glob("*/*.tgz"))[0]
    p = offline("verify", str(golden))
    assert p.returncode == 2, p.stderr
    (line,) = p.stderr.strip().splitlines()
    assert line.startswith("reprokit: jsonschema is not installed") and "wheelhouse" in line


@pytest.mark.triton
def test_local_compile_only_capture_needs_none_of_them(stack_ready, venv_executor, tmp_path):
    """The lab node's case: its own Python with triton (here a stack's venv), rich, and nothing else."""
    stack = stack_ready("triton-3.6-cu130")
    python = str(venv_executor.venv_dir(stack) / "bin" / "python")
    # rich from this test's own environment, after the stack's packages: the lab node has it.
    p = offline("capture", "--gpu", "h100", "--executor", "local", "--mode", "compile-only", "--cases",
                "block_ptr.p0", "--workers", "1", "--out", str(tmp_path / "cap"), "--json",
                python=python, extra_path_after=[sysconfig.get_paths()["purelib"]])
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert out["stack"] == "local" and out["cases"][0]["verdict"] == "no-tma"


def test_a_wheelhouse_installs_the_host_side_with_no_index(tmp_path):
    wheels = tmp_path / "wheels"
    p = subprocess.run([sys.executable, "-m", "reprokit", "wheelhouse", "--out", str(wheels), "--extras", "",
                        "--json"], capture_output=True, text=True, cwd=ROOT, timeout=900)
    if p.returncode != 0:
        if os.environ.get("REPROKIT_REQUIRE_TRITON") != "1" and "pip" in p.stderr:
            pytest.skip(f"no package index: {p.stderr.strip().splitlines()[-1]}")
        pytest.fail(p.stderr)
    names = json.loads(p.stdout)["wheels"]
    assert any(n.startswith("reprokit_gpu-") for n in names) and any(n.startswith("jsonschema-") for n in names)
    assert not any(n.startswith(("triton-", "torch-")) for n in names)
    # Built from a copy of the checkout: exactly today's modules, whatever a build/ folder holds.
    (own,) = [n for n in names if n.startswith("reprokit_gpu-")]
    shipped = {n for n in zipfile.ZipFile(wheels / own).namelist() if n.endswith(".py")
               and not n.startswith("reprokit/defaults/")}
    assert shipped == {str(p.relative_to(ROOT)) for p in (ROOT / "reprokit").rglob("*.py")
                       if "__pycache__" not in p.parts}
    assert (wheels / "extras.txt").read_text() == "\n"  # what the Makefile will install from it
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    install = subprocess.run([str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-index",
                              "--find-links", str(wheels), "reprokit-gpu"], capture_output=True, text=True, timeout=600)
    assert install.returncode == 0, install.stderr
    golden = sorted((ROOT / "bundles" / "golden").glob("*/*.tgz"))[0]
    # Installed (not this checkout), from a folder outside it: the defaults are package data.
    v = subprocess.run([str(venv / "bin" / "reprokit"), "verify", str(golden)], capture_output=True, text=True,
                       cwd=tmp_path, timeout=300, env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    assert v.returncode == 0 and v.stdout.startswith("OK "), v.stderr
    where = subprocess.run([str(venv / "bin" / "python"), "-c", "import reprokit; print(reprokit.__file__)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60).stdout
    assert str(venv) in where
