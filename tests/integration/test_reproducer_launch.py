"""A standalone reproducer's `--launch` under Triton's interpreter on this CPU (triton 3.6.0 and
the CPU torch: the interpreter venv the trace tests build), with no reprokit on the path: the
suite's copy launched from seeded inputs and checked bit-exact against torch; a declared call
(tests/data/launch_add, a reprokit.toml project) checked against the output fingerprints of a
recorded run, and by determinism alone for another seed; the lab H100's recorded softmax call
(tests/unit/data/h100-calls) reproduced on this CPU within fp16's tolerance; the reproducer that
`reprokit run` writes into the project's bundle launched as it comes; a planted wrong kernel fails either
check with exit 1; a planted fault of the script while it makes the inputs is script_error
(exit 2); a case with no launch recipe, or no GPU and no interpreter, says so in one line and
exits 2. The scripts that compile run side by side (each compiles in its own process)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reprokit.config import load_config
from reprokit.harness.reproducer import Reproducers, reproducer_source
from reprokit.suite import build_plan
from reprokit.userspec import plan as userplan
from reprokit.userspec.project import load as load_project
from tests.integration.test_trace import interp_python, interp_release  # noqa: F401 - the shared venv fixtures

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "kernels"
PROJECT = ROOT / "tests" / "data" / "launch_add"
H100_CALLS = ROOT / "tests" / "unit" / "data" / "h100-calls"

# What the harness records for a declared call, made the harness's way in the interpreter venv:
# the JIT's specialisation (stand-in driver for the H100) and the GPU run's record (callgpu's
# seeded inputs, launched by the interpreter: a record from the CPU stands in for a GPU's).
_RECORD = """
import json, sys
sys.path.insert(0, {root!r})
import torch
from reprokit.harness import call, standin
from reprokit.harness.kinds import callgpu
profile = {{"capability": 90, "sm_count": 132, "smem_per_block": 232448}}
standin.install_driver(profile, torch_device="cpu")
from reprokit.harness.toolbox import load_kernel
case = json.loads({case!r})
obj = load_kernel({kernels!r}, case["kernel"]["file"], case["kernel"]["function"])
spec = call.derive(obj, case["call"], driver_profile=profile).spec
_, _, rec = callgpu.launch_and_check(torch, obj, case, "cpu")
print(json.dumps({{"call": spec, "gpu": {{"status": "ok", "device": "cpu (the interpreter)", **rec}}}}))
"""


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_config().gpu("h100"), {"name": "triton-3.6-cu130", "triton": "3.6.0"}).to_json()


def _write(path: Path, text: str, plant=None) -> Path:
    if plant:
        old, new = plant
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)
    return path


def _suite_script(plan: dict, cid: str, path: Path, plant=None) -> Path:
    case = next(c for c in plan["cases"] if c["id"] == cid)
    return _write(path, reproducer_source(case, plan, (KERNELS / case["kernel"]["file"]).read_text()), plant)


def _run(python: str, script: Path, *args: str, interpret: bool = True) -> tuple[int, str, dict | None]:
    home = script.parent / (script.stem + ".home")
    home.mkdir(exist_ok=True)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TRITON_CACHE_DIR": str(home / "cache")}
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    p = subprocess.run([python, str(script), *args], cwd=script.parent, env=env, capture_output=True, text=True,
                       timeout=300, check=False)
    doc = json.loads(p.stdout) if "--json" in args and p.stdout.lstrip().startswith("{") else None
    return p.returncode, p.stdout + p.stderr, doc


@pytest.fixture(scope="module")
def call_case(interp_python, tmp_path_factory):  # noqa: F811
    """(the plan, the call case, its record as the harness makes one) for tests/data/launch_add."""
    profile = load_config().gpu("h100")
    plan = userplan.build_plan(load_project(PROJECT / "reprokit.toml"), profile, {"name": "interp", "triton": "3.6.0"}).to_json()
    case = plan["cases"][0]
    home = tmp_path_factory.mktemp("record")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "TRITON_CACHE_DIR": str(home / "cache"), "TRITON_INTERPRET": "1"}
    script = _RECORD.format(root=str(ROOT), case=json.dumps(case), kernels=str(PROJECT / "kernels"))
    p = subprocess.run([interp_python, "-c", script], env=env, capture_output=True, text=True, timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    return plan, case, {"id": case["id"], "status": "ok", "verdict": "no-tma", **json.loads(p.stdout.splitlines()[-1])}


@pytest.fixture(scope="module")
def captured_call(tmp_path_factory, stack_ready) -> str:
    """The reproducer the harness itself writes for the project's call, from `reprokit run`
    (compile-only, triton 3.6.0): cases/add.masked/reproducer.py in the bundle."""
    stack_ready("triton-3.6-cu130")
    out = tmp_path_factory.mktemp("capture")
    p = subprocess.run([sys.executable, "-m", "reprokit", "run", "--gpu", "h100", "--stacks", "triton-3.6-cu130",
                        "--executor", "venv", "--mode", "compile-only", "--project", str(PROJECT), "--out", str(out),
                        "--json"], env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                       timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    bundle = json.loads(p.stdout)["stacks"][0]["bundle"]
    with tarfile.open(bundle) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("/cases/add.masked/reproducer.py"))
        return t.extractfile(member).read().decode()


@pytest.fixture(scope="module")
def runs(plan, call_case, captured_call, interp_python, tmp_path_factory):  # noqa: F811
    """Every script of this module, run side by side: name -> (exit code, output, --json doc)."""
    d = tmp_path_factory.mktemp("scripts")
    cplan, case, rec = call_case
    # the plan's arguments in another order than the record's run had them (a plan.json written with
    # sorted keys): the inputs are made in the kernel's parameter order all the same
    shuffled = {**case, "call": {**case["call"], "args": dict(reversed(list(case["call"]["args"].items())))}}
    call_text = reproducer_source(shuffled, cplan, (PROJECT / "kernels" / "add.py").read_text(), result=rec)
    zero = ("tl.store(out_ptr + offs, x + y, mask=mask)", "tl.store(out_ptr + offs, (x + y) * 0, mask=mask)")
    jobs = {
        "copy": (_suite_script(plan, "block_ptr.p0", d / "repro_copy.py"), "--launch", "--size", "256", "--seed", "3",
                 "--json"),
        "copy_wrong": (_suite_script(plan, "block_ptr.p0", d / "repro_copy_wrong.py", plant=(
            "tl.store(d, tl.load(s))\n\n\n@triton.jit\ndef copy_p1", "tl.store(d, tl.load(s) * 0)\n\n\n@triton.jit\ndef copy_p1")),
            "--launch", "--size", "128x256"),
        "copy_fault": (_suite_script(plan, "block_ptr.p0", d / "repro_copy_fault.py", plant=("'args': 'ptr_mn'", "'args': 'ptr_nm'")),
                       "--launch", "--size", "128"),
        "call": (_write(d / "repro_call.py", call_text), "--launch", "--json"),
        "call_seed": (_write(d / "repro_call_seed.py", call_text), "--launch", "--seed", "5"),
        "call_wrong": (_write(d / "repro_call_wrong.py", call_text, plant=zero), "--launch"),
        "h100_sm": (_write(d / "repro_h100_sm.py", _h100_script("sm")), "--launch", "--json"),
        "captured": (_write(d / "repro_captured.py", captured_call), "--launch"),
        "refused": (_suite_script(plan, "tensor_descriptor.p0", d / "repro_refused.py"), "--launch", "--size", "128",
                    "--json"),
    }
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {name: pool.submit(_run, interp_python, *job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


def test_a_suite_copy_launches_and_is_checked_bit_exact(runs):
    rc, out, doc = runs["copy"]
    assert rc == 0, out[-3000:]
    launch = doc["launch"]
    assert launch["status"] == "ok" and launch["seed"] == 3 and launch["size"] == {"M": 256, "N": 256}
    c = launch["correctness"]
    assert c["ok"] and c["elements"] == 256 * 256 and c["mismatched"] == 0 and c["unwritten"] == 0
    assert c["tolerance"] == {"rtol": 0.0, "atol": 0.0, "rel_fro": 0.0}  # a copy is bit-exact
    assert launch["determinism"]["deterministic"] and launch["determinism"]["distinct"] == 1
    assert doc["steps"][-1]["status"] == "ok" and "ttgir" in doc["steps"][-1]["tma"]  # the H100 compile ran first


def test_a_planted_wrong_copy_fails_the_check(runs):
    rc, out, _ = runs["copy_wrong"]
    assert rc == 1, out[-3000:]
    line = next(ln for ln in out.splitlines() if ln.startswith("  check against torch"))
    assert "WRONG" in line and "bit-exact" in line
    assert "launch: wrong on cpu (TRITON_INTERPRET=1), 128x256, seed 0" in out


def test_a_fault_of_the_script_while_making_inputs_is_script_error(runs):
    rc, out, _ = runs["copy_fault"]
    assert rc == 2, out[-3000:]
    assert "verdict: script_error (ValueError: unknown argument binding 'ptr_nm'" in out
    assert "reproduced" not in out and "launch: " not in out


def test_a_declared_call_matches_its_recorded_outputs(runs, call_case):
    rc, out, doc = runs["call"]
    assert rc == 0, out[-3000:]
    launch, recorded = doc["launch"], call_case[2]["gpu"]
    assert launch["status"] == "ok" and launch["compared"] == {"out_ptr": "exact"}
    assert launch["outputs"]["out_ptr"]["sha256"] == recorded["outputs"]["out_ptr"]["sha256"]
    assert launch["against"].startswith("the recorded GPU run (cpu (the interpreter), seed 0)")
    assert launch["determinism"]["deterministic"]
    # the compile is the JIT's specialisation of the call: n = 1000 is not a multiple of 16
    assert doc["steps"][0]["status"] == "ok" and call_case[2]["call"]["divisibility"] == ["x_ptr", "y_ptr", "out_ptr"]


def test_the_harness_writes_the_calls_reproducer_and_it_launches(runs):
    """A compile-only capture has no GPU record: the launch is held to determinism alone."""
    rc, out, _ = runs["captured"]
    assert rc == 0, out[-3000:]
    assert "recorded verdict: no-tma -> reproduced" in out
    assert "checked against determinism only (no GPU run recorded)" in out
    assert "  determinism: 2 launches, 1 distinct outputs" in out


def test_another_seed_is_held_to_determinism_only(runs):
    rc, out, _ = runs["call_seed"]
    assert rc == 0, out[-3000:]
    assert "launch: ok on cpu (TRITON_INTERPRET=1), seed 5, checked against determinism only (the GPU run used seed 0)" in out


def test_a_planted_wrong_call_differs_from_its_record(runs):
    rc, out, _ = runs["call_wrong"]
    assert rc == 1, out[-3000:]
    assert "launch: wrong on cpu (TRITON_INTERPRET=1), seed 0, checked against the recorded GPU run" in out
    line = next(ln for ln in out.splitlines() if ln.startswith("  out_ptr: float32 1000"))
    assert line.endswith("; DIFFERS") and "sum 0," in line


def _h100_script(cid: str) -> str:
    plan = json.loads((H100_CALLS / "plan.json").read_text())
    rec = next(c for c in json.loads((H100_CALLS / "results.json").read_text())["cases"] if c["id"] == cid)
    return Reproducers.from_dir(plan, str(ROOT / "tests" / "data" / "usercases")).text(cid, rec)


def test_the_h100s_recorded_call_is_reproduced_on_the_cpu_within_tolerance(runs):
    """A real GPU record: the softmax call (heuristics, a None argument, a tl dtype, a str and a
    float constexpr, an 8-byte-aligned output) launched on the H100; here in the interpreter."""
    rc, out, doc = runs["h100_sm"]
    assert rc == 0, out[-3000:]
    launch = doc["launch"]
    assert launch["against"] == "the recorded GPU run (NVIDIA H100 80GB HBM3, seed 0)"
    assert launch["compared"]["out_ptr"] in ("exact", "close")  # the CPU's math against the H100's
    assert doc["reproduced"] is True and doc["verdict"] == "no-tma"


def test_a_launch_the_runtime_refuses_is_the_launchs_status(runs):
    """The interpreter does not see the kernel module's alias of tl.make_tensor_descriptor (the
    suite's `make_desc`): Triton's runtime raises at the launch, which is the result, not a
    fault of the script."""
    rc, out, doc = runs["refused"]
    assert rc == 1, out[-3000:]
    launch = doc["launch"]
    assert launch["status"] == "launch_error" and launch["exception"] == "InterpreterError"
    assert "Did you forget to add @triton.jit" in launch["error"]
    assert doc["verdict"] == "tma" and "correctness" not in launch


def test_what_cannot_be_launched_says_so_in_one_line(plan, interp_python, tmp_path):  # noqa: F811
    rc, out, _ = _run(interp_python, _suite_script(plan, "host_descriptor.p1", tmp_path / "p1.py"), "--launch")
    assert rc == 2 and out.strip().count("\n") == 0, out
    assert out.startswith("reproducer: --launch: this case cannot be launched by the script: negative control")
    script = _suite_script(plan, "block_ptr.p0", tmp_path / "p0.py")
    rc, out, _ = _run(interp_python, script, "--launch", interpret=False)
    assert rc == 2 and out.strip().count("\n") == 0, out
    assert "no CUDA device here" in out and "TRITON_INTERPRET=1" in out
    rc, out, _ = _run(interp_python, script, "--launch", "--size", "0x4")
    assert rc == 2 and "--size takes M, MxN" in out, out


def test_a_call_whose_kernel_module_imports_what_the_release_lacks_is_unsupported(interp_release, tmp_path):  # noqa: F811
    """The H100's device-descriptor add on triton 3.0.0 (with torch): its module imports
    triton.tools.tensor_descriptor, which 3.0 lacks. Unsupported, as the harness says it, never a
    script_error: exit 1 against the recorded tma, 0 with --expect none."""
    python = interp_release("3.0.0")
    script = _write(tmp_path / "repro_add30.py", _h100_script("add"))
    rc, out, _ = _run(python, script, interpret=False)
    assert rc == 1, out[-3000:]
    assert out.splitlines() == ["verdict: unsupported (triton 3.0.0 lacks triton.tools.tensor_descriptor, which the "
                                "kernel module imports)", "recorded verdict: tma -> DIFFERS"]
    rc, out, doc = _run(python, script, "--expect", "none", "--json", interpret=False)
    assert rc == 0 and doc["verdict"] == "unsupported" and doc["reproduced"] is None, out
