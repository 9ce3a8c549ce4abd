"""Locks and leftovers with real processes: a live holder keeps its output and temp files, a
SIGKILLed one leaves things that the next sweep recognises and removes, and nothing else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit import locks
from reprokit.errors import FileSystemError, OutputBusy, OutputExists

HOLDER = """
import sys, time
from pathlib import Path
from reprokit import locks
folder = Path(sys.argv[1])
lock = locks.acquire(folder / "cap", "capture")
t = locks.make_temp(folder, ".cap", "partial", is_dir=True)
(t.path / "plan.json").write_text("{}")
print(t.path, flush=True)
time.sleep(60)
"""


def _holder(folder: Path):
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(folder)], stdout=subprocess.PIPE, text=True,
                         env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
    return p, Path(p.stdout.readline().strip())


def test_second_writer_is_refused_until_the_first_dies_and_sweep_takes_only_the_dead(tmp_path):
    (tmp_path / ".cap.mine.partial").mkdir()          # the user's: no reprokit token
    (tmp_path / "notes.reprokit.txt").write_text("x")  # the user's
    p, aside = _holder(tmp_path)
    try:
        assert aside.is_dir() and locks.is_ours(aside.name)
        with pytest.raises(OutputBusy, match=rf"cap: another reprokit \(pid {p.pid}\) is writing it"):
            locks.acquire(tmp_path / "cap")
        assert locks.sweep(tmp_path) == [] and aside.is_dir()
        assert locks.owner_alive(aside)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert not locks.owner_alive(aside)
    removed = locks.sweep(tmp_path)
    assert aside in removed and not aside.exists()
    left = sorted(os.listdir(tmp_path))
    assert left == [".cap.mine.partial", "notes.reprokit.txt"]
    with locks.hold(tmp_path / "cap"):
        assert (tmp_path / ".cap.lock").exists()
    assert not (tmp_path / ".cap.lock").exists()


def test_temp_is_removed_unless_finished(tmp_path):
    with locks.temp(tmp_path, "b", "partial", is_dir=False) as t:
        t.path.write_text("half")
    assert os.listdir(tmp_path) == []
    with locks.temp(tmp_path, "b", "partial", is_dir=False) as t:
        t.path.write_text("whole")
        t.finish(tmp_path / "b.tgz")
    assert os.listdir(tmp_path) == ["b.tgz"]


def test_unwritable_folder_is_one_filesystem_error(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        if os.access(ro, os.W_OK):
            pytest.skip("running as a user who can write anywhere")
        with pytest.raises(FileSystemError, match="Permission denied"):
            locks.acquire(ro / "cap")
    finally:
        ro.chmod(0o755)


def test_run_scratch_is_one_folder_removed_at_the_end(tmp_path):
    import tempfile

    before = os.environ.get("TMPDIR"), tempfile.gettempdir()
    with locks.run_scratch(tmp_path) as d:
        assert d.parent == tmp_path and locks.is_ours(d.name)
        (d / "x").write_text("1")
        # The folder is handed to child processes; this process's temp settings stay as they were.
        assert (os.environ.get("TMPDIR"), tempfile.gettempdir()) == before
    assert os.listdir(tmp_path) == []


def test_sweep_takes_only_whole_temp_names_with_our_lock(tmp_path):
    """Names that merely contain a reprokit token are the user's; so is a temp-shaped name with no
    lock file of ours beside it."""
    user = {
        "reprokit-2025-0badf00d-notes/n.txt": "notes\n",
        "paper-reprokit-12-deadbeef.md": "paper\n",
        ".cap.reprokit-12-deadbeef.partial.bak": "bak\n",
        "x.reprokit-12-deadbeef.pdf": "pdf\n",
        ".cap.reprokit-999999-deadbeef.partial/f": "shape, but no lock of ours\n",
        ".x.reprokit-999998-deadbeef.tmp": "shape, and a lock that is not ours\n",
        "..x.reprokit-999998-deadbeef.tmp.lock": "my own lock file\n",
        ".thing.lock": "not reprokit's\n",
    }
    for rel, text in user.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text)
    t = locks.make_temp(tmp_path, ".cap", "partial", is_dir=True)
    os.close(t.lock.fd)  # as a SIGKILL leaves it: the flock gone, the marked lock file there
    assert locks.is_ours(t.path.name) and not locks.is_ours("paper-reprokit-12-deadbeef.md")
    removed = locks.sweep(tmp_path)
    assert removed == [t.path] and not t.path.exists() and not t.lock.path.exists()
    for rel, text in user.items():
        assert (tmp_path / rel).read_text() == text, rel


def test_a_lock_name_the_user_holds_is_refused_and_left_as_it_is(tmp_path):
    mine = tmp_path / ".cap.lock"
    mine.write_text("my lock notes\n")
    with pytest.raises(OutputExists, match="is not a reprokit lock file"):
        locks.acquire(tmp_path / "cap")
    assert mine.read_text() == "my lock notes\n"
    mine.unlink()
    mine.symlink_to(tmp_path / "elsewhere")
    with pytest.raises(OutputExists):
        locks.acquire(tmp_path / "cap")
    assert not (tmp_path / "elsewhere").exists()
    mine.unlink()
    with locks.hold(tmp_path / "cap"):
        assert mine.read_text().startswith("reprokit-lock pid=")
    assert not mine.exists()


def test_a_lock_left_by_a_killed_reprokit_is_taken_over(tmp_path):
    lock = locks.acquire(tmp_path / "cap", "capture")
    os.close(lock.fd)  # killed: the file stays, marked
    with locks.hold(tmp_path / "cap", "capture") as again:
        assert again.path == lock.path


def test_markers_name_a_kind(tmp_path):
    assert not locks.marked(tmp_path, "capture")
    locks.mark(tmp_path, "capture")
    assert locks.marked(tmp_path, "capture") and not locks.marked(tmp_path, "sweep-work")
    (tmp_path / locks.MARKER).write_text('{"kind": "capture"}')  # not made by reprokit
    assert not locks.marked(tmp_path, "capture")


@pytest.mark.parametrize("raw", ["", ".", "/", "HOME", "..", "PARENT"])
def test_folders_that_hold_more_than_an_output_are_refused(tmp_path, monkeypatch, raw):
    cwd = tmp_path / "home" / "work"
    cwd.mkdir(parents=True)
    monkeypatch.chdir(cwd)
    home = str(tmp_path / "home")
    path = {"HOME": home, "PARENT": str(tmp_path)}.get(raw, raw)
    with pytest.raises(OutputExists, match="refused as the capture folder"):
        locks.check_replaceable_path(Path(path) if raw else path, "capture", home)
    locks.check_replaceable_path(cwd / "cap", "capture", home)  # a folder of its own is fine


def test_temp_kinds_are_the_ones_sweep_knows():
    with pytest.raises(ValueError):
        locks.temp_name("x", "md")
