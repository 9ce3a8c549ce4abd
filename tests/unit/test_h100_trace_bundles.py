"""The H100 trace bundles of bundles/examples/ (made on the lab H100 with `--share --tensors none`;
docs/trace.md says how): they verify, and hold what the GPU showed.

- h100-trace-triton-3.6.0.tgz: `reprokit trace` of tests/data/trace/tma_matmul_attention.py
  under the H100's own triton 3.6.0 / torch 2.11 (real launches: an autotuned persistent matmul
  through device-side descriptors at M = 4096 and 2048, an attention forward through host
  TensorDescriptors);
- h100-trace-triton-3.6.0-replay.tgz: `reprokit replay` of it there (`--executor local`): every
  case launched from seeded inputs, checked for determinism and timed;
- h100-trace-triton-3.6.0-replay-2.tgz: the replay replayed, which judges the first replay's
  outputs and times;
- h100-trace-triton-3.0.0.tgz: `reprokit trace` of tests/data/trace/experimental_tma_persistent.py
  under a carried Triton 3.0.0 wheel (experimental descriptors filled by the CUDA driver: a GPU only).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle, verify
from reprokit.run.replay import request

EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples"
NAMES = {"trace": "h100-trace-triton-3.6.0.tgz", "replay": "h100-trace-triton-3.6.0-replay.tgz",
         "replay2": "h100-trace-triton-3.6.0-replay-2.tgz", "trace30": "h100-trace-triton-3.0.0.tgz"}
MATMUL = "matmul_kernel_descriptor_persistent"
CASES_36 = [f"{MATMUL}.1", f"{MATMUL}.2", "k_attn_fwd.1"]


@pytest.fixture(scope="module")
def bundles() -> dict:
    out = {}
    for key, name in NAMES.items():
        path = EXAMPLES / name
        assert path.stat().st_size < 256 * 1024, name  # small enough to keep in the repository
        assert verify(path) == [], name
        out[key] = open_bundle(path)
    return out


def _trace_json(b) -> dict:
    return json.loads(b.read_text("trace/trace.json"))


def test_the_36_trace_ran_on_the_gpu_and_captured_each_specialisation_with_tma(bundles):
    b = bundles["trace"]
    summary = _trace_json(b)
    assert (summary["triton"], summary["torch"], summary["interpreter"], summary["exit_code"]) == \
        ("3.6.0", "2.11.0", False, 0)
    assert summary["tensors"] == "none" and summary["missed"] == []
    assert b.manifest["share"]["applied"] is True
    # two shapes (M = 4096, 2048) tune apart but specialise alike: two configs and the attention
    assert summary["cases"] == CASES_36 and [c["id"] for c in b.results["cases"]] == CASES_36
    for c in b.results["cases"]:
        assert (c["status"], c["verdict"]) == ("ok", "tma"), c["id"]
        assert c["tma"]["sass"] > 0 and c["tma"]["sass"] == c["tma"]["ptx"], c["id"]
        assert "UTMALDG" in b.read_text(c["artifacts"]["sass"]), c["id"]
    tuned = [a for a in summary["autotune"] if a["kernel"] == MATMUL]
    # on the GPU the autotuner itself timed the configs and chose
    assert [a["chosen_by"] for a in tuned] == ["autotuner", "autotuner"] and len(tuned[0]["configs"]) == 2
    assert tuned[0]["cases"] == [f"{MATMUL}.1", f"{MATMUL}.2"]
    plan = {c["id"]: c for c in b.plan["cases"]}
    # the program took NUM_SMS from driver.active: the H100's own 132
    assert plan[f"{MATMUL}.1"]["trace"]["spec"]["constexprs"]["NUM_SMS"] == 132
    assert plan[f"{MATMUL}.1"]["call"]["args"]["a_ptr"]["tensor"] == [4096, 4096]
    assert plan[f"{MATMUL}.1"]["trace"]["launches"] >= 2  # both shapes ran the chosen config
    attn = plan["k_attn_fwd.1"]
    assert attn["trace"]["spec"]["signature"]["desc_q"] == "tensordesc<fp16[64, 64]>"
    assert attn["call"]["args"]["desc_q"]["descriptor"]["tensor"] == [4, 16, 1024, 64]


def test_a_trace_bundle_replays_launched_on_a_gpu_while_a_compile_only_run_does_not(bundles):
    assert request(bundles["trace"]).mode == "auto"
    assert request(open_bundle(EXAMPLES / "triton-3.0-cu129-h100.tgz")).mode == "compile-only"
    assert request(bundles["replay"]).mode == "auto"


def test_the_replay_launched_every_case_deterministically_and_timed_it(bundles):
    trace, r = bundles["trace"], bundles["replay"]
    assert r.manifest["parent"] == trace.sha256 and r.results["mode"] == "gpu"
    assert r.env["gpu"]["devices"][0]["name"] == "NVIDIA H100 80GB HBM3"
    assert r.env["gpu"]["devices"][0]["uuid"] == "<gpu-uuid>"
    recorded = {c["id"]: c for c in trace.results["cases"]}
    assert [c["id"] for c in r.results["cases"]] == CASES_36
    for c in r.results["cases"]:
        gpu = c["gpu"]
        assert gpu["status"] == "ok" and gpu["jit_cubin"]["same_as_compiled"] is True, c["id"]
        assert gpu["determinism"] == {"deterministic": True, "distinct": 1, "runs": 3}, c["id"]
        assert c["tma"] == recorded[c["id"]]["tma"], c["id"]
        for out in gpu["outputs"].values():
            assert out["nan"] == 0 and out["absmax"] > 0, c["id"]
        kernel = gpu["bench"][0]["kernel"]
        assert kernel["median_ms"] > 0 and kernel["clock"]["discarded"] == 0, c["id"]
    cases = {c["id"]: c for c in r.results["cases"]}
    # both configs of the matmul compute the same C, to the bit, from the same seeded inputs
    c1, c2 = (cases[f"{MATMUL}.{k}"]["gpu"]["outputs"]["c_ptr"] for k in (1, 2))
    assert c1["shape"] == [4096, 4096] and c1["sha256"] == c2["sha256"]
    assert cases["k_attn_fwd.1"]["gpu"]["outputs"]["desc_o"]["shape"] == [4, 16, 1024, 64]
    # the autotuner's pick is the faster config on the H100 too
    ms = {k: cases[f"{MATMUL}.{k}"]["gpu"]["bench"][0]["kernel"]["median_ms"] for k in (1, 2)}
    assert ms[1] < ms[2]


def test_the_replay_of_the_replay_gives_the_same_outputs_and_times(bundles):
    r1, r2 = bundles["replay"], bundles["replay2"]
    assert r2.manifest["parent"] == r1.sha256
    first = {c["id"]: c["gpu"] for c in r1.results["cases"]}
    for c in r2.results["cases"]:
        before = first[c["id"]]
        assert {n: o["sha256"] for n, o in c["gpu"]["outputs"].items()} == \
            {n: o["sha256"] for n, o in before["outputs"].items()}, c["id"]
        t1, t2 = before["bench"][0]["kernel"]["median_ms"], c["gpu"]["bench"][0]["kernel"]["median_ms"]
        assert abs(t2 / t1 - 1) < 0.05, (c["id"], t1, t2)


def test_the_30_trace_ran_experimental_descriptors_on_the_gpu(bundles):
    b = bundles["trace30"]
    summary = _trace_json(b)
    assert (summary["triton"], summary["torch"], summary["interpreter"], summary["exit_code"]) == \
        ("3.0.0", "2.11.0", False, 0)
    assert b.results["triton"] == "3.0.0"
    assert [c["id"] for c in b.results["cases"]] == ["matmul_kernel_tma_persistent.1", "tma_copy.1"]
    for c in b.results["cases"]:
        assert (c["status"], c["verdict"]) == ("ok", "tma"), c["id"]
        ttir = b.read_text(c["artifacts"]["ttir"])
        assert "tt.experimental_descriptor_load" in ttir and "tt.experimental_descriptor_store" in ttir, c["id"]
        assert "UTMALDG" in b.read_text(c["artifacts"]["sass"]), c["id"]
    spec = {c["id"]: c for c in b.plan["cases"]}["matmul_kernel_tma_persistent.1"]["trace"]["spec"]
    # the host-filled CUtensorMaps are 128-byte int8 tensors: the kernel takes their addresses
    assert spec["signature"]["a_desc_ptr"] == "*i8" and spec["constexprs"]["NUM_SMS"] == 132
