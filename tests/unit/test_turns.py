"""Rounds in turn across stacks (reprokit.harness.turns), between real processes: each side is
its own Python process taking its cases' rounds under the shared GPU lock file, as two stacks'
harnesses do on one GPU; the log they append to says in which order the rounds ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprokit.harness import turns

ROOT = Path(__file__).resolve().parents[2]

# A side: for each case, for each benchmark it runs, `rounds` rounds inside the GPU lock, each
# appending one line to the log while it holds the GPU; then the case's end, as the runner writes it.
SIDE = r"""
import json, os, sys, time
from reprokit.harness import turns
spec = json.loads(sys.argv[1])
turns.STALL_S = spec.get("stall_s", turns.STALL_S)
turns.start_side([c["id"] for c in spec["cases"]])
for c in spec["cases"]:
    time.sleep(c.get("late_s", 0))
    t = turns.Turns.of(c["id"], c.get("timeout_s", 300))
    with turns.GpuLock():
        for b in c["benches"]:
            for r in range(spec.get("rounds", 3)):
                with t.round(b, r, spec.get("rounds", 3)) as turn:
                    with open(spec["log"], "a") as f:
                        f.write(json.dumps([spec["side"], c["id"], b, r, turn.waited]) + "\n")
                    time.sleep(0.01)
    with open(spec["log"] + ".records", "a") as f:
        f.write(json.dumps([spec["side"], c["id"], {b: t.record(b) for b in c["benches"]}]) + "\n")
    turns.end_case(c["id"])
if not spec.get("die"):
    folder, side, _ = turns.seat()
    turns.end_side(folder, side)
"""


def _sides(tmp_path: Path, specs: list[dict], timeout: float = 60) -> tuple[list, dict]:
    folder = tmp_path / "turns"
    folder.mkdir()
    log = tmp_path / "log"
    procs = []
    for i, spec in enumerate(specs):
        env = {**os.environ, "PYTHONPATH": str(ROOT), turns.ENV_FOLDER: str(folder), turns.ENV_SIDE: str(i),
               turns.ENV_SIDES: str(len(specs)), "REPROKIT_GPU_LOCK": str(folder / "gpu.lock")}
        procs.append(subprocess.Popen([sys.executable, "-c", SIDE, json.dumps({**spec, "side": i, "log": str(log)})],
                                      env=env))
    for p in procs:
        assert p.wait(timeout=timeout) == 0
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    records = {}
    for side, cid, rec in (json.loads(x) for x in Path(f"{log}.records").read_text().splitlines()):
        records[(side, cid)] = rec
    return lines, records


def _order(lines: list, cid: str) -> list:
    return [(side, b, r) for side, c, b, r, _ in lines if c == cid]


def test_two_sides_take_each_round_in_turn(tmp_path):
    cases = [{"id": "copy.p0", "benches": [0, 1]}, {"id": "gemm.a", "benches": [0]}]
    # the second side starts late: the first waits for it (without the GPU) rather than running ahead
    lines, records = _sides(tmp_path, [{"cases": cases}, {"cases": [{**c, "late_s": 0.3} for c in cases]}])
    assert _order(lines, "copy.p0") == [(side, b, r) for b in (0, 1) for r in range(3) for side in (0, 1)]
    assert _order(lines, "gemm.a") == [(side, 0, r) for r in range(3) for side in (0, 1)]
    for side in (0, 1):
        assert records[(side, "copy.p0")]["0"]["alone"] is None and records[(side, "copy.p0")]["1"]["sides"] == 2
    # the records alone tell the order each benchmark's rounds ran in (one clock for every process of the host)
    for b in ("0", "1"):
        began = sorted((t, side, r) for side in (0, 1) for r, t in records[(side, "copy.p0")][b]["began"])
        assert [(side, r) for _, side, r in began] == [(side, r) for r in range(3) for side in (0, 1)]
    # the first side waited for the late one (round 1 of its first benchmark) without the GPU
    assert records[(0, "copy.p0")]["0"]["waits"] >= 1 and records[(0, "copy.p0")]["0"]["waited_s"] > 0.1


def test_three_sides_go_a_b_c(tmp_path):
    cases = [{"id": "k", "benches": [0]}]
    lines, _ = _sides(tmp_path, [{"cases": cases}, {"cases": cases}, {"cases": cases}])
    assert _order(lines, "k") == [(side, 0, r) for r in range(3) for side in (0, 1, 2)]


def test_a_benchmark_one_side_skips_does_not_hold_the_other(tmp_path):
    # the second side's first size could not launch (a launch error): it goes on to the next
    a = [{"id": "k", "benches": [0, 1]}]
    b = [{"id": "k", "benches": [1]}]
    lines, records = _sides(tmp_path, [{"cases": a}, {"cases": b}])
    assert _order(lines, "k")[-6:] == [(side, 1, r) for r in range(3) for side in (0, 1)]
    assert records[(0, "k")]["0"]["alone"] is None


def test_a_case_the_other_side_does_not_run_is_not_waited_for(tmp_path):
    lines, records = _sides(tmp_path, [{"cases": [{"id": "only.here", "benches": [0]}, {"id": "k", "benches": [0]}]},
                                       {"cases": [{"id": "k", "benches": [0]}]}])
    assert [r for side, c, _, r, _ in lines if c == "only.here"] == [0, 1, 2]
    assert records[(0, "only.here")]["0"]["waits"] == 0
    assert _order(lines, "k") == [(side, 0, r) for r in range(3) for side in (0, 1)]


def test_a_side_whose_case_ended_early_is_not_waited_for(tmp_path):
    # the other side's case crashed before its rounds: its end is written, the rounds go on
    lines, records = _sides(tmp_path, [{"cases": [{"id": "k", "benches": [0]}]},
                                       {"cases": [{"id": "k", "benches": []}]}])
    assert _order(lines, "k") == [(0, 0, r) for r in range(3)]
    assert records[(0, "k")]["0"]["alone"] is None


def test_a_side_that_stalls_is_given_up_and_the_benchmark_says_so(tmp_path):
    # the other side is stuck inside its case (never ends it): after STALL_S, alone
    t0 = time.monotonic()
    lines, records = _sides(tmp_path, [{"cases": [{"id": "k", "benches": [0]}], "stall_s": 0.5},
                                       {"cases": [{"id": "k", "benches": [], "late_s": 3}], "die": True}])
    assert _order(lines, "k") == [(0, 0, r) for r in range(3)]
    assert "no other side moved" in records[(0, "k")]["0"]["alone"]
    assert time.monotonic() - t0 < 10


def test_no_seat_no_turns(monkeypatch, tmp_path):
    monkeypatch.delenv(turns.ENV_FOLDER, raising=False)
    assert turns.seat() is None and turns.Turns.of("k", 300) is None
    monkeypatch.setenv(turns.ENV_FOLDER, str(tmp_path))
    monkeypatch.setenv(turns.ENV_SIDE, "2")
    monkeypatch.setenv(turns.ENV_SIDES, "2")
    assert turns.seat() is None  # a side outside the count is no seat


@pytest.mark.parametrize("budget", [0.4])
def test_a_case_waits_at_most_half_its_timeout(tmp_path, budget):
    lines, records = _sides(tmp_path, [{"cases": [{"id": "k", "benches": [0], "timeout_s": 2 * budget}]},
                                       {"cases": [{"id": "k", "benches": [0], "late_s": 3}], "die": True}])
    assert "half the case's timeout" in records[(0, "k")]["0"]["alone"]


LOCKER = r"""
import fcntl, os, sys, time
from reprokit.harness import turns
path, name, first, hold, log = sys.argv[1], sys.argv[2], sys.argv[3] == "1", float(sys.argv[4]), sys.argv[5]
fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
turns.take_gpu(fd, path, first=first)
with open(log, "a") as f:
    f.write(name + "\n")
time.sleep(hold)
os.close(fd)
"""


def test_a_case_that_asks_to_go_first_takes_the_gpu_before_those_already_waiting(tmp_path):
    lock, log = tmp_path / "gpu.lock", tmp_path / "log"

    def start(name, first=False, hold=0.05):
        return subprocess.Popen([sys.executable, "-c", LOCKER, str(lock), name, "1" if first else "0", str(hold), str(log)],
                                env={**os.environ, "PYTHONPATH": str(ROOT)})

    holder = start("holder", hold=1.0)
    time.sleep(0.3)
    waiting = [start(f"bench{i}") for i in range(4)]
    time.sleep(0.3)  # the benchmarks wait; then the Inductor case asks to go first
    inductor = start("inductor", first=True)
    for p in (holder, *waiting, inductor):
        assert p.wait(timeout=30) == 0
    order = log.read_text().split()
    assert order[:2] == ["holder", "inductor"] and sorted(order[2:]) == [f"bench{i}" for i in range(4)]
    assert os.listdir(f"{lock}.first") == []  # its request is taken away once served


def test_a_request_to_go_first_left_by_a_killed_process_holds_no_one(tmp_path):
    lock, log = tmp_path / "gpu.lock", tmp_path / "log"
    # a case asked to go first, then was killed while it waited (SIGKILL: no cleanup of its file)
    holder = subprocess.Popen([sys.executable, "-c", LOCKER, str(lock), "holder", "0", "30", str(log)],
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(0.5)
    killed = subprocess.Popen([sys.executable, "-c", LOCKER, str(lock), "killed", "1", "0", str(log)],
                              env={**os.environ, "PYTHONPATH": str(ROOT)})
    deadline = time.monotonic() + 10
    while not (os.path.isdir(f"{lock}.first") and os.listdir(f"{lock}.first")) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert turns._first_in_line(str(lock))  # held by a live process: others stand back
    killed.kill()
    killed.wait()
    holder.kill()
    holder.wait()
    assert len(os.listdir(f"{lock}.first")) == 1  # its file stays behind
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        t0 = time.monotonic()
        turns.take_gpu(fd, str(lock))
        assert time.monotonic() - t0 < 1
    finally:
        os.close(fd)
    assert os.listdir(f"{lock}.first") == []  # and is taken away by the next to look
