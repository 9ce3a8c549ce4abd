"""The H100 trace program (tests/data/trace/tma_matmul_attention.py: an autotuned persistent matmul
through device-side tensor descriptors, an attention forward through host TensorDescriptors)
traced under Triton 3.6's interpreter, as CI runs it: it takes its device and SM count from
`triton.runtime.driver.active` (the stand-in driver answers), loops over runtime bounds (numpy
< 2.4 in the interpreter venv), and its bundle holds the autotuner's two configs and the
attention kernel, each compiled to TMA for sm_90. The same program's H100 bundle is held by
tests/unit/test_h100_trace_bundles.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.integration.test_trace import PROGRAMS, ROOT, interp_python, plan_cases, result_cases  # noqa: F401

pytestmark = pytest.mark.triton

MATMUL = "matmul_kernel_descriptor_persistent"
CONFIGS = [{"kwargs": {"BLOCK_SIZE_K": 64, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 128, "GROUP_SIZE_M": 8},
            "num_ctas": 1, "num_stages": 3, "num_warps": 8},
           {"kwargs": {"BLOCK_SIZE_K": 64, "BLOCK_SIZE_M": 128, "BLOCK_SIZE_N": 64, "GROUP_SIZE_M": 8},
            "num_ctas": 1, "num_stages": 4, "num_warps": 4}]


def trace_small(tmp_path: Path, python: str) -> tuple[int, Path]:
    """`reprokit trace -- python tma_matmul_attention.py --small`: (exit code, unpacked bundle)."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp_path / "bundles"), "--",
                        python, str(PROGRAMS / "tma_matmul_attention.py"), "--small"], cwd=ROOT, env=env,
                       capture_output=True, text=True, check=False, timeout=900)
    assert p.stdout.strip(), p.stderr
    with tarfile.open(json.loads(p.stdout)["bundle"]) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (root,) = (tmp_path / "unpacked").iterdir()
    return p.returncode, root


def test_persistent_matmul_and_host_descriptor_attention_under_the_interpreter(tmp_path, interp_python):  # noqa: F811
    code, root = trace_small(tmp_path, interp_python)
    assert code == 0
    plan, results = plan_cases(root), result_cases(root)
    # M = 256 and M = 128 tune apart (key M) but specialise alike: two configs, one attention
    assert list(plan) == [f"{MATMUL}.1", f"{MATMUL}.2", "k_attn_fwd.1"]
    for cid, c in results.items():
        assert (c["status"], c["verdict"]) == ("ok", "tma"), cid
        assert c["tma"]["sass"] > 0 and c["tma"]["ptx"] > 0, cid
    summary = json.loads((root / "trace" / "trace.json").read_text())
    assert summary["interpreter"] is True and summary["triton"] == "3.6.0"
    tuned = [a for a in summary["autotune"] if a["kernel"] == MATMUL]
    assert len(tuned) == 2 and all(a["configs"] == CONFIGS for a in tuned)
    assert tuned[0]["cases"] == [f"{MATMUL}.1", f"{MATMUL}.2"] and tuned[1]["cases"] == []
    assert tuned[0]["chosen_by"].startswith("trace: first config")
    m1 = plan[f"{MATMUL}.1"]
    # NUM_SMS came from driver.active: the stand-in's, the h100 profile's 132 SMs
    assert m1["trace"]["spec"]["constexprs"]["NUM_SMS"] == 132 and m1["trace"]["autotune"]["chosen"] is True
    assert m1["trace"]["spec"]["signature"] == {"K": "i32", "M": "i32", "N": "i32", "a_ptr": "*fp16",
                                                "b_ptr": "*fp16", "c_ptr": "*fp16"}
    attn = plan["k_attn_fwd.1"]
    assert attn["trace"]["spec"]["signature"]["desc_q"] == "tensordesc<fp16[64, 64]>"
    assert attn["call"]["args"]["desc_k"]["block"] == [64, 64]
    assert attn["call"]["args"]["desc_k"]["descriptor"]["tensor"] == [1, 2, 128, 64]
