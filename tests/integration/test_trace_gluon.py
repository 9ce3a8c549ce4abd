"""Gluon kernels (`@gluon.jit`, triton.experimental.gluon in 3.6) traced on this CPU host and
captured compile-only for sm_90: Triton's Gluon TMA and WGMMA tutorials' kernels
(tests/data/trace/gluon/). Gluon has no interpreter mode, so each launch compiles in the program
(its Triton, for the stand-in driver's target) and then fails to launch; the program goes on.

The capture must be Gluon's own compile: each case is `language: "gluon"`, its descriptors
carry their shared-memory layout, its TTGIR is the very TTGIR the program's own compile wrote to
its Triton cache (source locations aside), and its TMA is counted at every level. Before Gluon
was captured, the TMA tutorial's two kernels were a `compile_error` (a Gluon builtin copied into
the extracted file, `NameError: _core`) and a `harness_error` (a Gluon descriptor recreated as a
Triton one, which has no `layout`)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.integration.test_trace import PROGRAMS, ROOT, interp_python, plan_cases  # noqa: F401

pytestmark = pytest.mark.triton

_LOC = re.compile(r"\s*loc\((?:[^()]|\([^()]*\))*\)")


def _norm(ttgir: str) -> str:
    """TTGIR without source locations (the program's file and the extracted file differ)."""
    return "\n".join(ln for ln in _LOC.sub("", ttgir).splitlines() if not ln.startswith("#loc"))


def _trace(tmp: Path, python: str, program: str) -> tuple:
    cache = tmp / "program-cache"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_CACHE_DIR"] = str(cache)  # where the program's own compile leaves its IR
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp / "bundles"), "--",
                        python, str(PROGRAMS / "gluon" / program)], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=False, timeout=900)
    assert p.stdout.strip(), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    with tarfile.open(doc["bundle"]) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (root,) = (tmp / "unpacked").iterdir()
    own: dict = {}
    for f in sorted(cache.glob("*/*.ttgir")):  # one folder per compile: kernel name -> its compiles
        own.setdefault(f.stem, []).append(_norm(f.read_text()))
    return p.returncode, doc, root, own, p.stderr


# program -> {case: TMA ops per level (ttgir, llir, ptx, sass)}, as 3.6 compiles the tutorials
EXPECTED = {
    "gluon_tma.py": {"memcpy_1d_tma_kernel.1": 2, "elementwise_add_tma_kernel.1": 6},
    "gluon_wgmma.py": {"small_mma_kernel.1": 4, "small_mma_kernel.2": 4, "blocked_mma_kernel.1": 3,
                       "blocked_mma_kernel.2": 3},
}


@pytest.fixture(scope="module")
def traced(tmp_path_factory, interp_python):  # noqa: F811
    """program -> _trace's outcome, each program traced once."""
    return {prog: _trace(tmp_path_factory.mktemp(Path(prog).stem), interp_python, prog) for prog in sorted(EXPECTED)}


@pytest.mark.parametrize("program", sorted(EXPECTED))
def test_gluon_tutorial_kernels_are_captured_as_the_program_compiled_them(traced, program):
    code, doc, root, own, stderr = traced[program]
    assert code == 0, stderr[-3000:]
    assert "compiled, not launched (no GPU)" in stderr
    got = {c["id"]: (c["status"], c["verdict"], c["tma"]) for c in doc["cases"]}
    assert got == {cid: ("ok", "tma", {lv: n for lv in ("ttgir", "llir", "ptx", "sass")})
                   for cid, n in EXPECTED[program].items()}, got
    cases = plan_cases(root)
    for cid, case in cases.items():
        assert case["language"] == "gluon", cid
        kernel = (root / "kernels" / case["kernel"]["file"]).read_text()
        assert f"@gluon.jit\ndef {case['kernel']['function']}(" in kernel
        descs = [a for a in case["call"]["args"].values() if isinstance(a, dict) and "descriptor" in a]
        assert descs and all(d["layout"]["class"] == "NVMMASharedLayout" for d in descs), cid
        # the capture's TTGIR is one of the program's own compiles of that kernel
        assert _norm((root / "cases" / cid / "kernel.ttgir").read_text()) in own[case["kernel"]["function"]], cid
    # ... and every compile of the program is captured, once
    mine = sorted(_norm((root / "cases" / cid / "kernel.ttgir").read_text()) for cid in cases)
    assert mine == sorted(t for texts in own.values() for t in texts)
    if program == "gluon_wgmma.py":
        # LHS in registers or in shared memory: two specialisations of one kernel, both wgmma
        for cid in EXPECTED[program]:
            assert "wgmma.mma_async" in (root / "cases" / cid / "kernel.ptx").read_text(), cid
        helper = (root / "kernels" / cases["blocked_mma_kernel.1"]["kernel"]["file"]).read_text()
        assert "@triton.constexpr_function\ndef get_instr_shape_n(" in helper


def test_a_gluon_trace_replays_compile_only_on_its_release_and_is_unsupported_before_its_layouts(
        traced, stack_ready, tmp_path):
    """On triton-3.6-cu130 every kernel compiles to the recorded IR; 3.5's Gluon layouts take other
    fields (no `cga_layout`): each case is `unsupported`, naming that, never a compile_error."""
    stack_ready("triton-3.6-cu130")
    stack_ready("triton-3.5-cu130")
    bundle = next(iter((traced["gluon_wgmma.py"][2].parents[1] / "bundles").glob("*.tgz")))
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", str(bundle), "--stacks",
                        "triton-3.6-cu130,triton-3.5-cu130", "--executor", "venv", "--workers", "2", "--out",
                        str(tmp_path), "--all", "--json"], capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert p.stdout.strip(), p.stderr[-3000:]
    grid = json.loads(p.stdout)["grid"]
    assert [c["id"] for c in grid["cases"]] == sorted(EXPECTED["gluon_wgmma.py"], key=list(
        EXPECTED["gluon_wgmma.py"]).index)
    for c in grid["cases"]:
        recorded, on36, on35 = c["cells"]
        assert (on36["status"], on36["verdict"]) == ("ok", "tma"), c["id"]
        assert on36["tma"] == recorded["tma"] and on36["ir"] == recorded["ir"], c["id"]
        assert on35["status"] == "unsupported" and "cga_layout" in on35["error"], (c["id"], on35)
