"""Arguments are checked at the door: one line and exit 2 before anything runs, and under --json
the error is JSON on stdout too."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
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


GOLDEN = sorted((ROOT / "bundles" / "golden").glob("*/*.tgz"))[0]


@pytest.mark.parametrize("args,message", [
    # Arguments that are each valid but do not go together: refused, never silently ignored.
    (["run", "--gpu", "h100", "--executor", "local", "--stacks", "triton-3.6-cu130"], "--stacks needs venv or docker"),
    (["capture", "--gpu", "h100", "--executor", "local", "--stack", "triton-3.6-cu130", "--out", "{tmp}/c"],
     "--stack triton-3.6-cu130 needs venv or docker"),
    (["replay", str(GOLDEN), "--executor", "local", "--stacks", "triton-3.6-cu130"], "--stacks needs venv or docker"),
    (["sweep", "tma-invariants", "--executor", "local"], "which only --mode gpu does; compile-only sweeps run on "
                                                         "the spec's pinned stacks"),
    (["sweep", "tma-invariants", "--merge", str(GOLDEN)], "a SPEC would be ignored"),
    (["sweep", "--merge", str(GOLDEN), "--stacks", "triton-3.6-cu130", "--reduced"],
     "--stacks, --reduced would be ignored"),
    (["fleet", "task", "{tmp}", "3", "--index-from-env", "SLURM_ARRAY_TASK_ID"], "give INDEX (3) or --index-from-env"),
    (["sweep", "tma-invariants", "--reduced", "--shard", "999/1000", "--work", "{tmp}/w", "--out", "{tmp}/o"],
     "that shard of sweep tma-invariants holds no point"),
    # Globs that match nothing: exit 2 from every verb that takes them, before any stack starts.
    (["run", "--gpu", "h100", "--executor", "venv", "--stacks", "triton-3.6-cu130", "--cases", "nomatch*",
      "--out", "{tmp}/b"], "--cases 'nomatch*' matches no case"),
    (["capture", "--gpu", "h100", "--executor", "venv", "--stack", "triton-3.6-cu130", "--cases", "nomatch*",
      "--out", "{tmp}/c"], "--cases 'nomatch*' matches no case"),
    (["replay", str(GOLDEN), "--executor", "venv", "--cases", "nomatch*", "--out", "{tmp}/b"],
     "--cases 'nomatch*' matches no case"),
])
def test_arguments_that_do_not_go_together_are_one_line_and_exit_2(tmp_path, args, message, capsys):
    from reprokit.cli import main

    code = main([a.replace("{tmp}", str(tmp_path)) for a in args])
    err = capsys.readouterr().err
    lines = [ln for ln in err.splitlines() if ln.startswith("reprokit:")]
    assert code == 2 and len(lines) == 1 and message in lines[0], err
    assert list(tmp_path.iterdir()) == []


def _as_another_user(folder: Path):
    """argv prefix and folder mode so that the command runs as a user who may not write `folder`."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: no other user to be")
    prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups"]
    if subprocess.run([*prefix, sys.executable, "-c", "import reprokit"], cwd=ROOT, env={"PYTHONPATH": str(ROOT)},
                      capture_output=True).returncode != 0:
        pytest.skip(f"the user nobody cannot run {sys.executable} with this checkout")
    return prefix


@pytest.mark.parametrize("args", [
    ["prepare", "--stacks", "triton-3.6-cu130", "--executor", "venv"],
    ["capture", "--gpu", "h100", "--executor", "venv", "--stack", "triton-3.6-cu130", "--out", "{tmp}/cap"],
    ["sweep", "tma-invariants", "--stacks", "triton-3.5-cu130", "--gpus", "h100", "--reduced",
     "--work", "{tmp}/work", "--out", "{tmp}/bundles"],
])
def test_a_read_only_venv_cache_is_one_line_and_exit_5(args):
    """The cache is the OS's to refuse: exit 5, one line naming it, not a traceback or a per-stack exit 3."""
    # Outside pytest's tmp (mode 700), so that the other user can reach it.
    root = Path(tempfile.mkdtemp(prefix="rocache-"))
    try:
        root.chmod(0o777)
        cache = root / "cache"
        cache.mkdir(mode=0o755)
        prefix = _as_another_user(cache)
        env = {**os.environ, "REPROKIT_CACHE": str(cache), "HOME": str(root), "TMPDIR": str(root),
               "PYTHONPATH": str(ROOT)}
        p = subprocess.run([*prefix, sys.executable, "-m", "reprokit", *[a.replace("{tmp}", str(root)) for a in args]],
                           capture_output=True, text=True, cwd=root, env=env)
        lines = [ln for ln in p.stderr.splitlines() if ln.startswith("reprokit:")]
        assert p.returncode == 5 and len(lines) == 1 and str(cache) in lines[0], p.stderr
        assert "Traceback" not in p.stderr
        assert list(cache.iterdir()) == []
    finally:
        shutil.rmtree(root)


def test_bundle_refuses_an_out_folder_inside_the_capture(tmp_path, capsys):
    from reprokit.cli import main

    make_bundle(tmp_path / "g")
    cap = tmp_path / "g" / "capture"
    before = sorted(p.relative_to(cap) for p in cap.rglob("*"))
    for out in (cap, cap / "bundles"):
        assert main(["bundle", str(cap), "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "inside the capture folder" in err
    assert sorted(p.relative_to(cap) for p in cap.rglob("*")) == before
    assert main(["bundle", str(cap), "--out", str(tmp_path / "elsewhere")]) == 0


def test_the_reported_cases(tmp_path, capsys):
    """Issue 17's arguments at the door, each one line and exit 2 with nothing written."""
    import gzip

    from reprokit.cli import main

    text = tmp_path / "text.tgz"
    text.write_bytes(gzip.compress(b"just some text"))
    make_bundle(tmp_path / "g")
    cap = tmp_path / "g" / "capture"
    cases = [
        (["bundle", str(text)], "text.tgz: is a file, not a folder"),
        (["bundle", str(cap), "--executor", "bogus", "--out", str(tmp_path / "b")], "invalid choice: 'bogus'"),
        (["run", "--gpu", "h100", "--stacks", "triton-3.6-cu130,triton-3.6-cu130", "--executor", "venv",
          "--out", str(tmp_path / "b")], "names triton-3.6-cu130 twice"),
        (["sweep", "tma-invariants", "--work", str(text)], "--work: " + str(text) + ": is a file, not a folder"),
        (["sweep", "tma-invariants", "--work", str(text / "w")], "is a file, so no folder can be made there"),
    ]
    for args, message in cases:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, (args, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["g", "text.tgz"]


@pytest.mark.parametrize("var,value", [("REPROKIT_MAX_BUNDLE_BYTES", "nan"), ("REPROKIT_MAX_MEMBERS", "-3"),
                                       ("REPROKIT_MAX_MEMBER_BYTES", "0")])
def test_a_bad_limit_in_the_environment_is_named(var, value, monkeypatch, capsys):
    from reprokit.cli import main

    monkeypatch.setenv(var, value)
    assert main(["verify", str(GOLDEN)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"reprokit: {var}: ") and repr(value) in err, err


def test_a_folder_where_a_file_belongs_is_bad_input(tmp_path, capsys):
    """A capture's plan.json or a fleet's fleet.json that is a folder: exit 2, not the OS's exit 5."""
    from reprokit.cli import main

    for name in ("c/results.json", "c/plan.json", "f/fleet.json"):
        (tmp_path / name).mkdir(parents=True)
    c, f = str(tmp_path / "c"), str(tmp_path / "f")
    for args, message in ((["diff", c, c], "results.json is a folder"),
                          (["bundle", c, "--out", str(tmp_path / "o")], "plan.json is a folder"),
                          (["fleet", "status", f], "fleet.json: is a folder")):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and message in err, err


@pytest.mark.parametrize("args,message", [
    # Compile-only sweeps keep their pinned stacks: the host's own Triton only where it runs on the GPU.
    (["sweep", "gemm-configs", "--mode", "gpu", "--executor", "local", "--stacks", "triton-3.5-cu130"],
     "--executor local runs this interpreter's own Triton; --stacks needs venv or docker"),
    (["sweep", "--merge", "x.tgz", "--executor", "local"], "--executor would be ignored"),
])
def test_sweep_refuses_the_local_executor_where_it_would_not_run_the_gpu(args, message, tmp_path):
    if "--merge" in args:
        (tmp_path / "x.tgz").write_bytes(b"")
        args = [str(tmp_path / a) if a == "x.tgz" else a for a in args]
    p = _cli(*args, "--work", tmp_path / "work", "--out", tmp_path / "out")
    assert p.returncode == 2 and message in _one_line(p), p.stderr
    assert not (tmp_path / "work").exists() and not (tmp_path / "out").exists()


@pytest.mark.skipif(importlib.util.find_spec("triton") is not None, reason="this interpreter has triton")
def test_a_local_capture_without_triton_says_one_line_not_the_gpu_notice_first(tmp_path):
    # No triton here: the refusal is all that is said, on stdout and stderr together.
    p = _cli("capture", "--gpu", "h100", "--executor", "local", "--out", tmp_path / "out")
    said = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
    assert p.returncode == 2 and len(said) == 1 and "needs triton in this interpreter" in said[0], said
    assert not (tmp_path / "out").exists()


def test_a_capture_into_a_folder_it_may_not_replace_says_one_line_before_anything(tmp_path):
    # Refused at the door: no notice about the GPU (there is none here) before the refusal.
    out = tmp_path / "cap"
    out.mkdir()
    (out / "notes.txt").write_text("mine\n")
    p = _cli("capture", "--gpu", "h100", "--executor", "venv", "--stack", "triton-3.6-cu130", "--out", out)
    said = [ln for ln in (p.stdout + p.stderr).splitlines() if ln.strip()]
    assert p.returncode == 2 and len(said) == 1 and "exists and is not empty" in said[0], said
    assert (out / "notes.txt").read_text() == "mine\n" and sorted(os.listdir(out)) == ["notes.txt"]
