"""A standalone reproducer's `--launch` under Triton's interpreter on this CPU (triton 3.6.0 and
the CPU torch: the interpreter venv the trace tests build), with no reprokit on the path: the
suite's copy launched from seeded inputs and checked bit-exact against torch; a planted wrong
kernel fails the check with exit 1; a planted fault of the script while it makes the inputs is
script_error (exit 2); a case with no launch recipe, or no GPU and no interpreter, says so in one
line and exits 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from reprokit.config import load_config
from reprokit.harness.reproducer import reproducer_source
from reprokit.suite import build_plan
from tests.integration.test_trace import interp_python  # noqa: F401 - the shared venv fixture

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_config().gpu("h100"), {"name": "triton-3.6-cu130", "triton": "3.6.0"})


def _script(plan: dict, cid: str, tmp_path: Path, plant=None) -> Path:
    case = next(c for c in plan["cases"] if c["id"] == cid)
    text = reproducer_source(case, plan, (KERNELS / case["kernel"]["file"]).read_text())
    if plant:
        old, new = plant
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path = tmp_path / f"{cid}.py"
    path.write_text(text)
    return path


def _run(python: str, script: Path, *args: str, interpret: bool = True) -> tuple[int, str, dict | None]:
    home = script.parent / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TRITON_CACHE_DIR": str(home / "cache")}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    p = subprocess.run([python, str(script), *args], cwd=script.parent, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    doc = json.loads(p.stdout) if "--json" in args and p.stdout.lstrip().startswith("{") else None
    return p.returncode, p.stdout + p.stderr, doc


def test_a_suite_copy_launches_and_is_checked_bit_exact(plan, interp_python, tmp_path):  # noqa: F811
    script = _script(plan, "block_ptr.p0", tmp_path)
    rc, out, doc = _run(interp_python, script, "--launch", "--size", "256", "--seed", "3", "--json")
    assert rc == 0, out[-3000:]
    launch = doc["launch"]
    assert launch["status"] == "ok" and launch["seed"] == 3 and launch["size"] == {"M": 256, "N": 256}
    c = launch["correctness"]
    assert c["ok"] and c["elements"] == 256 * 256 and c["mismatched"] == 0 and c["unwritten"] == 0
    assert c["tolerance"] == {"rtol": 0.0, "atol": 0.0, "rel_fro": 0.0}  # a copy is bit-exact
    assert launch["determinism"]["deterministic"] and launch["determinism"]["distinct"] == 1
    assert doc["steps"][-1]["status"] == "ok" and "ttgir" in doc["steps"][-1]["tma"]  # the H100 compile ran first


def test_a_planted_wrong_result_fails_the_check(plan, interp_python, tmp_path):  # noqa: F811
    script = _script(plan, "block_ptr.p0", tmp_path, plant=(
        "tl.store(d, tl.load(s))\n\n\n@triton.jit\ndef copy_p1", "tl.store(d, tl.load(s) * 0)\n\n\n@triton.jit\ndef copy_p1"))
    rc, out, _ = _run(interp_python, script, "--launch", "--size", "128x256")
    assert rc == 1, out[-3000:]
    line = next(ln for ln in out.splitlines() if ln.startswith("  check against torch"))
    assert "WRONG" in line and "bit-exact" in line
    assert "launch: wrong on cpu (TRITON_INTERPRET=1), 128x256, seed 0" in out


def test_a_fault_of_the_script_while_making_inputs_is_script_error(plan, interp_python, tmp_path):  # noqa: F811
    script = _script(plan, "block_ptr.p0", tmp_path, plant=("'args': 'ptr_mn'", "'args': 'ptr_nm'"))
    rc, out, _ = _run(interp_python, script, "--launch", "--size", "128")
    assert rc == 2, out[-3000:]
    assert "verdict: script_error (ValueError: unknown argument binding 'ptr_nm'" in out
    assert "reproduced" not in out and "launch: " not in out


def test_what_cannot_be_launched_says_so_in_one_line(plan, interp_python, tmp_path):  # noqa: F811
    rc, out, _ = _run(interp_python, _script(plan, "host_descriptor.p1", tmp_path), "--launch")
    assert rc == 2 and out.strip().count("\n") == 0, out
    assert out.startswith("reproducer: --launch: this case cannot be launched by the script: negative control")
    rc, out, _ = _run(interp_python, _script(plan, "block_ptr.p0", tmp_path), "--launch", interpret=False)
    assert rc == 2 and out.strip().count("\n") == 0, out
    assert "no CUDA device here" in out and "TRITON_INTERPRET=1" in out
    rc, out, _ = _run(interp_python, _script(plan, "block_ptr.p0", tmp_path), "--launch", "--size", "0x4")
    assert rc == 2 and "--size takes M, MxN" in out, out

