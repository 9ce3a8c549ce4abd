"""The H100 bundles of bundles/examples/ replayed compile-only on the pinned stacks of the Triton
they ran: the same statuses, verdicts, TMA counts and normalised IR, with no GPU. (The CUDA C++
case is left out: it needs the stack's nvcc, which the CI venvs lack.)"""

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
    ("h100-gpu-triton-3.6.0.tgz", "triton-3.6-cu130", "block_ptr.*,tensor_descriptor.*,host_descriptor.*"),
    ("h100-gpu-triton-3.0.0.tgz", "triton-3.0-cu129", "block_ptr.*,experimental_descriptor.*"),
])
def test_h100_bundle_replays_compile_only_on_its_triton(stack_ready, tmp_path, bundle, stack, cases):
    stack_ready(stack)
    path = EXAMPLES / bundle
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", str(path), "--stacks", stack, "--executor", "venv",
                        "--workers", "2", "--cases", cases, "--out", str(tmp_path), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=1200)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    data = json.loads(p.stdout)
    assert data["parent"] == hashlib.sha256(path.read_bytes()).hexdigest()
    grid = data["grid"]
    assert grid["moved"] is False and len(grid["cases"]) >= 9
    (new,) = tmp_path.glob("*.tgz")
    v = subprocess.run([sys.executable, "-m", "reprokit", "show", str(new), "--json"], capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert v.returncode == 0, v.stderr
    assert json.loads(v.stdout)["mode"] == "compile-only"
