"""The planted 5% slowdown of test_time_labels.py, judged against a recording from another board.

Two leases, two calls (docs/gpu.md, "Across boards: the device commands"):

1. REPROKIT_BOARD_RECORD=$OUT/planted-recording.json: records the plain copy's raw samples on
   this board, with the board's identity (sha256 of its UUID), and the calibrated delay.
2. REPROKIT_BOARD_RECORDING=<that file>, on a newly started lease: refuses to count when the
   board is the recording one (start another lease); else, ten times, measures the plain copy
   (the same-board reference) and the delayed copy interleaved on this board, and
   - the delayed copy against the same-board reference is SLOWER 10 of 10 (today's labels);
   - the recorded plain copy against this board's plain copy is never FASTER or SLOWER: it is
     judged only against the cross-board tolerance (reprokit.compare.boards).
   Every judgement goes to $OUT/planted-cross-board.json.

Without either variable both tests skip: the default GPU tier stays one lease.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("triton")

from reprokit.compare import boards, timing  # noqa: E402
from reprokit.harness import bench, nvml  # noqa: E402
from tests.gpu.test_time_labels import N, _launcher, planted  # noqa: E402,F401 (planted: the fixture)

RECORD = os.environ.get("REPROKIT_BOARD_RECORD")
RECORDING = os.environ.get("REPROKIT_BOARD_RECORDING")
# The recorded copy has no baseline beside it: reprokit.compare.boards judges it by the
# absolute tolerance alone (the "call" kind's).
SIZE: dict = {}


def _board() -> str | None:
    index = nvml.index_for_cuda_device(0)
    return boards.board_identity({"board": nvml.board_records(nvml.snapshot_all(), index)})


def _plain(base) -> dict:
    return bench.compare({"kernel": base}, flush=True)["raw"]["kernel"]


@pytest.mark.skipif(not RECORD, reason="set REPROKIT_BOARD_RECORD=<file> to record the plain copy on this board")
def test_record_the_plain_copy_on_this_board(planted):  # noqa: F811 (the imported fixture)
    base, _, ratio = planted
    board = _board()
    assert board is not None, "NVML gives no UUID: the board cannot be named"
    doc = {"board": board, "planted_ratio": ratio, "n": N, "raw": [_plain(base) for _ in range(3)]}
    Path(RECORD).parent.mkdir(parents=True, exist_ok=True)
    Path(RECORD).write_text(json.dumps(doc) + "\n")
    print("RECORDED on board", board[:12], "planted", f"{ratio:.4f}x")


@pytest.mark.skipif(not RECORDING, reason="set REPROKIT_BOARD_RECORDING=<file> recorded on another board")
def test_the_planted_slowdown_is_slower_on_one_board_and_the_other_board_never_moves(planted):  # noqa: F811
    recording = json.loads(Path(RECORDING).read_text())
    board = _board()
    if board == recording["board"]:
        pytest.skip("this lease has the recording's board: it counts only on another board; start another lease")
    base, slow, ratio = planted
    same, across = [], []
    for i in range(10):
        res = bench.compare({"plain": base, "slow": slow}, flush=True)["raw"]  # interleaved on this board
        same.append(timing.judge_raw(res["plain"], res["slow"]))
        recorded = recording["raw"][i % len(recording["raw"])]
        across.append(boards.judge_across({"kernel": recorded}, {"kernel": res["plain"]}, SIZE))
    out = os.environ.get("OUT")
    doc = {"board": board, "recording_board": recording["board"], "planted_ratio": ratio,
           "same_board": [j.to_dict() for j in same], "across_boards": [j.to_dict() for j in across]}
    if out:
        Path(out, "planted-cross-board.json").write_text(json.dumps(doc, indent=1) + "\n")
    print("SAME BOARD", [f"{j.label} {j.ratio:.4f}" for j in same])
    print("ACROSS", [f"{j.label} {j.ratio:.4f}" for j in across])
    assert [j.label for j in same] == [timing.SLOWER] * 10
    assert not any(j.moved for j in across)
