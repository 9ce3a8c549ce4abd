"""The H100 bundles of bundles/examples/ (gpu mode, the board's identity kept, the lab H100's own triton 3.6.0 /
torch 2.11, and a Triton 3.0.0 wheel carried there): they verify, and hold NVML around each
benchmark, correctness, determinism, timings with raw samples, launch failures and IR."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle, verify

EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples"
BUNDLES = {"3.6.0": EXAMPLES / "h100-gpu-triton-3.6.0.tgz", "3.0.0": EXAMPLES / "h100-gpu-triton-3.0.0.tgz"}
TMA_COPY = {"3.6.0": ("tensor_descriptor.p0", "host_descriptor.p0"), "3.0.0": ("experimental_descriptor.p0",)}
GEMM_API = {"3.6.0": "tensor_descriptor", "3.0.0": "experimental_descriptor"}


@pytest.fixture(scope="module", params=sorted(BUNDLES))
def bundle(request):
    assert verify(BUNDLES[request.param]) == []
    return request.param, open_bundle(BUNDLES[request.param])


def test_gpu_run_of_the_named_triton_keeps_its_board_but_no_raw_uuid(bundle):
    """Made without --share (scripts/examples.py): env.json keeps the board's identity, the sha256
    of the UUID NVML read, so a replay on another H100 reads "another board"; and its state."""
    version, b = bundle
    assert b.results["triton"] == version and b.results["mode"] == "gpu" and b.manifest["mode"] == "gpu"
    assert b.manifest["share"]["applied"] is False
    dev = b.env["gpu"]["devices"][0]
    assert dev["name"] == "NVIDIA H100 80GB HBM3" and dev["uuid"].startswith("GPU-")
    assert b.env["board"]["identity"] == {"uuid_sha256": hashlib.sha256(dev["uuid"].encode()).hexdigest()}
    state = b.env["board"]["state"]
    assert state["driver"] and state["power_limit_w"] > 0 and state["clocks_mhz"]["sm_max"] > 0, state


def test_both_triton_runs_were_made_on_one_board():
    """The three suite GPU examples were remade in one device call, so all name the same board."""
    names = ("h100-gpu-triton-3.6.0.tgz", "h100-gpu-triton-3.6.0-adaptive.tgz", "h100-gpu-triton-3.0.0.tgz")
    ids = {json.dumps(open_bundle(EXAMPLES / n).env["board"]["identity"]) for n in names}
    assert len(ids) == 1 and "null" not in ids, ids


def test_every_launched_case_is_checked_and_deterministic(bundle):
    version, b = bundle
    launched = [c for c in b.results["cases"] if (c.get("gpu") or {}).get("correctness")]
    assert len(launched) >= 8
    for c in launched:
        gpu = c["gpu"]
        assert gpu["correctness"]["unwritten"] == 0, c["id"]
        assert gpu["determinism"]["runs"] == 5 and gpu["determinism"]["deterministic"], c["id"]
        assert gpu["status"] == ("ok" if gpu["correctness"]["ok"] else "wrong"), c["id"]
        if c["control"] == "P2":
            assert gpu["check_size"] == {"M": 4000, "N": 4000}, c["id"]  # tails
    ok = {c["id"] for c in launched if c["gpu"]["status"] == "ok"}
    assert {"block_ptr.p0", "block_ptr.p2", "cuda_tma.p0", *TMA_COPY[version]} <= ok
    for c in launched:
        if c["family"] != "cuda_tma":  # the JIT compiled the very cubin the bundle keeps
            assert c["gpu"]["jit_cubin"]["same_as_compiled"] is True, c["id"]


def test_aggressive_gemms_fail_to_launch_with_the_real_error(bundle):
    version, b = bundle
    cases = {c["id"]: c for c in b.results["cases"]}
    for shape, need in (("128x128x128", 262176), ("256x128x128", 393248)):
        c = cases[f"{GEMM_API[version]}.gemm-{shape}-w16-s4"]
        assert c["status"] == "ok"  # it compiles
        gpu = c["gpu"]
        assert gpu["status"] == "out_of_resources" and (gpu["required"], gpu["limit"]) == (need, 232448)
        assert gpu["error"].startswith(f"OutOfResources: out of resource: shared memory, Required: {need}, "
                                       "Hardware limit: 232448")


def test_benchmarks_carry_both_methods_nvml_and_their_raw_samples(bundle):
    version, b = bundle
    benched = [c for c in b.results["cases"] if (c.get("gpu") or {}).get("bench")]
    assert {c["id"] for c in benched} >= {"block_ptr.p0", "cuda_tma.p0", *TMA_COPY[version],
                                          f"{GEMM_API[version]}.gemm-128x256x64-w8-s3"}
    for c in benched:
        raw = json.loads(b.read_text(c["artifacts"]["bench"]))
        assert raw["case"] == c["id"] and len(raw["runs"]) == len(c["gpu"]["bench"])
        for row, run in zip(c["gpu"]["bench"], raw["runs"]):
            assert run["size"] == row["size"]
            for who in ("kernel", "baseline"):
                s = row[who]
                assert s["median_ms"] > 0 and s["graph_median_ms"] > 0 and len(s["round_medians_ms"]) == 3
                assert ("gbs" if c["control"] != "gemm" else "tflops") in s and s["pct_of_peak"] > 0
                # three rounds, each as long as its noise target asked (adaptive sampling)
                rounds = [len(r) for r in run["raw"][who]["events"]]
                dropped = sum(len(d) for d in run["raw"][who].get("discarded") or [])  # throttled launches
                assert len(rounds) == 3 and sum(rounds) - dropped == s["events"]["n"] and min(rounds) >= 10
                # the profiler timed the very launches the events did, and gives the headline
                assert s["headline"] == "profiler" and s["median_ms"] == s["profiler"]["median_ms"]
                assert [len(r) for r in run["raw"][who]["profiler"]] == [len(r) for r in run["raw"][who]["events"]]
                assert s["spread"] <= 0.02, (c["id"], row["size"], who)  # the GPU idles between launches
            nv = row["nvml"]
            assert nv["available"] and nv["samples"] >= 2 and nv["before"] and nv["after"]
            assert nv["throttled"] == bool(nv["throttled_for"])
            assert row["nvml_graph"]["available"]  # graph replays are watched apart
    gemm = next(c for c in benched if c["id"] == f"{GEMM_API[version]}.gemm-128x256x64-w8-s3")
    assert [r["size"]["M"] for r in gemm["gpu"]["bench"]] == [2048, 4096, 8192]
    assert gemm["gpu"]["bench"][0]["baseline_name"] == "cublas (torch.matmul)"


def test_ir_is_kept_for_the_launched_cases(bundle):
    _, b = bundle
    for c in b.results["cases"]:
        if (c.get("gpu") or {}).get("correctness") and c["family"] != "cuda_tma":
            assert {"ttgir", "ptx", "cubin", "sass"} <= set(c["artifacts"]), c["id"]


def test_what_the_h100_answered(bundle):
    """The README's GPU findings, held to the bundles: the best TMA GEMM within 10% of cuBLAS at
    8192^3; torch.compile's max-autotune uses no TMA unless told to (3.6.0); 3.0.0's
    experimental-descriptor P2 writes wrong values (the fp32-promoted block through an fp16
    descriptor: its TTIR stores tensor<128x128xf32>)."""
    version, b = bundle
    cases = {c["id"]: c for c in b.results["cases"]}
    gemm = cases[f"{GEMM_API[version]}.gemm-128x256x64-w8-s3"]["gpu"]["bench"][2]
    assert gemm["size"]["M"] == 8192 and gemm["ratio_to_baseline"] >= 0.90
    if version == "3.6.0":
        assert (cases["inductor.max-autotune"]["verdict"], cases["inductor.max-autotune"]["met"]) == ("no-tma", False)
        assert cases["inductor.max-autotune-tma"]["verdict"] == "tma"
        assert cases["inductor.max-autotune-tma"]["inductor"]["chosen"] == ["extern_kernels.mm"]
    else:
        p2 = cases["experimental_descriptor.p2"]
        assert p2["gpu"]["status"] == "wrong" and p2["gpu"]["determinism"]["deterministic"]
        ttir = b.read_text(p2["artifacts"]["ttir"])
        store = next(line for line in ttir.splitlines() if "tt.experimental_descriptor_store" in line)
        assert "tensor<128x128xf32>" in store
