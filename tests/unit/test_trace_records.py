"""Merging the records of a traced program's processes (reprokit/trace/program.py): each
process numbers its own specialisations and autotuner calls; the merge numbers them anew, keeps
a specialisation two processes launched once, and sums launches."""

from __future__ import annotations

import json

from reprokit.trace.program import merge, parse


def _spec(n, file, sig, call=None):
    return {"type": "spec", "n": n, "file": file, "kernel": file.split(".")[1], "spec": {"signature": sig},
            "call": {"args": {}}, "autotune": None if call is None else {"kernel": "k", "call": call}}


def test_processes_merge_into_one_numbering():
    parent = [{"type": "start", "since": 1, "triton": "3.6.0"},
              _spec(1, "m.k.py", {"x": "*fp32"}), {"type": "launched", "n": 1},
              _spec(2, "m.t.py", {"y": "i32"}, call=1), {"type": "autotune", "kernel": "t", "call": 1},
              {"type": "end", "launches": {"1": 3, "2": 1}}]
    child = [{"type": "start", "since": 2, "triton": "3.6.0"},
             _spec(1, "m.t.py", {"y": "i64"}, call=1), {"type": "autotune", "kernel": "t", "call": 1},
             _spec(2, "m.k.py", {"x": "*fp32"}), {"type": "launched", "n": 2},
             {"type": "tensors", "n": 2, "when": "inputs", "file": "0002.inputs.pt"},
             {"type": "end", "launches": {"1": 1, "2": 5}}]
    out = merge([parent, child])
    specs = [r for r in out if r["type"] == "spec"]
    assert [(s["n"], s["file"], s["spec"]["signature"]) for s in specs] == [
        (1, "m.k.py", {"x": "*fp32"}), (2, "m.t.py", {"y": "i32"}), (3, "m.t.py", {"y": "i64"})]
    assert [s["autotune"]["call"] for s in specs if s["autotune"]] == [1, 2]
    assert [r["call"] for r in out if r["type"] == "autotune"] == [1, 2]
    assert [r["n"] for r in out if r["type"] == "launched"] == [1, 1]  # the child's k is the parent's
    assert [r["n"] for r in out if r["type"] == "tensors"] == [1]
    assert [r for r in out if r["type"] == "start"] == [parent[0]]
    (end,) = [r for r in out if r["type"] == "end"]
    assert end["launches"] == {"1": 8, "2": 1, "3": 1}


def test_parse_orders_processes_by_start_and_survives_a_cut_line(tmp_path):
    first = [{"type": "start", "since": 10, "triton": "3.6.0"}, _spec(1, "a.k.py", {"x": "*fp16"})]
    second = [{"type": "start", "since": 20, "triton": "3.6.0"}, _spec(1, "a.k.py", {"x": "*fp32"})]
    # file names sort the other way round: the order must come from `since`
    (tmp_path / "records.1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in second) + '{"type": "sp')
    (tmp_path / "records.9.jsonl").write_text("".join(json.dumps(r) + "\n" for r in first))
    run = parse(tmp_path, 0, 1.0, "")
    assert [s["spec"]["signature"]["x"] for s in run.specs] == ["*fp16", "*fp32"]
    assert run.start["since"] == 10
