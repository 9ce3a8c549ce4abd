"""The bundles tests/gpu/test_reduce_gpu.py wrote on the H100 (tests/gpu/data/reduce/, with the
figures each run wrote beside them): `wrong` and `slower` held on the reduced kernel, rechecked from
a clean run, each bundle the child of the committed example it was reduced from."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.bundle.reader import open_bundle, verify

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "gpu" / "data" / "reduce"
EXAMPLES = ROOT / "bundles" / "examples"


def _bundle(spec: str):
    (path,) = DATA.glob(f"reduce-{spec}-*.tgz")
    assert verify(path) == []
    figures = json.loads((DATA / f"reduce-{spec}.json").read_text())
    return open_bundle(path), figures


def _ratios(case: dict) -> dict:
    """Kernel over baseline median per size: the one-stack `slower` predicate's measure."""
    return {json.dumps(r["size"], sort_keys=True): r["kernel"]["median_ms"] / r["baseline"]["median_ms"]
            for r in case["gpu"]["bench"] if "kernel" in r}


def test_the_planted_bug_stayed_wrong_the_same_way():
    b, figures = _bundle("wrong")
    assert b.manifest["parent"] == open_bundle(EXAMPLES / "h100-trace-tensors-triton-3.6.0.tgz").sha256
    (case,) = b.results["cases"]
    assert case["id"] == "matmul_kernel_descriptor_persistent.1" and case["gpu"]["status"] == "wrong"
    outputs = {k: (v.get("reference") or {}).get("match") for k, v in case["gpu"]["outputs"].items()}
    assert outputs == {"c_ptr": "differs"}
    reduced = b.read("kernels/tma_matmul_attention.matmul_kernel_descriptor_persistent__reduced.py").decode()
    assert "(accumulator + 1.0).to(dtype)" in reduced and reduced == figures["kernel"]
    assert figures["predicate"] == "wrong" and figures["reduced"]["lines"] < figures["original"]["lines"]


def test_the_planted_slowdown_stayed_slower_than_the_recording():
    b, figures = _bundle("slower")
    recorded = open_bundle(EXAMPLES / "h100-gpu-triton-3.6.0.tgz")
    assert b.manifest["parent"] == recorded.sha256
    (case,) = b.results["cases"]
    assert case["id"] == "tensor_descriptor.p0" and case["gpu"]["status"] == "ok"  # copies right, only slower
    assert "for _ in range(32)" in b.read("kernels/copy_tensor_descriptor__reduced.py").decode()
    before = _ratios(next(c for c in recorded.results["cases"] if c["id"] == "tensor_descriptor.p0"))
    after = _ratios(case)
    assert after.keys() == before.keys() and after
    assert all(after[s] >= 2 * before[s] for s in after), (before, after)  # --threshold 1.0: at least 2x
    assert figures["predicate"] == "slower" and figures["reduced"]["nodes"] <= figures["original"]["nodes"]
