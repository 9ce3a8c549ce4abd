"""Executors kept warm (executors.local.Warm): each run's successor harness starts as the run
begins, the next run is handed to it on its stdin, and what no run took is called off at close.
A stand-in interpreter records how each harness was started and told its run; the real harness's
prestart is covered by the trace's tests."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from reprokit.config import Stack
from reprokit.executors.local import LocalExecutor
from reprokit.executors.venv import VenvExecutor
from reprokit.options import HostEnv

FAKE = '''#!{python}
import json, os, sys, time
log = {log!r}
def note(**kw):
    with open(log, "a") as f:
        f.write(json.dumps(dict(pid=os.getpid(), t=time.time(), **kw)) + "\\n")
argv = sys.argv[1:]
if "--prestart" in argv:
    note(how="prestarted")
    line = sys.stdin.readline()
    if not line.strip():
        note(how="called off")
        sys.exit(0)
    told = json.loads(line)
    argv = ["-m", "reprokit.harness"] + told["argv"]
    note(how="told", argv=argv, env=told.get("env"))
else:
    note(how="direct", argv=argv)
out = argv[argv.index("--out") + 1]
os.makedirs(out, exist_ok=True)
with open(os.path.join(out, "ran.txt"), "w") as f:
    f.write(str(os.getpid()))
'''


def _fake(tmp: Path) -> tuple[str, Path]:
    log = tmp / "log.jsonl"
    path = tmp / "bin" / "python"
    path.parent.mkdir()
    path.write_text(FAKE.format(python=sys.executable, log=str(log)))
    path.chmod(0o755)
    return str(path), log


def _notes(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _run(ex, stack, tmp: Path, n: int):
    cap = tmp / f"cap{n}"
    cap.mkdir()
    r = ex.run_harness(stack, cap, workers=1, timeout_s=30, gpu=False, scratch=tmp)
    assert r.ok, r.log_tail
    return int((cap / "ran.txt").read_text())


def _wait_prestarted(log: Path, count: int) -> None:
    end = time.monotonic() + 10
    while sum(n["how"] == "prestarted" for n in _notes(log)) < count and time.monotonic() < end:
        time.sleep(0.02)


def test_a_warm_local_executor_hands_each_run_to_a_harness_started_beside_the_one_before(tmp_path):
    python, log = _fake(tmp_path)
    stack = Stack(name="local", triton="0", torch=None)
    with LocalExecutor(python, host=HostEnv(environ={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})) as ex:
        first = _run(ex, stack, tmp_path, 1)          # not warm yet: started for its run
        ex.keep_warm(90)
        asked_second = time.time()
        second = _run(ex, stack, tmp_path, 2)         # none waiting yet: started for its run, the next one begun
        _wait_prestarted(log, 1)
        asked_third = time.time()
        third = _run(ex, stack, tmp_path, 3)          # the one begun beside the second
        ex.keep_warm(None)
        fourth = _run(ex, stack, tmp_path, 4)         # the one begun beside the third; none begun now
        leftover = [n["pid"] for n in _notes(log) if n["how"] == "prestarted"]
    notes = _notes(log)
    by_pid = {}
    for n in notes:
        by_pid.setdefault(n["pid"], []).append(n["how"])
    assert by_pid[first] == ["direct"] and by_pid[second] == ["direct"]
    assert by_pid[third] == ["prestarted", "told"] and by_pid[fourth] == ["prestarted", "told"]
    told = [n for n in notes if n["how"] == "told"]
    assert told[0]["argv"][-1] == "1" and told[0]["argv"][told[0]["argv"].index("--out") + 1] == str(tmp_path / "cap3")
    assert told[0]["env"] == {"TMPDIR": str(tmp_path)}  # the run's TMPDIR reaches a prestarted harness too
    # the third's harness was started once the second was asked for, before the third was
    started_third = next(n["t"] for n in notes if n["pid"] == third and n["how"] == "prestarted")
    assert asked_second <= started_third < asked_third
    assert set(leftover) == {third, fourth}  # keep_warm(None): nothing left waiting after the fourth
    assert not any(_alive(p) for p in by_pid)


def test_a_warm_harness_no_run_takes_is_called_off_at_close(tmp_path):
    python, log = _fake(tmp_path)
    stack = Stack(name="local", triton="0", torch=None)
    with LocalExecutor(python, host=HostEnv(environ={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})) as ex:
        ex.keep_warm(90)
        _run(ex, stack, tmp_path, 1)
        _wait_prestarted(log, 1)
    waiting = [n["pid"] for n in _notes(log) if n["how"] == "prestarted"]
    assert len(waiting) == 1
    time.sleep(0.2)
    assert not _alive(waiting[0])
    assert "told" not in [n["how"] for n in _notes(log)]
    assert not list(tmp_path.glob("cap2"))  # nothing ran for it


def test_a_warm_venv_executor_keeps_one_harness_per_stack_interpreter(tmp_path, monkeypatch):
    python, log = _fake(tmp_path)
    ex = VenvExecutor(host=HostEnv(environ={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}))
    monkeypatch.setattr(VenvExecutor, "venv_dir", lambda self, stack: Path(python).parent.parent)
    stack = Stack(name="triton-x", triton="0", torch=None)
    with ex:
        ex.keep_warm(90)
        a = _run(ex, stack, tmp_path, 1)
        _wait_prestarted(log, 1)
        b = _run(ex, stack, tmp_path, 2)
    hows = {n["pid"]: n["how"] for n in _notes(log)}
    assert hows[a] == "direct" and hows[b] == "told"
