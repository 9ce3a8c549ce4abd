"""The harness's determinism check compares outputs where they are (launch.determinism_on_device)
and must give the record the reproducers' determinism() gives: the suite's copy launched under
Triton's interpreter (the CPU torch), and a kernel whose output changes from run to run."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.test_trace import interp_python  # noqa: F401 - the shared venv fixture

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, sys
import torch, triton
from reprokit.config import load_config
from reprokit.harness.kinds import launch
from reprokit.harness.toolbox import load_kernel
from reprokit.suite import build_plan, kernels_dir

plan = build_plan(load_config().gpu("h100"), {"name": "local", "triton": triton.__version__}, mode="gpu").to_json()
case = next(c for c in plan["cases"] if c["id"] == "block_ptr.p0")
recipe, _ = launch.recipe_for(case)
fn = load_kernel(str(kernels_dir()), case["kernel"]["file"], case["kernel"]["function"])
bound = launch.Bound(torch, triton, fn, case, recipe, {"M": 64, "N": 64}, device="cpu")
out = {"copy": [launch.determinism_on_device(torch, bound), launch.determinism(torch, bound)]}


class Drifting:
    # a kernel whose third run writes one other element (a race), then settles again
    def __init__(self):
        self.out, self.n = torch.zeros(16, dtype=torch.float16), 0

    def poison(self):
        self.out.fill_(float("nan"))

    def run(self):
        self.n += 1
        self.out.fill_(1.0)
        if self.n % 5 == 3:
            self.out[7] = 2.0


out["drifting"] = [launch.determinism_on_device(torch, Drifting()), launch.determinism(torch, Drifting())]
print(json.dumps(out))
"""


def test_the_device_comparison_records_what_determinism_records(interp_python, tmp_path):  # noqa: F811
    p = subprocess.run([interp_python, "-c", SCRIPT], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": str(ROOT), "TRITON_INTERPRET": "1", "HOME": str(tmp_path)})
    assert p.returncode == 0, p.stderr[-3000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    fast, plain = out["copy"]
    assert fast == plain and fast["deterministic"] and fast["distinct"] == 1 and len(fast["sha256"]) == 64
    # which run differs is the kernel's to say (the record comes from determinism() run again)
    fast, plain = out["drifting"]
    assert not fast["deterministic"] and fast["distinct"] == plain["distinct"] == 2 and len(fast["sha256"]) == 5
    assert set(fast["sha256"]) == set(plain["sha256"]) and fast["runs"] == 5
