"""The H100 trace bundles of bundles/examples/ (traced on the GPU) replayed compile-only on the
pinned stacks of the Triton they ran, with no GPU: the same statuses, verdicts, TMA counts and
normalised IR. A user's traced kernels replay anywhere from the bundle alone."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "bundles" / "examples"


@pytest.mark.parametrize("bundle, stack, cases", [
    ("h100-trace-triton-3.6.0.tgz", "triton-3.6-cu130",
     ["matmul_kernel_descriptor_persistent.1", "matmul_kernel_descriptor_persistent.2", "k_attn_fwd.1"]),
    ("h100-trace-triton-3.0.0.tgz", "triton-3.0-cu129", ["matmul_kernel_tma_persistent.1", "tma_copy.1"]),
])
def test_h100_trace_bundle_replays_compile_only_on_its_triton(stack_ready, tmp_path, bundle, stack, cases):
    # --candidates: every autotune config the program compiled, not only the one it chose
    stack_ready(stack)
    path = EXAMPLES / bundle
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", str(path), "--stacks", stack, "--executor", "venv",
                        "--workers", "2", "--candidates", "--out", str(tmp_path), "--all", "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    data = json.loads(p.stdout)
    assert data["parent"] == hashlib.sha256(path.read_bytes()).hexdigest()
    grid = data["grid"]
    assert grid["moved"] is False and [c["id"] for c in grid["cases"]] == cases
    for c in grid["cases"]:
        recorded, replayed = c["cells"]
        assert (replayed["status"], replayed["verdict"]) == ("ok", "tma"), c["id"]
        assert replayed["tma"] == recorded["tma"] and replayed["ir"] == recorded["ir"], c["id"]
    (new,) = tmp_path.glob("*.tgz")
    v = subprocess.run([sys.executable, "-m", "reprokit", "show", str(new), "--json"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert v.returncode == 0, v.stderr
    assert json.loads(v.stdout)["mode"] == "compile-only"
