"""Bundles captured on a real H100 (driver 580, gpu mode, share mode): they verify against today's
schemas and record what the hardware-side run found."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle, verify

GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"


def _one(folder: str) -> Path:
    (path,) = sorted((GOLDEN / folder).glob("*.tgz"))
    return path


@pytest.mark.parametrize("folder", ["h100-triton-3.6.0", "h100-triton-3.0.0"])
def test_golden_h100_bundles_verify_and_carry_nvml(folder):
    path = _one(folder)
    assert verify(path) == []
    b = open_bundle(path)
    assert b.manifest["mode"] == "gpu" and b.manifest["share"]["applied"] is True
    dev = b.env["gpu"]["devices"][0]
    assert dev["name"] == "NVIDIA H100 80GB HBM3" and dev["capability"] == 90
    assert dev["uuid"] == "<gpu-uuid>" and b.env["os"]["hostname"] == "<host>"
    cases = {c["id"]: c for c in b.results["cases"]}
    assert cases["block_ptr.p0"]["verdict"] == "no-tma"
    assert cases["block_ptr.p2"]["verdict"] == "inconclusive"


def test_golden_h100_triton_3_6():
    b = open_bundle(_one("h100-triton-3.6.0"))
    assert b.results["triton"] == "3.6.0"
    cases = {c["id"]: c for c in b.results["cases"]}
    for cid in ("tensor_descriptor.p0", "host_descriptor.p0"):
        assert cases[cid]["verdict"] == "tma" and cases[cid]["tma"]["sass"] >= 2
    assert cases["host_descriptor.p1"]["failing_pass"] == "TritonNvidiaGPUTMALoweringPass"
    assert cases["tensor_descriptor.gemm-256x128x128-w16-s4"]["launch"]["fits"] is False


def test_golden_h100_triton_3_0_compiler_abort():
    b = open_bundle(_one("h100-triton-3.0.0"))
    assert b.results["triton"] == "3.0.0"
    cases = {c["id"]: c for c in b.results["cases"]}
    assert cases["experimental_descriptor.p0"]["verdict"] == "tma"
    crash = cases["experimental_descriptor.p1"]
    assert crash["status"] == "crash" and crash["signal"] == "SIGABRT" and "UNREACHABLE" in crash["error"]
    assert cases["experimental_descriptor.p0"]["ptxas"]["version"].startswith("12.4")
