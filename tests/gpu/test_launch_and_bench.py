"""On a real GPU: the suite's cases launch in their own processes, are checked against torch,
run deterministically, fail to launch with the real error where they must, and are timed in
agreement with Nsight Compute's gpu__time_duration for the same kernel."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import pytest

pytest.importorskip("triton", reason="the GPU tier needs triton and torch beside reprokit")
pytest.importorskip("torch", reason="the GPU tier needs triton and torch beside reprokit")

from reprokit.bundle.schemas import problems  # noqa: E402
from reprokit.config import load_config  # noqa: E402
from reprokit.suite import build_plan  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PROBE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "ncu_probe.py")
CASES = "block_ptr.p0,block_ptr.p2,host_descriptor.p0,tensor_descriptor.p2,tensor_descriptor.gemm-128x128x128-w16-s4"


@pytest.fixture(scope="module")
def gpu_results():
    """The harness as a stack runs it, in its own process: its case processes must fork from a
    parent that never initialised CUDA (this test process may have)."""
    plan = build_plan(load_config().gpu("h100"), {"name": "local"}, mode="gpu", only=CASES).to_json()
    out = tempfile.mkdtemp(prefix="reprokit-gpu-")
    with open(os.path.join(out, "plan.json"), "w") as f:
        json.dump(plan, f)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-m", "reprokit.harness", "--plan", os.path.join(out, "plan.json"),
                        "--kernels", os.path.join(ROOT, "kernels"), "--out", out, "--workers", "2"],
                       env=env, capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    with open(os.path.join(out, "results.json")) as f:
        results = json.load(f)
    yield results, out
    shutil.rmtree(out, ignore_errors=True)


def test_launched_cases_are_correct_deterministic_and_schema_valid(gpu_results):
    results, out = gpu_results
    assert problems("results.json", results) == []
    cases = {c["id"]: c for c in results["cases"]}
    for cid in ("block_ptr.p0", "block_ptr.p2", "host_descriptor.p0", "tensor_descriptor.p2"):
        gpu = cases[cid]["gpu"]
        assert gpu["status"] == "ok", (cid, gpu)
        assert gpu["correctness"]["ok"] and gpu["correctness"]["unwritten"] == 0
        assert gpu["determinism"]["deterministic"] and gpu["determinism"]["runs"] >= 3
    assert cases["block_ptr.p2"]["gpu"]["check_size"] == {"M": 4000, "N": 4000}  # tails
    bench = cases["host_descriptor.p0"]["gpu"]["bench"]
    assert [b["size"]["M"] for b in bench] == [4096, 8192]
    for b in bench:
        assert b["kernel"]["gbs"] > 0 and b["baseline"]["gbs"] > 0 and b["nvml"]["available"]
    with open(os.path.join(out, cases["host_descriptor.p0"]["artifacts"]["bench"])) as f:
        raw = json.load(f)
    assert len(raw["runs"][0]["raw"]["kernel"]["events"]) == 3


def test_aggressive_gemm_fails_to_launch_with_the_real_error(gpu_results):
    results, _ = gpu_results
    (case,) = [c for c in results["cases"] if c["id"] == "tensor_descriptor.gemm-128x128x128-w16-s4"]
    gpu = case["gpu"]
    assert gpu["status"] == "out_of_resources", gpu
    assert gpu["resource"] == "shared memory" and gpu["limit"] == 232448 and gpu["required"] > gpu["limit"]
    assert "Required: " in gpu["error"]


def _ncu_ms(case: str, size: int, kernel: str) -> list:
    ncu = shutil.which("ncu")
    if not ncu:
        pytest.skip("ncu is not installed")
    # --clock-control none: measure at the clocks the card runs at, as reprokit does (ncu's default
    # would lock them to base); --cache-control all flushes caches before each launch, as we do.
    argv = [ncu, "--clock-control", "none", "--cache-control", "all", "--metrics", "gpu__time_duration.sum",
            "--csv", "--print-units", "base", "-k", f"regex:{kernel}", "--launch-skip", "2", "--launch-count", "10",
            sys.executable, PROBE, case, "--size", str(size), "--launches", "14"]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:] + p.stdout[-2000:]
    rows = [r for r in csv.DictReader(io.StringIO(p.stdout[p.stdout.find('"ID"'):]))
            if r.get("Metric Name") == "gpu__time_duration.sum"]
    assert len(rows) == 10, p.stdout[-2000:]
    assert all(r["Metric Unit"] == "ns" or r["Metric Unit"] == "nsecond" for r in rows)
    return [float(r["Metric Value"].replace(",", "")) / 1e6 for r in rows]


@pytest.fixture(scope="module")
def ncu_offset_ms():
    """ncu's gpu__time_duration minus the profiler's time, on a kernel that does nothing: what
    ncu counts per launch beyond the kernel's own start and end."""
    ncu = statistics.median(_ncu_ms("empty", 0, "empty_kernel"))
    p = subprocess.run([sys.executable, PROBE, "empty", "--size", "0", "--time"], capture_output=True, text=True,
                       timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    ours = json.loads(p.stdout.strip().splitlines()[-1])
    print(f"NCU empty kernel: ncu {1e3 * ncu:.3f} us, {ours['headline']} {1e3 * ours['median_ms']:.3f} us, "
          f"events {1e3 * ours['events_ms']:.3f} us: offset {1e3 * (ncu - ours['median_ms']):+.3f} us")
    assert ours["headline"] == "profiler"
    return ncu - ours["median_ms"]


@pytest.mark.parametrize("case,size,kernel", [
    ("host_descriptor.p0", 4096, "copy_p0"),                                   # ~21 us
    ("host_descriptor.p0", 8192, "copy_p0"),                                   # ~93 us
    ("tensor_descriptor.gemm-128x256x64-w8-s3", 2048, "gemm_tensor_descriptor"),  # ~28 us
    ("tensor_descriptor.gemm-128x256x64-w8-s3", 4096, "gemm_tensor_descriptor"),  # ~0.19 ms
    ("tensor_descriptor.gemm-128x256x64-w8-s3", 8192, "gemm_tensor_descriptor"),  # ~1.6 ms
])
def test_benchmark_agrees_with_ncu_within_2_percent_after_ncus_launch_offset(case, size, kernel, ncu_offset_ms):
    ncu = statistics.median(_ncu_ms(case, size, kernel))
    p = subprocess.run([sys.executable, PROBE, case, "--size", str(size), "--time"], capture_output=True,
                       text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    ours = json.loads(p.stdout.strip().splitlines()[-1])
    corrected = ours["median_ms"] + ncu_offset_ms
    print(f"NCU {case} {size}: ncu {ncu:.4f} ms, {ours['headline']} {ours['median_ms']:.4f} ms "
          f"({100 * (ours['median_ms'] / ncu - 1):+.1f}%), with ncu's launch offset {corrected:.4f} ms "
          f"({100 * (corrected / ncu - 1):+.2f}%), events {ours['events_ms']:.4f} ms "
          f"({100 * (ours['events_ms'] / ncu - 1):+.1f}%), graphs {ours['graph_median_ms']:.4f} ms "
          f"({100 * (ours['graph_median_ms'] / ncu - 1):+.1f}%), spread {ours['spread']:.4f}, "
          f"throttled {ours['throttled']}")
    assert ours["headline"] == "profiler", ours["profiler_error"]
    # gpu__time_duration also counts a fixed part of each launch that the profiler's kernel record
    # leaves out; an empty kernel measures it (ncu_offset_ms). With it added, within 2%.
    assert abs(corrected - ncu) <= 0.02 * ncu
    assert ours["spread"] <= 0.02
    assert not ours["throttled"]
