"""Faults from outside, with real processes: signals in the middle of a capture, SIGKILL, two
writers at once, a read-only folder and a full file system (tmpfs mounts). Each asserts that no
partial or mixed output is left anywhere, no process outlives the run, no file of the user's is
removed, and the user gets one clear line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from reprokit.bundle.reader import extract, verify
from reprokit.errors import FileSystemError
from tests.helpers.fake_capture import make_capture
from tests.helpers.faults import Watched, half_done, wait_for

pytestmark = pytest.mark.triton
STACK = "triton-3.6-cu130"
CASES = "tensor_descriptor.p0,block_ptr.p0,tensor_descriptor.gemm-128x256x64-w8-s3"


@pytest.fixture
def ready(stack_ready):
    stack_ready(STACK)


@pytest.fixture
def tmpdir_env(tmp_path):
    t = tmp_path / "tmp"
    t.mkdir()
    return t, {"TMPDIR": str(t)}


def _capture(out: Path, *extra) -> list:
    return ["capture", "--gpu", "h100", "--executor", "venv", "--stack", STACK, "--cases", CASES, "--workers", "2",
            "--out", out, *extra]


def _compiling(out: Path):
    """True once the run's aside folder holds a case's compile log: the harness is mid-suite."""
    def pred():
        return any(out.parent.glob(f".{out.name}.reprokit-*.partial/cases/*/compile.log"))
    return pred


def _lines(err: str) -> list[str]:
    """The error lines (progress and notes, such as "No GPU on this host", are not errors)."""
    return [ln for ln in err.splitlines() if ln.startswith("reprokit:")]


def _user_files(tmp_path: Path) -> dict:
    """Folders a user may well have beside the output, with the names reprokit once used."""
    made = {}
    for name in ("cap.partial", "cap.failed"):
        d = tmp_path / name
        d.mkdir()
        (d / "notes.txt").write_text(f"mine: {name}\n")
        made[d / "notes.txt"] = f"mine: {name}\n"
    return made


def _theirs(tmp_path: Path) -> list[Path]:
    return [tmp_path / "cap.partial"]


def _untouched(made: dict) -> bool:
    return all(p.is_file() and p.read_text() == text for p, text in made.items())


@pytest.mark.parametrize("signame", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_signal_mid_capture_leaves_nothing_and_says_so(ready, tmp_path, tmpdir_env, signame):
    tmp, env = tmpdir_env
    made = _user_files(tmp_path)
    out = tmp_path / "cap"
    run = Watched(_capture(out), env=env)
    assert wait_for(_compiling(out), 120), run.wait()
    signum = getattr(signal, signame)
    run.signal(signum)
    rc, _, err = run.wait()
    assert rc == 128 + signum
    assert _lines(err) == [f"reprokit: interrupted by {signame}; what this run had half-written was removed"]
    assert run.orphans() == []
    assert half_done(tmp_path, tmp, ignore=_theirs(tmp_path)) == []
    assert not out.exists() and _untouched(made)


def test_what_sigkill_leaves_is_removed_by_the_next_run(ready, tmp_path, tmpdir_env):
    tmp, env = tmpdir_env
    made = _user_files(tmp_path)
    out = tmp_path / "cap"
    run = Watched(_capture(out), env=env)
    assert wait_for(_compiling(out), 120), run.wait()
    run.signal(signal.SIGKILL)
    run.wait()
    assert run.orphans() == []                 # the lifeline took the harness and its cases down
    left = half_done(tmp_path, tmp, ignore=_theirs(tmp_path))
    assert any(".partial" in p for p in left) and any("reprokit-capture" in p for p in left), left
    again = Watched(_capture(out), env=env)
    rc, _, err = again.wait()
    assert rc == 0, err
    assert half_done(tmp_path, tmp, ignore=_theirs(tmp_path)) == [] and again.orphans() == []
    assert _untouched(made)
    plan, results = (json.loads((out / n).read_text()) for n in ("plan.json", "results.json"))
    assert [c["id"] for c in plan["cases"]] == [c["id"] for c in results["cases"]]


def test_force_replaces_the_old_capture_only_once_the_new_one_succeeded(ready, tmp_path, tmpdir_env):
    tmp, env = tmpdir_env
    out = tmp_path / "cap"
    rc, _, err = Watched(_capture(out), env=env).wait()
    assert rc == 0, err
    before = {n: (out / n).read_bytes() for n in ("plan.json", "results.json", "env.json")}
    run = Watched(_capture(out, "--force"), env=env)
    assert wait_for(_compiling(out), 120), run.wait()
    run.signal(signal.SIGTERM)
    assert run.wait()[0] == 143
    assert {n: (out / n).read_bytes() for n in before} == before   # the old one, whole
    assert half_done(tmp_path, tmp, ignore=_theirs(tmp_path)) == []
    rc, _, err = Watched(["capture", "--gpu", "h100", "--executor", "venv", "--stack", STACK, "--cases",
                          "block_ptr.p0", "--out", out, "--force"], env=env).wait()
    assert rc == 0, err
    assert [c["id"] for c in json.loads((out / "results.json").read_text())["cases"]] == ["block_ptr.p0"]
    assert half_done(tmp_path, tmp, ignore=_theirs(tmp_path)) == []


def test_two_writers_of_one_capture_and_of_one_bundle(ready, tmp_path, tmpdir_env):
    tmp, env = tmpdir_env
    out = tmp_path / "cap"
    first = Watched(_capture(out), env=env)
    assert wait_for(lambda: (tmp_path / ".cap.lock").exists(), 60)
    second = Watched(["capture", "--gpu", "h100", "--executor", "venv", "--stack", STACK, "--cases",
                      "block_ptr.p0", "--out", out], env=env)
    rc, _, err = second.wait()
    assert rc == 2 and _lines(err) == [
        f"reprokit: {out}: another reprokit (pid {first.proc.pid}) is writing it now; "
        "wait for it to finish or choose another output"]
    rc, _, err = first.wait()
    assert rc == 0, err
    # Two packers of the same capture into one folder: one bundle, whole, and no mix.
    bundles = tmp_path / "bundles"
    packers = [Watched(["bundle", out, "--out", bundles], env=env) for _ in range(2)]
    codes = sorted(p.wait()[0] for p in packers)
    assert codes in ([0, 0], [0, 2]), codes
    (tgz,) = bundles.glob("*.tgz")
    assert verify(tgz) == []
    assert half_done(tmp_path, bundles, tmp) == []


@pytest.mark.parametrize("second_verb", ["run", "replay"])
def test_a_second_run_into_one_out_is_refused_at_the_start(ready, tmp_path, tmpdir_env, second_verb):
    """While a run packs into --out, a second run or replay into it stops at once (exit 2, one line),
    before doing any work; the first finishes whole (it used to be the second that failed, exit 5,
    after all its work)."""
    tmp, env = tmpdir_env
    made = _user_files(tmp_path)
    out = tmp_path / "out"
    original = _one_bundle(tmp_path / "b", env) if second_verb == "replay" else None
    first = Watched(["run", "--gpu", "h100", "--executor", "venv", "--stacks", STACK, "--cases", CASES,
                     "--workers", "2", "--out", out], env=env)
    assert wait_for(lambda: (out / ".run.lock").exists(), 60)
    if second_verb == "run":
        args = ["run", "--gpu", "h100", "--executor", "venv", "--stacks", STACK, "--cases", "block_ptr.p0",
                "--out", out]
    else:
        args = ["replay", original, "--executor", "venv", "--out", out]
    t0 = time.monotonic()
    rc, _, err = Watched(args, env=env).wait()
    assert rc == 2 and _lines(err) == [
        f"reprokit: {out}: another reprokit (pid {first.proc.pid}) is writing it now; "
        "wait for it to finish or choose another output"], err
    assert time.monotonic() - t0 < 30 and first.proc.poll() is None  # refused at the start, not after work
    rc, _, err = first.wait()
    assert rc == 0, err
    (tgz,) = out.glob("*.tgz")
    assert verify(tgz) == [] and _untouched(made)
    assert half_done(tmp_path, out, tmp, ignore=_theirs(tmp_path) + [tmp_path / "b"]) == []
    assert os.listdir(tmp) == []


def _one_bundle(folder: Path, env: dict) -> Path:
    """A bundle of the stack: what replay starts from."""
    rc, _, err = Watched(["run", "--gpu", "h100", "--executor", "venv", "--stacks", STACK, "--cases", "block_ptr.p0",
                          "--out", folder], env=env).wait()
    assert rc == 0, err
    (b,) = folder.glob("*.tgz")
    return b


def _mount_tmpfs(where: Path, options: str) -> None:
    where.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(where)], capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.strip()}); the CI machine can")


@pytest.fixture
def mounts(tmp_path):
    made = []

    def mount(name: str, options: str) -> Path:
        where = tmp_path / name
        _mount_tmpfs(where, options)
        made.append(where)
        return where

    yield mount
    for where in made:
        subprocess.run(["umount", "-l", str(where)], check=False)


def test_a_read_only_folder_is_one_line_before_anything_runs(ready, tmp_path, tmpdir_env, mounts):
    tmp, env = tmpdir_env
    ro = mounts("ro", "ro,size=1m")
    t0 = time.monotonic()
    rc, _, err = Watched(_capture(ro / "cap"), env=env).wait()
    # refused at the door (the --out argument), in the OS's own words for a read-only mount
    assert rc == 5 and _lines(err) == [f"reprokit: {ro}/cap: cannot write in {ro}: Read-only file system"]
    assert time.monotonic() - t0 < 20 and half_done(tmp) == []
    cap = make_capture(tmp_path / "synthetic")
    for args in (["bundle", cap, "--out", ro], ["run", "--gpu", "h100", "--executor", "venv", "--stacks", STACK,
                                                  "--cases", "block_ptr.p0", "--out", ro]):
        run = Watched(args, env=env)
        rc, _, err = run.wait()
        assert rc == 5, err
        (line,) = _lines(err)
        assert line.startswith(f"reprokit: {ro}") and line.endswith("Read-only file system"), line
        assert run.orphans() == [] and half_done(tmp) == []


def test_a_full_file_system_is_one_line_and_leaves_no_partial_file(ready, tmp_path, tmpdir_env, mounts):
    tmp, env = tmpdir_env
    full = mounts("full", "size=256k")
    cap = make_capture(tmp_path / "big", gemm_cases=2, cubin_size=1 << 20)
    rc, _, err = Watched(["bundle", cap, "--out", full], env=env).wait()
    assert rc == 5
    (line,) = _lines(err)
    assert line.startswith(f"reprokit: {full}/") and line.endswith("No space left on device"), line
    assert os.listdir(full) == []
    # Extracting onto it: the destination's fault, named as such, and nothing half-extracted.
    rc, out, err = Watched(["bundle", cap, "--out", tmp_path / "bundles"], env=env).wait()
    assert rc == 0, err
    with pytest.raises(FileSystemError, match=rf"^{full}/\.reprokit-extract\.reprokit-.*No space left on device$"):
        extract(Path(out.strip()), full)
    assert os.listdir(full) == []
    # A capture whose own files fill the disk: one line, and no half-written capture passes for one.
    (full / "filler").write_bytes(b"\0" * (200 << 10))
    run = Watched(_capture(full / "cap"), env=env)
    rc, _, err = run.wait()
    assert rc in (4, 5) and len(_lines(err)) == 1, err
    assert not (full / "cap").exists() and run.orphans() == []
    assert [p for p in half_done(full, tmp) if not p.endswith(".failed")] == []


def test_a_failed_run_keeps_its_logs_beside_the_bundles_over_nothing(ready, tmp_path, config, venv_executor):
    """run_stacks captures inside a temporary folder of its own; a harness that fails (here: killed
    at its run timeout) is kept as <out>/<stack>-<gpu>.failed-N, beside the user's folders of those
    names, which stay as they were, and the message names where."""
    from reprokit.options import BundleOptions
    from reprokit.run.stacks import run_stacks
    from tests.helpers.runs import planned

    out = tmp_path / "out"
    mine = {out / f"{STACK}-h100" / "thesis.txt": b"mine\n", out / f"{STACK}-h100.failed" / "why.txt": b"mine too\n"}
    for p, data in mine.items():
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    plan, options = planned(config.gpu("h100"), only=CASES, workers=2, run_timeout_s=0.5)
    (o,) = run_stacks([config.stack(STACK)], venv_executor, plan, options, BundleOptions(out))
    kept = out / f"{STACK}-h100.failed-2"
    assert not o.ok and "timed out" in o.error and f"logs in {kept}" in o.error
    assert (kept / "plan.json").is_file() and (kept / "logs").is_dir()
    assert all(p.read_bytes() == data for p, data in mine.items())
    assert sorted(os.listdir(out)) == [f"{STACK}-h100", f"{STACK}-h100.failed", f"{STACK}-h100.failed-2"]


def test_force_never_replaces_a_user_folder_or_a_capture_the_user_added_to(ready, tmp_path, tmpdir_env):
    tmp, env = tmpdir_env
    out = tmp_path / "cap"
    args = ["capture", "--gpu", "h100", "--executor", "venv", "--stack", STACK, "--cases", "block_ptr.p0",
            "--out", out, "--force"]
    out.mkdir()
    (out / "thesis.txt").write_text("mine\n")
    rc, _, err = Watched(args, env=env).wait()
    assert rc == 2 and _lines(err) == [f"reprokit: {out} is not a capture reprokit made (no .reprokit-output.json "
                                       "of kind 'capture' in it), so --force does not replace it; choose another --out"]
    assert sorted(os.listdir(out)) == ["thesis.txt"]
    (out / "thesis.txt").unlink()
    assert Watched(args, env=env).wait()[0] == 0
    (out / "notes.md").write_text("my notes on this capture\n")
    rc, _, err = Watched(args, env=env).wait()
    assert rc == 2 and len(_lines(err)) == 1 and "holds notes.md, which reprokit did not write there" in err
    assert (out / "notes.md").read_text() == "my notes on this capture\n"
    (out / "notes.md").unlink()
    assert Watched(args, env=env).wait()[0] == 0  # a capture as reprokit left it is replaced
    assert half_done(tmp_path, tmp) == [] and os.listdir(tmp) == []
