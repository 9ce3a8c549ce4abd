"""The H100 trace bundles of real libraries and Gluon kernels (bundles/examples/, traced on the GPU
by scripts/gpu-libs-trace.sh) replayed compile-only with no GPU: on the release they were traced
with, every kernel compiles to the recorded IR; on the releases beside it, every kernel compiles or
is `unsupported` naming what its release lacks; never a harness_error, a compile_error or a crash
that would blame the compiler for reprokit's own failure."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "bundles" / "examples"
BUNDLES = {
    "h100-trace-liger-triton-3.6.0.tgz": 11,
    "h100-trace-gluon-tma-triton-3.6.0.tgz": 2,
    "h100-trace-gluon-wgmma-triton-3.6.0.tgz": 4,
}


def _replay(path: Path, stack: str, out: Path) -> dict:
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", str(path), "--stacks", stack, "--executor",
                        "venv", "--workers", "2", "--out", str(out), "--all", "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert p.returncode in (0, 1), p.stdout[-3000:] + p.stderr   # 1: something moved, said in the grid
    return json.loads(p.stdout)


@pytest.mark.parametrize("bundle", sorted(BUNDLES))
def test_on_its_own_release_every_kernel_compiles_to_the_recorded_ir(stack_ready, tmp_path, bundle):
    stack_ready("triton-3.6-cu130")
    data = _replay(EXAMPLES / bundle, "triton-3.6-cu130", tmp_path)
    assert data["exit_code"] == 0 and data["grid"]["moved"] is False, json.dumps(data["grid"])[:3000]
    cases = data["grid"]["cases"]
    assert len(cases) == BUNDLES[bundle]
    for c in cases:
        recorded, replayed = c["cells"]
        assert replayed["status"] == "ok", (c["id"], replayed)
        assert replayed["verdict"] == recorded["verdict"] and replayed["tma"] == recorded["tma"], c["id"]
        assert replayed["ir"] == recorded["ir"], c["id"]


@pytest.mark.parametrize("stack", ["triton-3.5-cu130", "triton-3.9-cu132"])
def test_on_other_releases_every_kernel_compiles_or_names_what_its_release_lacks(stack_ready, tmp_path, stack):
    stack_ready(stack)
    for bundle in sorted(BUNDLES):
        data = _replay(EXAMPLES / bundle, stack, tmp_path / bundle)
        assert not data["grid"].get("failed"), data["grid"]
        for c in data["grid"]["cases"]:
            replayed = c["cells"][1]
            assert replayed["status"] in ("ok", "unsupported"), (bundle, c["id"], replayed)
            if replayed["status"] == "unsupported":
                assert replayed.get("error") or replayed.get("reason"), (bundle, c["id"], replayed)
