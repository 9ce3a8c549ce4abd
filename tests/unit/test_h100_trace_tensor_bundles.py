"""The H100 trace with kept tensors and its GPU replays (bundles/examples/, made on the lab H100
with `--share`; docs/trace.md says how): they verify, and hold what the GPU showed.

- h100-trace-tensors-triton-3.6.0.tgz: `reprokit trace --tensors small` of
  tests/data/trace/tma_matmul_attention.py --tiny under the H100's triton 3.6.0 / torch 2.11;
- h100-trace-tensors-triton-3.6.0-replay.tgz: `reprokit replay` of it there: every case launched
  from the recorded tensors, its outputs checked against the recorded outputs, timed;
- h100-trace-tensors-triton-3.6.0-replay-2.tgz: the replay replayed (from the tensors the first
  replay carried), judged against the first replay's outputs and times.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle, verify
from reprokit.compare.grid import compare
from reprokit.compare.sources import ResultSet

EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples"
NAMES = {"trace": "h100-trace-tensors-triton-3.6.0.tgz", "replay": "h100-trace-tensors-triton-3.6.0-replay.tgz",
         "replay2": "h100-trace-tensors-triton-3.6.0-replay-2.tgz"}
MATMUL = "matmul_kernel_descriptor_persistent"
CASES = [f"{MATMUL}.1", f"{MATMUL}.2", "k_attn_fwd.1"]
OUTPUT = {f"{MATMUL}.1": "c_ptr", f"{MATMUL}.2": "c_ptr", "k_attn_fwd.1": "desc_o"}
TENSORS = [f"trace/tensors/{n:04d}.{w}.pt" for n in (1, 2, 3) for w in ("inputs", "outputs")]


@pytest.fixture(scope="module")
def bundles() -> dict:
    out = {}
    for key, name in NAMES.items():
        path = EXAMPLES / name
        assert path.stat().st_size < 1024 * 1024, name  # small enough to keep in the repository
        assert verify(path) == [], name
        out[key] = open_bundle(path)
    return out


def test_the_trace_kept_each_specialisations_tensors_on_the_gpu(bundles):
    b = bundles["trace"]
    summary = json.loads(b.read_text("trace/trace.json"))
    assert (summary["triton"], summary["interpreter"], summary["exit_code"], summary["tensors"]) == \
        ("3.6.0", False, 0, "small")
    assert summary["cases"] == CASES and summary["tensor_files"] == TENSORS
    assert all(rel in b.data for rel in TENSORS)
    assert b.manifest["share"]["applied"] is True


def test_the_replay_launched_from_the_recorded_tensors_and_matched_the_recorded_outputs(bundles):
    for key in ("replay", "replay2"):
        b = bundles[key]
        assert all(rel in b.data for rel in TENSORS), key  # a GPU replay carries the tensors on
        cases = {c["id"]: c for c in b.results["cases"]}
        assert sorted(cases) == sorted(CASES)
        for cid, c in cases.items():
            g = c["gpu"]
            assert g["status"] == "ok" and g["device"].startswith("NVIDIA H100"), (key, cid)
            assert g["inputs"]["source"] == "recorded" and set(g["inputs"]["tensors"].values()) == {"recorded"}
            assert list(g["outputs"]) == [OUTPUT[cid]], (key, cid)
            out = g["outputs"][OUTPUT[cid]]
            # the replay gave the traced program's own outputs, to the bit
            assert out["reference"]["match"] == "exact" and out["reference"]["sha256"] == out["sha256"]
            assert len(out["probe"]) == 64 and out["nan"] == 0
            assert g["determinism"] == {"runs": 3, "distinct": 1, "deterministic": True}
            assert g["jit_cubin"]["same_as_compiled"] is True
            k = g["bench"][0]["kernel"]
            assert k["headline"] == "profiler" and k["median_ms"] > 0


def test_the_two_replays_agree_bit_for_bit(bundles):
    r1 = {c["id"]: c["gpu"]["outputs"] for c in bundles["replay"].results["cases"]}
    r2 = {c["id"]: c["gpu"]["outputs"] for c in bundles["replay2"].results["cases"]}
    assert {k: {n: o["sha256"] for n, o in v.items()} for k, v in r1.items()} == \
        {k: {n: o["sha256"] for n, o in v.items()} for k, v in r2.items()}
    # both matmul configs compute the same C from the same recorded A and B
    assert r1[f"{MATMUL}.1"]["c_ptr"]["sha256"] == r1[f"{MATMUL}.2"]["c_ptr"]["sha256"]
    grid = compare([ResultSet.from_bundle(bundles["replay"], role="recorded", key="r1", label="r1"),
                    ResultSet.from_bundle(bundles["replay2"], role="replay", key="r2", label="r2")])
    for row in grid.rows:
        assert "outputs" not in row.cells[1].moved and "gpu_status" not in row.cells[1].moved, row.case


def test_a_trace_without_tensors_replays_from_the_seed_with_probes():
    """h100-trace-triton-3.6.0-replay-3.tgz: the 4096 trace (kept no tensors) replayed on the GPU
    by the replay that records probes. Against the first replay: the matmuls' outputs are the same
    bytes; the attention's inputs are not the same, since the seed now fills arguments in the
    kernel's parameter order (the first replay filled them in sorted order)."""
    old, new = (open_bundle(EXAMPLES / f"h100-trace-triton-3.6.0-replay{s}.tgz") for s in ("", "-3"))
    assert verify(EXAMPLES / "h100-trace-triton-3.6.0-replay-3.tgz") == []
    assert new.manifest["parent"] == open_bundle(EXAMPLES / "h100-trace-triton-3.6.0.tgz").sha256
    o = {c["id"]: c["gpu"] for c in old.results["cases"]}
    n = {c["id"]: c["gpu"] for c in new.results["cases"]}
    for cid, g in n.items():
        assert g["status"] == "ok" and g["inputs"]["source"] == "seed" and g["inputs"]["file"] is None, cid
        out = g["outputs"][OUTPUT[cid]]
        assert "reference" not in out and len(out["probe"]) == 64 and "probe" not in o[cid]["outputs"][OUTPUT[cid]]
    for cid in (f"{MATMUL}.1", f"{MATMUL}.2"):
        assert n[cid]["outputs"]["c_ptr"]["sha256"] == o[cid]["outputs"]["c_ptr"]["sha256"]
    assert n["k_attn_fwd.1"]["outputs"]["desc_o"]["sha256"] != o["k_attn_fwd.1"]["outputs"]["desc_o"]["sha256"]
    grid = compare([ResultSet.from_bundle(old, role="recorded", key="old", label="old"),
                    ResultSet.from_bundle(new, role="replay", key="new", label="new")])
    moved = {r.case: r.cells[1].moved for r in grid.rows}
    assert moved == {f"{MATMUL}.1": (), f"{MATMUL}.2": (), "k_attn_fwd.1": ("outputs",)}


def test_a_reproducer_checks_against_the_gpu_run_only_when_that_run_used_the_seed(bundles):
    """A reproducer launches from the seed: outputs made from a trace's recorded tensors are no
    reference for it, outputs made from the same seed are."""
    from reprokit.harness.reprolaunch import launch_spec

    for b, recorded in ((bundles["replay"], False), (open_bundle(EXAMPLES / "h100-trace-triton-3.6.0-replay-3.tgz"), True)):
        results = {c["id"]: c for c in b.results["cases"]}
        for case in b.plan["cases"]:
            spec = launch_spec(case, b.plan, results[case["id"]])
            assert (spec["recorded"] is not None) is recorded, case["id"]
