"""The bundles scripts/gpu/autotune-listener.sh wrote on the H100 with a carried Triton 3.8.0
(tests/gpu/data/autotune/): `reprokit trace` of benchmarks/trace_program.py, whose `scale` is
@triton.autotune'd over two configs at two shapes, and that trace replayed on the GPU by default.
Triton 3.8's autotuning listener named each shape's choice; the trace says who chose, keeps what
the listener heard, and the replay ran the chosen configs only."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.bundle.reader import open_bundle, verify

DATA = Path(__file__).resolve().parents[1] / "gpu" / "data" / "autotune"
LISTENER = "Triton's autotuning listener"


def _open(pattern: str):
    (path,) = DATA.glob(pattern)
    assert verify(path) == []
    return open_bundle(path)


def test_the_listener_named_each_shapes_choice_and_the_trace_says_so():
    b = _open("trace-trace_program-*.tgz")
    trace = json.loads(b.read_text("trace/trace.json"))
    assert trace["triton"] == "3.8.0" and trace["interpreter"] is False
    heard = trace["autotune_listener"]
    assert len(heard) == 2 and {h["kernel"] for h in heard} == {"scale"}
    for h in heard:
        # the autotuner keeps the config of least time; the listener's record must agree with itself
        timings = {json.dumps(cfg, sort_keys=True): t for cfg, t in h["timings"]}
        assert len(timings) == 2 and not h["cache_hit"]
        assert min(timings, key=timings.get) == json.dumps(h["chosen"], sort_keys=True)
    calls = sorted(trace["autotune"], key=lambda a: a["call"])
    by_listener = [a for a in calls if a["chosen_by"] == LISTENER]
    # the first call at each shape timed its configs and was heard; later calls reused that choice
    assert [a["call"] for a in by_listener] == [1, 2]
    assert {a["chosen_by"] for a in calls if a not in by_listener} == {"autotuner"}
    assert [a["chosen"] for a in by_listener] == [h["chosen"] for h in heard]


def test_the_plan_marks_the_heard_choice_and_the_replay_runs_only_it():
    b = _open("trace-trace_program-*.tgz")
    tuned = {c["id"]: c for c in b.plan["cases"] if (c.get("trace") or {}).get("autotune")}
    chosen = {cid for cid, c in tuned.items() if c["trace"]["autotune"]["chosen"]}
    heard = json.loads(b.read_text("trace/trace.json"))["autotune_listener"]
    assert len(tuned) == 4 and len(chosen) == 2
    for cid, c in tuned.items():
        block = c["call"]["args"]["BLOCK"]
        assert (block == heard[0]["chosen"]["kwargs"]["BLOCK"]) == (cid in chosen)
    r = _open("local-h100-*.tgz")
    assert r.manifest["parent"] == b.sha256 and r.plan["mode"] == "gpu"
    ran = {c["id"] for c in r.results["cases"]}
    assert ran == {c["id"] for c in b.plan["cases"]} - (set(tuned) - chosen)
    assert {c["status"] for c in r.results["cases"]} == {"ok"}
    assert r.env["packages"]["triton"]["version"] == "3.8.0"
