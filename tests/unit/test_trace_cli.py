"""`reprokit trace` on programs with nothing to trace: one clear line, exit 2, and nothing left
behind in --out (its scratch folder goes)."""

from __future__ import annotations

import sys

from reprokit import cli


def _run(tmp_path, capsys, *command):
    out = tmp_path / "bundles"
    code = cli.main(["trace", "--out", str(out), "--", *command])
    err = capsys.readouterr().err.strip().splitlines()
    return code, [ln for ln in err if ln.startswith("reprokit:")], out


def test_a_program_that_never_imports_triton(tmp_path, capsys):
    code, lines, out = _run(tmp_path, capsys, sys.executable, "-c", "print('no kernels here')")
    assert code == 2
    assert len(lines) == 1 and "without importing triton" in lines[0]
    assert list(out.iterdir()) == []


def test_a_program_that_is_not_there(tmp_path, capsys):
    code, lines, out = _run(tmp_path, capsys, "no-such-program-anywhere", "x.py")
    assert code == 2
    assert lines == ["reprokit: trace: no-such-program-anywhere: no such program on PATH"]
    assert not out.exists() or list(out.iterdir()) == []


def test_no_program_at_all(tmp_path, capsys):
    code, lines, _ = _run(tmp_path, capsys)
    assert code == 2 and len(lines) == 1 and "name the program after --" in lines[0]
