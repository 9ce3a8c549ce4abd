"""The comparison grid over real bundles: the two captured on an H100 (Triton 3.0.0 and 3.6.0)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.compare.grid import Column, compare
from reprokit.compare.sources import ResultSet, open_result_set
from reprokit.records import CaseRecord, Results

GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"


def _one(folder: str) -> Path:
    (path,) = sorted((GOLDEN / folder).glob("*.tgz"))
    return path


@pytest.fixture(scope="module")
def v30():
    return open_result_set(_one("h100-triton-3.0.0"), role="recorded")


@pytest.fixture(scope="module")
def v36():
    return open_result_set(_one("h100-triton-3.6.0"))


def test_a_bundle_against_itself_moves_nothing(v30):
    g = compare([v30, v30])
    assert not g.moved
    assert [c.key for c in g.columns] == [v30.key, v30.key + "#2"]
    assert all(not c.moved and not c.ops for r in g.rows for c in r.cells)
    assert g.changes()[0].moved_cases == ()


def test_across_releases_the_grid_says_which_verdicts_moved_and_which_families_left(v30, v36):
    g = compare([v30, v36])
    assert g.moved
    (ch,) = g.changes()
    assert ch.became_unsupported == ("experimental_descriptor",)
    assert set(ch.became_supported) == {"tensor_descriptor", "host_descriptor"}
    assert ("experimental_descriptor.p0", "tma", "unsupported") in ch.verdicts
    assert ("experimental_descriptor.p1", "crashed", "unsupported") in ch.verdicts
    assert not any(case.startswith("block_ptr.") for case, _, _ in ch.verdicts)
    # block-pointer P0: same verdict and the same TTIR/TTGIR once normalised; only LLVM IR down moved
    cell = g.cell("block_ptr.p0", v36.key)
    assert cell.verdict == "no-tma" and "verdict" not in cell.moved
    assert cell.moved == ("ir.llir", "ir.ptx", "ir.sass")
    assert cell.ir_at("ttgir") == g.cell("block_ptr.p0", v30.key).ir_at("ttgir")
    assert {d.level for d in cell.ops} <= {"llir", "ptx", "sass"} and cell.ops
    gone = g.cell("experimental_descriptor.p0", v36.key)
    assert {"status", "verdict", "tma.sass", "ir.ttgir"} <= set(gone.moved)
    assert gone.ops == ()   # no IR on one side: the status says it, not every op "removed"


def test_to_dict_is_plain_json_with_one_cell_per_column(v30, v36):
    g = compare([v30, v36])
    d = json.loads(json.dumps(g.to_dict()))
    assert d["format"] == 1 and d["moved"] is True
    assert [c["role"] for c in d["columns"]] == ["recorded", "bundle"]
    assert d["columns"][0]["triton"] == "3.0.0" and d["columns"][1]["triton"] == "3.6.0"
    row = next(r for r in d["cases"] if r["id"] == "experimental_descriptor.p0")
    assert len(row["cells"]) == 2 and row["cells"][0]["moved"] == []
    assert row["cells"][0]["tma"]["sass"] >= 1 and row["cells"][1]["status"] == "unsupported"
    assert d["changes"][0]["became_unsupported"] == ["experimental_descriptor"]


def test_absent_cases_and_failed_columns(v30, v36):
    from dataclasses import replace

    fewer = replace(v36, key="fewer", results=v36.results.with_cases(v36.cases[:3]))
    g = compare([v30, fewer], failed=[Column.failed("triton-9.9", "9.9", "venv: building failed")])
    last = g.row("host_descriptor.p2")
    assert last.cells[1].present is False and last.cells[1].moved == ("present",)
    assert last.cells[2].present is False and g.failed[0].error == "venv: building failed"
    assert len(g.columns) == 3


def test_capture_folders_compare_like_bundles(tmp_path, v30):
    from reprokit.bundle.reader import extract

    folder = extract(_one("h100-triton-3.0.0"), tmp_path)
    cap = ResultSet.from_capture(folder)
    g = compare([v30, cap])
    assert not g.moved
    assert g.cell("experimental_descriptor.p0", cap.key).ir_at("sass") is not None


def test_gpu_bundles_carry_correctness_launch_status_and_time_ratios():
    examples = GOLDEN.parent / "examples"
    g30 = open_result_set(examples / "h100-gpu-triton-3.0.0.tgz", role="recorded")
    g36 = open_result_set(examples / "h100-gpu-triton-3.6.0.tgz")
    g = compare([g36, g36])
    cell = g.cell("tensor_descriptor.p0", g36.key + "#2")
    assert cell.correct is True and cell.gpu_status == "ok" and cell.time_s > 0 and cell.time_ratio == 1.0
    big = g.cell("tensor_descriptor.gemm-128x128x128-w16-s4", g36.key)
    assert big.gpu_status == "out_of_resources" and big.correct is None and big.fits is False
    bp = compare([g30, g36]).cell("block_ptr.p0", g36.key)
    assert bp.correct is True and bp.time_ratio is not None and 0.5 < bp.time_ratio < 2
    assert "correct" not in bp.moved and "gpu_status" not in bp.moved


def test_a_compile_only_column_does_not_move_gpu_facts():
    from dataclasses import replace

    g36 = open_result_set(GOLDEN.parent / "examples" / "h100-gpu-triton-3.6.0.tgz")
    bare = replace(g36, key="bare", results=Results.from_json({**g36.results.to_json(), "cases": [
        {k: v for k, v in c.to_json().items() if k != "gpu"} for c in g36.cases]}))
    g = compare([g36, bare])
    assert g.cell("block_ptr.p0", g36.key).correct is True and g.cell("block_ptr.p0", "bare").correct is None
    assert not g.moved


def test_an_ir_level_kept_only_as_a_raw_hash_compares_with_raw_hashes_only():
    from reprokit.compare.grid import RAW, Cell, _moved

    def cell(**ir):
        return Cell(present=True, status="ok", verdict="tma", ir=tuple(ir.items()))

    text, raw = cell(ttgir="1111"), cell(ttgir=f"{RAW}aaaa")
    assert _moved(raw, text) == () and _moved(text, raw) == ()       # a condensed point against full IR
    assert _moved(raw, cell(ttgir=f"{RAW}bbbb")) == ("ir.ttgir",)      # two raw hashes that differ
    assert _moved(raw, cell(ttgir=f"{RAW}aaaa")) == ()
    assert _moved(raw, cell(ttgir=None)) == ("ir.ttgir",)             # the level vanished: still moved
    assert _moved(text, cell(ttgir="2222")) == ("ir.ttgir",)


def test_gpu_times_are_compared_by_one_method_both_records_have():
    from reprokit.compare.grid import _cell, _judge

    def record(kernel: dict) -> CaseRecord:
        return CaseRecord.from_json({
            "id": "host_descriptor.p0", "family": "host_descriptor", "control": "P0", "status": "ok",
            "verdict": "tma", "expect": "tma", "met": True, "reason": "", "artifacts": {},
            "gpu": {"status": "ok", "bench": [{"size": {"M": 4096}, "kernel": kernel}]}})

    class NoIR:  # records without IR or raw samples: only their GPU facts matter here
        def normalised(self, case, level):
            return None

        def bench_runs(self, case):
            return []

    rs = NoIR()
    old = _cell(rs, record({"median_ms": 0.0244, "events": {"median_ms": 0.0244}}))  # before the profiler
    new = _cell(rs, record({"headline": "profiler", "median_ms": 0.0209, "profiler": {"median_ms": 0.0209},
                            "events": {"median_ms": 0.0240}}))
    assert old.times == (("events", pytest.approx(24.4e-6)),)
    assert new.time_s == pytest.approx(20.9e-6) and dict(new.times)["events"] == pytest.approx(24.0e-6)
    # old against new: by the events both have, not the new profiler time against old events
    assert _judge(old, new, rs, rs, "host_descriptor.p0").time_ratio == pytest.approx(0.0240 / 0.0244, abs=1e-4)
    faster = _cell(rs, record({"headline": "profiler", "median_ms": 0.0190, "profiler": {"median_ms": 0.0190},
                               "events": {"median_ms": 0.0230}}))
    assert _judge(new, faster, rs, rs, "host_descriptor.p0").time_ratio == pytest.approx(0.0190 / 0.0209, abs=1e-4)
    assert _judge(new, _cell(rs, record({})), rs, rs, "host_descriptor.p0").time_ratio is None


def test_what_moved_is_classed_verdict_then_metric_then_ir():
    from reprokit.compare.grid import change_class

    assert change_class(()) == ""
    assert change_class(("ir.ttgir", "ir.ptx")) == "ir"
    assert change_class(("ir.ptx", "registers")) == "metric"
    assert change_class(("tma.sass",)) == "metric"
    assert change_class(("tma.sass", "verdict")) == "verdict"
    assert change_class(("correct",)) == "verdict" and change_class(("present",)) == "verdict"


def test_a_moved_metric_carries_its_numbers_and_sets_the_exit():
    from reprokit.compare.grid import Cell, Column, Grid, OpDelta, Row, _metric_deltas, moved_summary
    from reprokit.compare.render import cell_text, change_lines

    base = Cell(True, "ok", "tma", "tma", True, (("ptx", 2), ("sass", 2)), shared_bytes=1024, registers=127)
    after = Cell(True, "ok", "tma", "tma", True, (("ptx", 2), ("sass", 3)), shared_bytes=1152, registers=94)
    moved = ("tma.sass", "shared_bytes", "registers", "ir.ptx")
    from dataclasses import replace

    cell = replace(after, moved=moved, metrics=_metric_deltas(base, after, moved),
                   ops=(OpDelta("ptx", "cp.async.bulk.wait_group", 1),))
    assert [m.text() for m in cell.metrics] == ["tma.sass 2 -> 3", "smem 1024 -> 1152", "regs 127 -> 94"]
    text = moved_summary(cell)
    assert text == "tma.sass 2 -> 3, smem 1024 -> 1152, regs 127 -> 94, +1 cp.async.bulk.wait_group (ptx)"
    assert "regs 127 -> 94" in cell_text(cell, baseline=False)
    col = Column("a", "3.4", "bundle", None, None, None, None, None, None, None)
    ir_only = replace(base, moved=("ir.ttgir",))
    grid = Grid((col, replace(col, key="b", label="3.6")), (Row("m.p0", "m", "P0", (base, cell)),
                                                            Row("c.p0", "c", "P0", (base, ir_only))))
    assert grid.significant() and grid.significant(strict=True)
    assert change_lines(grid) == ["3.6: 2 of 2 cases moved (1 metric, 1 IR only)"]
    quiet = Grid(grid.columns, (Row("c.p0", "c", "P0", (base, ir_only)),))
    assert not quiet.significant() and quiet.significant(strict=True)
    assert grid.to_dict()["cases"][0]["cells"][1]["metrics"][2] == {"name": "regs", "before": 127, "after": 94}


def test_a_resource_known_on_one_side_only_is_no_move():
    """A trace's capture seeded with the program's own compile ran no ptxas and has no register
    report; its GPU replay, which compiled, has one. Unknown against known says nothing; two
    known values that differ still move."""
    from reprokit.compare.grid import Cell, _moved

    seeded = Cell(True, "ok", "no-tma", "no-tma", None, (("ptx", 0),))
    compiled = Cell(True, "ok", "no-tma", "no-tma", None, (("ptx", 0),), registers=79, spill_stores=0, spill_loads=0)
    assert _moved(seeded, compiled) == () and _moved(compiled, seeded) == ()
    from dataclasses import replace

    assert _moved(compiled, replace(compiled, registers=80)) == ("registers",)
