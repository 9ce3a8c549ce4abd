"""The committed sweep bundles (bundles/examples/sweeps/): they verify, their answers follow the
schema, and they hold the boundaries docs/findings.md states (established by hand on 3.0, 3.5, 3.9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reprokit.bundle import schemas
from reprokit.bundle.reader import open_bundle

EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples" / "sweeps"


def answers(name: str) -> dict:
    b = open_bundle(EXAMPLES / name)
    a = json.loads(b.read("sweep.json"))
    assert not schemas.problems("sweep.json", a)
    assert b.plan["sweep"]["name"] == a["sweep"] and b.manifest["stack"]["triton"] == a["triton"]
    return a


def axis(a: dict, group: str, name: str) -> dict:
    g = next(g for g in a["groups"] if g["group"] == group)
    return next(x for x in g["axes"] if x["axis"] == name)


@pytest.mark.parametrize("bundle", sorted(p.name for p in EXAMPLES.glob("*.tgz")))
def test_example_sweeps_verify_and_stay_small(bundle):
    answers(bundle)
    assert (EXAMPLES / bundle).stat().st_size < 4_000_000


def test_experimental_descriptor_boxes_of_16_bytes_and_less_abort_triton_3_0():
    a = answers("tma-invariants-triton-3.0-cu129-h100.tgz")
    box = axis(a, "experimental_descriptor", "inner_box_bytes")
    assert box["flips"] == ["4", "8", "16"]
    assert box["boundary"]["below"]["status"] == "crash" and "UNREACHABLE" in box["boundary"]["below"]["error"]
    assert all(c["verdict"] == "tma" for c in box["cells"] if c["label"] not in box["flips"])


@pytest.mark.parametrize("release", ["3.5-cu130", "3.9-cu132"])
def test_device_descriptors_refuse_narrow_boxes_strided_rows_and_rank_6(release):
    a = answers(f"tma-invariants-triton-{release}-h100.tgz")
    assert axis(a, "tensor_descriptor", "inner_box_bytes")["flips"] == ["4", "8"]
    assert axis(a, "tensor_descriptor", "inner_stride")["flips"] == ["2", "runtime"]
    assert axis(a, "tensor_descriptor", "rank")["flips"] == ["6"]
    host_rank = axis(a, "host_descriptor", "rank")["boundary"]["above"]
    assert host_rank["label"] == "6" and host_rank["failing_pass"] == "TritonNvidiaGPUTMALoweringPass"
    for name in ("dtype", "BM", "boundary"):
        assert axis(a, "tensor_descriptor", name)["flips"] == []


def test_block_pointers_never_give_tma_and_are_gone_in_3_9():
    for release in ("3.0-cu129", "3.5-cu130"):
        g = next(g for g in answers(f"tma-invariants-triton-{release}-h100.tgz")["groups"] if g["group"] == "block_ptr")
        assert g["base"]["verdict"] == "no-tma" and all(not x["flips"] for x in g["axes"])
        assert sum(len(x["cells"]) for x in g["axes"]) >= 22
    g = next(g for g in answers("tma-invariants-triton-3.9-cu132-h100.tgz")["groups"] if g["group"] == "block_ptr")
    assert g["base"]["status"] == "unsupported"


@pytest.mark.parametrize("release,group", [
    ("3.3-cu129", "gemm_experimental_descriptor"), ("3.3-cu129", "gemm_tensor_descriptor"),
    ("3.5-cu130", "gemm_tensor_descriptor"), ("3.9-cu132", "gemm_tensor_descriptor"),
])
def test_b200_gemm_configs_do_not_reproduce_the_crash_report(release, group):
    a = answers(f"gemm-configs-triton-{release}-b200.tgz")
    td = next(g for g in a["groups"] if g["group"] == group)
    assert td["points"] == 405 and td["failures"] == [] and td["frontier"]["compiled"] == 405
    (hyp,) = td["hypotheses"]
    assert not hyp["holds"] and hyp["selected"] == 72 and hyp["failing_selected"] == 0
    named = {n["name"]: n for n in td["named"]}
    # On sm_100 the accumulator lives in tensor memory: 128x128x128/16/4 fits where on H100 it does not.
    assert named["aggressive-128x128x128"]["shared_bytes"] == 196632 and named["aggressive-128x128x128"]["fits"]
    assert named["aggressive-256x128x128"]["shared_bytes"] == 294936 and not named["aggressive-256x128x128"]["fits"]
    assert td["frontier"]["too_big"] == 61


@pytest.mark.parametrize("release,group,words", [
    ("3.0-cu129", "gemm_experimental_descriptor", "Register allocation failed"),
    ("3.5-cu130", "gemm_tensor_descriptor", "Insufficient registers"),
    ("3.9-cu132", "gemm_tensor_descriptor", "Insufficient registers"),
])
def test_h100_gemm_configs_fail_in_ptxas_exactly_at_256x256_with_16_warps(release, group, words):
    a = answers(f"gemm-configs-triton-{release}-h100.tgz")
    td = next(g for g in a["groups"] if g["group"] == group)
    (fail,) = td["failures"]
    assert fail["count"] == 15 and words in fail["error"]
    assert fail["rule"]["exact"] and fail["rule"]["rule"] == {"BM": 256, "BN": 256, "num_warps": 16}
    (hyp,) = td["hypotheses"]
    assert not hyp["holds"] and hyp["failing_outside"] == 11
    named = {n["name"]: n for n in td["named"]}
    # The lab H100 refused both at launch with these very byte counts (ARCHITECTURE.md).
    assert named["aggressive-128x128x128"]["shared_bytes"] == 262176 and not named["aggressive-128x128x128"]["fits"]
    assert named["aggressive-256x128x128"]["shared_bytes"] == 393248 and not named["aggressive-256x128x128"]["fits"]
    assert named["conservative"]["fits"] and named["hopper-128x256"]["fits"]


GPU_SWEEP = "gemm-configs-gpu-triton-3.6.0-h100.tgz"


def test_h100_gpu_sweep_launched_every_config_that_fits_and_the_others_kept_their_launch_error():
    """The GPU sweep on the lab H100 (docs/performance.md): every compiled config went to the
    GPU; exactly those over the 232448-byte block limit failed there, with Triton's own error."""
    a = answers(GPU_SWEEP)
    td = next(g for g in a["groups"] if g["group"] == "gemm_tensor_descriptor")
    m, fr = td["gpu"], td["frontier"]
    assert m["launched"] == fr["compiled"] == 390
    assert m["statuses"] == {"ok": fr["fits"], "out_of_resources": fr["too_big"]}
    (oor,) = m["failures"]
    assert sorted(oor["ids"]) == sorted(fr["too_big_ids"]) and oor["resource"] == "shared memory"
    assert "OutOfResources: out of resource: shared memory" in oor["error"]
    named = {n["name"]: n for n in m["named"]}
    for name, need in (("aggressive-128x128x128", 262176), ("aggressive-256x128x128", 393248)):
        assert (named[name]["status"], named[name]["required"], named[name]["limit"]) == ("out_of_resources", need, 232448)
    assert "no aggressive config launches" in m["proposal"]["answer"]


def test_h100_gpu_sweep_numbers_are_the_medians_of_its_own_raw_samples():
    """The answers' best config per size is the highest fraction of cuBLAS among the records, and
    each of those figures is the median the bundle's raw samples (bench.json) give again."""
    from reprokit.harness import bench

    b = open_bundle(EXAMPLES / GPU_SWEEP)
    a = json.loads(b.read("sweep.json"))
    m = next(g for g in a["groups"] if g["group"] == "gemm_tensor_descriptor")["gpu"]
    rec = {c["id"]: c for c in b.results["cases"]}
    for best in m["best"]:
        n = int(best["size"].split("x")[0])
        fracs = {i: row["ratio_to_baseline"] for i, c in rec.items() for row in (c.get("gpu") or {}).get("bench", [])
                 if row["size"]["M"] == n and "kernel" in row}
        assert best["timed"] == len(fracs) == 324
        assert best["best"]["id"] == max(fracs, key=lambda i: (fracs[i], i))
        named = [x["id"] for x in m["named"] if x["status"] == "ok"]
        for cid in {best["best"]["id"], *named}:
            row = next(r for r in rec[cid]["gpu"]["bench"] if r["size"]["M"] == n)
            raw = next(r["raw"] for r in json.loads(b.read(rec[cid]["artifacts"]["bench"]))["runs"] if r["size"]["M"] == n)
            for who in ("kernel", "baseline"):
                again = bench.summarize_contender(raw[who], row[who]["profiler_error"], row["method"])
                assert again["median_ms"] == row[who]["median_ms"] and again["spread"] == row[who]["spread"]
                assert row["method"]["rounds"] == 2 and row["method"]["profiler"] is False
