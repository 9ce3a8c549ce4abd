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
from reprokit.errors import FileSystemError, OutputBusy

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
