"""Arguments are checked at the door: one line and exit 2 before anything runs, and under --json
the error is JSON on stdout too."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.bundle_tools import make_bundle

ROOT = Path(__file__).resolve().parents[2]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT)


def _one_line(p) -> str:
    lines = [ln for ln in p.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, p.stderr
    return lines[0]


@pytest.mark.parametrize("args,message", [
    (["capture", "--gpu", "h100", "--case-timeout", "0"], "--case-timeout: must be more than 0 seconds, got '0'"),
    (["capture", "--gpu", "h100", "--case-timeout", "-1"], "--case-timeout: must be more than 0 seconds, got '-1'"),
    (["capture", "--gpu", "h100", "--case-timeout", "nan"], "--case-timeout: must be more than 0 seconds"),
    (["run", "--gpu", "h100", "--case-timeout", "soon"], "'soon' is not a number of seconds"),
    (["run", "--gpu", "h100", "--stacks", "", "--executor", "venv"], "--stacks: '' names no stack"),
    (["run", "--gpu", "h100", "--stacks", ",", "--executor", "venv"], "--stacks: ',' names no stack"),
    (["prepare", "--stacks", "triton-3.0-cu129,,triton-3.5-cu130"], "has an empty name between commas"),
])
def test_bad_arguments_stop_at_the_door(tmp_path, args, message):
    out = tmp_path / "out"
    p = _cli(*args, "--out", out) if args[0] != "prepare" else _cli(*args)
    assert p.returncode == 2 and message in _one_line(p), p.stderr
    assert not out.exists()


def test_parent_must_be_a_valid_bundle(tmp_path):
    good = make_bundle(tmp_path / "g")
    cap = tmp_path / "g" / "capture"
    truncated = tmp_path / "truncated.tgz"
    truncated.write_bytes(good.read_bytes()[:5000])
    p = _cli("bundle", cap, "--out", tmp_path / "out", "--parent", truncated)
    assert p.returncode == 2 and f"--parent {truncated}: not a bundle: " in _one_line(p)
    assert "truncated" in p.stderr and not (tmp_path / "out").exists()
    p = _cli("bundle", cap, "--out", tmp_path / "out", "--parent", good)
    assert p.returncode == 0, p.stderr


def test_json_errors_are_json(tmp_path):
    p = _cli("show", tmp_path / "missing.tgz", "--json")
    assert p.returncode == 2
    line = f"reprokit show: argument BUNDLE: {tmp_path / 'missing.tgz'}: no such file (see reprokit show --help)"
    assert json.loads(p.stdout) == {"error": line, "exit_code": 2, "problems": [line]}
    p = _cli("capture", "--gpu", "h100", "--out", tmp_path / "o", "--case-timeout", "0", "--json")
    assert p.returncode == 2 and json.loads(p.stdout)["exit_code"] == 2
