"""The subprocess helper: timeouts and interrupts take the whole process group down."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from reprokit import proc

# A parent that starts a grandchild which would outlive it, then hangs.
SPAWNER = ("import subprocess, sys, time; "
           "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
           "print(p.pid, flush=True); sys.stderr.write('started\\n'); time.sleep(60)")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose.
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split()[2] != "Z"


def test_timeout_kills_the_group_and_keeps_stderr(tmp_path):
    t0 = time.monotonic()
    r = proc.run([sys.executable, "-c", SPAWNER], timeout=1.5, log_path=tmp_path / "err.log")
    assert r.timed_out and not r.ok and time.monotonic() - t0 < 10
    grandchild = int(r.stdout.split()[0])
    time.sleep(0.2)
    assert not _alive(grandchild)
    assert r.stderr_tail == "started" and (tmp_path / "err.log").read_text() == "started\n"


def test_interrupt_kills_the_group_and_propagates(tmp_path):
    main = threading.main_thread()
    pids = []
    pidfile = tmp_path / "pids"
    # The spawner names its own pid and its grandchild's, so the check looks at these two alone.
    spawner = (f"import os, subprocess, sys, time; "
               f"p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
               f"open({str(pidfile)!r}, 'w').write(f'{{os.getpid()}} {{p.pid}}'); time.sleep(60)")

    def interrupt():
        deadline = time.monotonic() + 20
        while not (pidfile.exists() and pidfile.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        signal.pthread_kill(main.ident, signal.SIGINT)

    # Python's own Ctrl-C handler, and SIGINT let through, whatever this process inherited or an
    # earlier test left: an ignored or blocked SIGINT never becomes a KeyboardInterrupt.
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    mask = signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    try:
        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            r = proc.run([sys.executable, "-c", spawner])
            pids.append(r)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        signal.signal(signal.SIGINT, inherited)
    assert not pids
    started = [int(x) for x in pidfile.read_text().split()]
    assert len(started) == 2
    time.sleep(0.2)
    assert [pid for pid in started if _alive(pid)] == []


def test_ok_and_exit_code():
    r = proc.run([sys.executable, "-c", "import sys; print('hi'); sys.exit(3)"])
    assert r.returncode == 3 and r.stdout == "hi\n" and not r.ok and not r.timed_out


def test_a_killed_reprokit_takes_its_commands_session_with_it(tmp_path):
    """SIGKILL gives no clean-up a chance: the lifeline watcher must kill what the command started,
    even a grandchild that moved to a process group of its own (as the harness's cases do)."""
    pids = tmp_path / "pids"
    grand = ("import os, subprocess, sys, time; "
             "p = subprocess.Popen([sys.executable, '-c', 'import os, time; os.setpgid(0, 0); time.sleep(60)']); "
             f"open({str(pids)!r}, 'w').write(str(p.pid)); time.sleep(60)")
    host = ("import sys; from reprokit import proc; "
            f"proc.run([sys.executable, '-c', {grand!r}])")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.Popen([sys.executable, "-c", host], env={**os.environ, "PYTHONPATH": root})
    for _ in range(200):
        if pids.exists() and pids.read_text():
            break
        time.sleep(0.05)
    grandchild = int(pids.read_text())
    assert _alive(grandchild)
    p.send_signal(signal.SIGKILL)
    p.wait()
    for _ in range(100):
        if not _alive(grandchild):
            break
        time.sleep(0.05)
    assert not _alive(grandchild)


def test_a_program_that_cannot_run_is_one_line_exit_5(tmp_path):
    from reprokit.errors import FileSystemError

    script = tmp_path / "tool"
    script.write_text("#!/bin/sh\necho hi\n")
    script.chmod(0o644)  # not executable, even by root
    for program, why in ((script, "Permission denied"), (tmp_path / "missing-tool", "No such file or directory")):
        with pytest.raises(FileSystemError) as e:
            proc.run([str(program)], timeout=10)
        assert e.value.exit_code == 5 and str(e.value) == f"{program}: cannot run: {why}"


def test_a_session_takes_down_what_its_command_left_running():
    """proc.session (a traced program's way of running): when the block ends, the command's
    children go too, and its output could be read as it ran."""
    with proc.session([sys.executable, "-c", SPAWNER], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                      text=True) as p:
        grandchild = int(p.stdout.readline().split()[0])
        assert p.stderr.readline() == "started\n"
        assert _alive(p.pid) and _alive(grandchild)
    assert not _alive(p.pid) and not _alive(grandchild)


def test_a_killed_reprokit_takes_a_session_with_it(tmp_path):
    """SIGKILL of the process holding a proc.session: the lifeline kills the command's session."""
    pids = tmp_path / "pids"
    cmd = ("import os, subprocess, sys, time; "
           "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
           f"open({str(pids)!r}, 'w').write(f'{{os.getpid()}} {{p.pid}}'); time.sleep(60)")
    host = ("import sys; from reprokit import proc\n"
            f"with proc.session([sys.executable, '-c', {cmd!r}]) as p:\n    p.wait()")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    p = subprocess.Popen([sys.executable, "-c", host], env={**os.environ, "PYTHONPATH": root})
    for _ in range(200):
        if pids.exists() and len(pids.read_text().split()) == 2:
            break
        time.sleep(0.05)
    started = [int(x) for x in pids.read_text().split()]
    assert all(_alive(pid) for pid in started)
    p.send_signal(signal.SIGKILL)
    p.wait()
    for _ in range(100):
        if not any(_alive(pid) for pid in started):
            break
        time.sleep(0.05)
    assert [pid for pid in started if _alive(pid)] == []


# Loads, says it is ready, then waits for one line on stdin and answers on stderr; a grandchild
# it started would outlive it.
WAITER = ("import subprocess, sys, time; "
          "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'], stderr=subprocess.DEVNULL); "
          "open(sys.argv[1], 'w').write(str(p.pid)); "
          "line = sys.stdin.readline(); sys.stderr.write('told ' + (line.strip() or 'nothing') + '\\n')")


def _wait_for(path, seconds=10.0) -> int:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"{path} never written")


def test_a_started_process_is_told_its_run_on_stdin_and_finished_like_run(tmp_path):
    started = proc.start([sys.executable, "-c", WAITER, str(tmp_path / "pid")], capture_stdout=False, stdin=True)
    grandchild = _wait_for(tmp_path / "pid")
    r = started.finish("go\n", timeout=30, log_path=tmp_path / "err.log")
    assert r.ok and r.stderr_tail == "told go" and (tmp_path / "err.log").read_text() == "told go\n"
    time.sleep(0.2)
    assert not _alive(grandchild)  # what it left running went with it, as with run()


def test_a_started_process_called_off_leaves_nothing_running(tmp_path):
    started = proc.start([sys.executable, "-c", WAITER, str(tmp_path / "pid")], capture_stdout=False, stdin=True)
    grandchild = _wait_for(tmp_path / "pid")
    started.cancel()
    time.sleep(0.2)
    assert not _alive(started.proc.pid) and not _alive(grandchild)
    assert started.proc.returncode is not None
