"""`reprokit trace` of a program that compiles kernels the way Inductor does (a generated module
importing torch._inductor's runtime helpers, `triton.compile(ASTSource(...))` per config), in the
interpreter venv (triton 3.6.0, the CPU torch 2.13.0): real compiles in the program, a real
capture, a real bundle. What must come out is written here by hand.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile

import pytest

from reprokit.errors import NotFaithful
from tests.integration.test_trace import ROOT, interp_python, interp_release, plan_cases, result_cases, trace  # noqa: F401

pytestmark = pytest.mark.triton

PROGRAM = "generated_kernels.py"
# The compiles generated_kernels.py makes: case id -> (kernel, constants by argument index, num_warps)
COMPILES = {
    "triton_poi_fused_gelu_exp_0.1": ("triton_poi_fused_gelu_exp_0", {3: 1024}, 4),
    "triton_per_fused_amax_softmax_1.1": ("triton_per_fused_amax_softmax_1", {3: 128, 4: 1}, 2),
    "triton_per_fused_amax_softmax_1.2": ("triton_per_fused_amax_softmax_1", {3: 128, 4: 8}, 8),
}


def test_generated_kernels_are_cases_held_to_the_programs_compile(tmp_path, interp_python):  # noqa: F811
    code, doc, root = trace(tmp_path, interp_python, PROGRAM)
    assert code == 0, doc
    plan, results = plan_cases(root), result_cases(root)
    assert sorted(plan) == sorted(COMPILES)
    for cid, (kernel, constants, warps) in COMPILES.items():
        case = plan[cid]
        assert case["kind"] == "generated" and case["kernel"] == {"file": "generated/cgxkernels.py", "function": kernel}
        assert {int(k[0]): v for k, v in case["generated"]["constants"]} == constants
        assert case["num_warps"] == warps and case["num_stages"] == 1
        assert case["generated"]["options"] == {"sanitize_overflow": False}
        assert set(case["trace"]["digests"]) == {"ttir", "cubin", "stages", "options"} and case["trace"]["triton"] == "3.6.0"
        assert set(case["trace"]["digests"]["stages"]) == {"ttgir", "llir", "ptx"} and case["trace"]["digests"]["options"]["num_warps"] >= 1
        assert case["trace"]["launched"] is False  # compiled ahead of time; nothing runs without a GPU
        rec = results[cid]
        assert rec["status"] == "ok", rec
        assert rec["reproduced"]["same"] is True and rec["reproduced"]["checked"] == ["cubin", "ttir"]
        # the capture started from the program's own compile: Triton found it by its cache key
        assert "found by its Triton cache key" in rec["reproduced"]["reason"] and "ptxas" not in rec
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["cases"] == [] and tj["generated"] == list(COMPILES) and tj["missed"] == []
    # loaded once before the cases' processes forked (with the torch its helpers import)
    assert "kernel modules loaded before forking (generated/cgxkernels.py)" in (root / "logs" / "harness.log").read_text()
    # The module travelled with the helpers it imports from torch._inductor, verbatim.
    kernels = root / "kernels" / "generated"
    p = subprocess.run([interp_python, "-c", "import torch._inductor.runtime.triton_helpers as h; print(h.__file__)"],
                       capture_output=True, text=True, check=True)
    original = p.stdout.strip()
    assert (kernels / "_inductor_runtime" / "triton_helpers.py").read_bytes() == open(original, "rb").read()
    assert (kernels / "_inductor_runtime" / "triton_compat.py").is_file()
    # The IR is the program's own compile: its locations name the module where the program (or an
    # earlier run, whose compile Triton's cache gave it) wrote it, not the bundle's copy.
    ttir = (root / results["triton_poi_fused_gelu_exp_0.1"]["artifacts"]["ttir"]).read_text()
    assert "__nv_erff" in ttir and 'cgxkernels.py"' in ttir and 'loc("kernels/generated/' not in ttir


def run_trace(tmp_path, python: str, *program_args: str) -> subprocess.CompletedProcess:
    """`reprokit trace --json` of the program with arguments of its own."""
    return subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp_path / "b"), "--",
                           python, str(ROOT / "tests" / "data" / "trace" / PROGRAM), *program_args],
                          cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)


def test_a_listener_of_the_program_and_reprokits_both_see_every_compile(tmp_path, interp_python):  # noqa: F811
    p = run_trace(tmp_path, interp_python, "--listener")
    assert p.returncode == 0, p.stderr[-3000:]
    assert "own listener saw 3" in p.stderr  # the program's stdout goes to stderr under --json
    clash = [ln for ln in p.stderr.splitlines() if "single slot" in ln]
    assert len(clash) == 1 and "own_listener" in clash[0]
    assert len(json.loads(p.stdout)["cases"]) == 3


def test_a_module_patched_in_the_program_is_not_reproduced_never_a_compile_error(tmp_path, interp_python):  # noqa: F811
    p = run_trace(tmp_path, interp_python, "--patch")
    assert p.returncode == NotFaithful.exit_code, p.stderr[-3000:]
    assert "not captured faithfully (triton_poi_fused_gelu_exp_0.1)" in p.stderr
    with tarfile.open(json.loads(p.stdout)["bundle"]) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (root,) = (tmp_path / "unpacked").iterdir()
    results = result_cases(root)
    bad = results["triton_poi_fused_gelu_exp_0.1"]
    assert bad["status"] == "not_reproduced" and bad["verdict"] == "not_reproduced" and bad["met"] is None
    assert bad["reproduced"] == {"same": False, "checked": ["cubin", "ttir"], "reason": bad["error"]}
    assert "ttir" in bad["error"] and "cubin" in bad["error"] and "first at ttgir" in bad["error"]  # where it parted
    # the kernels the patch did not touch are still the program's own
    assert [results[c]["status"] for c in ("triton_per_fused_amax_softmax_1.1", "triton_per_fused_amax_softmax_1.2")] \
        == ["ok", "ok"]


def test_real_inductor_output_is_traced_and_compiles_from_the_bundle_on_another_release(tmp_path, interp_python,  # noqa: F811
                                                                                       stack_ready):
    """tests/data/trace/inductor_cpu.py: torch.compile's own generated module (its heuristics
    decorators and hints, triton_helpers, libdevice), compiled for sm_90 by Inductor's autotuner.
    Traced, every kernel is the program's own; replayed compile-only on Triton 3.5 from the bundle
    alone (the carried helpers, no seed), every kernel compiles there, and nothing is reprokit's failure."""
    stack_ready("triton-3.5-cu130")
    code, doc, root = trace(tmp_path, interp_python, "inductor_cpu.py")
    assert code == 0, doc
    plan, results = plan_cases(root), result_cases(root)
    assert plan and {c["kind"] for c in plan.values()} == {"generated"}
    (module,) = {c["kernel"]["file"] for c in plan.values()}
    text = (root / "kernels" / module).read_text()
    assert "@triton_heuristics." in text and "from torch._inductor.runtime" in text  # as Inductor wrote it
    assert {r["status"] for r in results.values()} == {"ok"}
    assert all(r["reproduced"]["same"] is True for r in results.values())
    out = tmp_path / "replayed"
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", doc["bundle"], "--stacks", "triton-3.5-cu130",
                        "--executor", "venv", "--out", str(out), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=900, check=False)
    assert p.returncode in (0, 1), p.stderr[-3000:]  # 1: the IR moved between the releases
    (bundle,) = out.glob("triton-3.5-cu130-*.tgz")
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path / "replay", filter="data")
    (again,) = (tmp_path / "replay").iterdir()
    replayed = result_cases(again)
    assert sorted(replayed) == sorted(results)
    for r in replayed.values():
        assert r["status"] == "ok", r
        assert r["reproduced"]["same"] is None  # another release: not held to 3.6's digests
        ttir = (again / r["artifacts"]["ttir"]).read_text()
        assert 'loc("kernels/generated/' in ttir and "reprokit-generated-test" not in ttir


def test_under_3_9s_interpreter_no_autotuning_listener_is_set(tmp_path, interp_release):  # noqa: F811
    """Triton 3.8+ tells an autotuning listener the config its autotuner chose; under 3.9's
    interpreter the autotuner, to call one, looks for a JITFunction under the InterpretedFunction
    and raises. So the recorder sets none there: several.py's autotuned `add` runs, and the
    choice is what the program launched (the H100 run hears the listener: scripts/gpu/)."""
    python = interp_release("3.9.0")
    code, doc, root = trace(tmp_path, python, "several.py")
    assert code == 0, doc
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["autotune_listener"] == []
    (tuned,) = tj["autotune"]
    assert tuned["kernel"] == "add" and tuned["chosen"]["kwargs"] == {"BLOCK": 32}


@pytest.fixture(scope="session")
def tritonparse_path(tmp_path_factory, interp_python):  # noqa: F811
    """tritonparse 0.6.0 (and zstandard, its one need on import) from the package index, in a
    folder of their own beside the interpreter venv's CPU triton (its other requirements would
    pull a CUDA torch); skipped without a package index."""
    target = tmp_path_factory.mktemp("tritonparse")
    p = subprocess.run([interp_python, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
                        "tritonparse==0.6.0", "zstandard"], capture_output=True, text=True, timeout=600, check=False)
    if p.returncode != 0:
        pytest.skip(f"tritonparse 0.6.0 could not be installed: {p.stderr.strip()[-300:]}")
    return str(target)


def test_tritonparse_and_reprokit_both_get_every_compile(tmp_path, interp_python, tritonparse_path):  # noqa: F811
    """tritonparse's structured logging (its defaults, launch tracing on) in the traced program:
    it sets Triton's compile listener after reprokit did; both hear all three compiles, and the
    clash is said in one line."""
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp_path / "b"), "--",
                        interp_python, str(ROOT / "scripts" / "gpu" / "with_tritonparse.py"), "--aot", str(tmp_path / "tp"),
                        str(ROOT / "tests" / "data" / "trace" / PROGRAM)],
                       cwd=ROOT, capture_output=True, text=True, timeout=900, check=False,
                       env={**{k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"},
                            "PYTHONPATH": tritonparse_path})
    assert p.returncode == 0, p.stderr[-3000:]
    assert 'tritonparse events: {"compilation": 3}' in p.stderr
    clash = [ln for ln in p.stderr.splitlines() if "single slot" in ln]
    assert len(clash) == 1 and "tritonparse" in clash[0]
    assert sorted(c["id"] for c in json.loads(p.stdout)["cases"]) == sorted(COMPILES)


def _other_ptxas() -> str:
    """A ptxas of another release than Triton 3.6's own (12.8): the CUDA toolkit's (CI's 13.0)."""
    from reprokit.harness.kinds import cudacpp

    nvcc = cudacpp.find_nvcc()
    ptxas = os.path.join(os.path.dirname(nvcc), "ptxas") if nvcc else None
    if not ptxas or not os.path.isfile(ptxas):
        if os.environ.get("REPROKIT_REQUIRE_NVCC") == "1":
            pytest.fail(f"REPROKIT_REQUIRE_NVCC=1 but {cudacpp.missing_nvcc()}", pytrace=False)
        pytest.skip("no CUDA toolkit ptxas beside nvcc")
    return ptxas


def test_a_ptxas_the_program_chose_is_recorded_and_never_blamed_on_the_compiler(tmp_path, interp_python,  # noqa: F811
                                                                                stack_ready):
    """The program points TRITON_PTXAS_PATH at another ptxas, as Inductor does at torch's: the
    trace records which (by version, never its host path); the capture, which has no such ptxas,
    compiles the same TTIR to another PTX and says why: not_reproduced, exit 8, never a compile error."""
    ptxas = _other_ptxas()
    version = subprocess.run([ptxas, "--version"], capture_output=True, text=True, check=True).stdout
    assert "release 12.8" not in version  # another release than Triton 3.6's own, or nothing is shown
    p = run_trace(tmp_path, interp_python, "--ptxas", ptxas)
    assert p.returncode == NotFaithful.exit_code, p.stderr[-3000:]
    doc = json.loads(p.stdout)
    with tarfile.open(doc["bundle"]) as tar:
        tar.extractall(tmp_path / "u2", filter="data")
    (root2,) = (tmp_path / "u2").iterdir()
    release = version.split("release ")[1].split(",")[0]
    plan, results = plan_cases(root2), result_cases(root2)
    assert sorted(results) == sorted(COMPILES)
    for cid in COMPILES:
        assert plan[cid]["trace"]["toolchain"] == {"ptxas": {"from": "elsewhere", "version": release,
                                                             "env": "TRITON_PTXAS_PATH"}}
        rec = results[cid]
        assert rec["status"] == "not_reproduced" and rec["reproduced"]["same"] is False, rec
        assert "first at ptx" in rec["reproduced"]["reason"]  # TTIR, TTGIR and LLVM IR were the program's
        assert f"a ptxas {release} at a path of its own" in rec["reproduced"]["reason"]
        assert rec["toolchain"]["missing"] and "compile_error" not in json.dumps(rec)
    # the ptxas's host path is in the command the program ran with, nowhere in what was recorded of it
    assert os.path.dirname(ptxas) not in (root2 / "plan.json").read_text()
    # A replay on a stack of the same release without that ptxas is another toolchain: not judged
    # (the trace's own capture, where the program ran, is), and nothing is called moved or wrong.
    stack_ready("triton-3.6-cu130")
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", doc["bundle"], "--stacks", "triton-3.6-cu130",
                        "--executor", "venv", "--out", str(tmp_path / "replays"), "--json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=900, check=False)
    out = json.loads(p.stdout)
    replayed = {c["id"]: c["cells"][1] for c in out["grid"]["cases"]}
    assert sorted(replayed) == sorted(COMPILES)
    for cid, cell in replayed.items():
        assert cell["status"] == "ok", (cid, cell)
    with tarfile.open(out["stacks"][0]["bundle"]) as tar:
        results = json.load(tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith("/results.json"))))
    for rec in results["cases"]:
        assert rec["reproduced"]["same"] is None and rec["reproduced"]["reason"].startswith("not judged: "), rec
        assert f"a ptxas {release} at a path of its own" in rec["reproduced"]["reason"]


def test_torchs_ptxas_is_found_again_in_the_stacks_torch(tmp_path, interp_python):  # noqa: F811
    """The recording side (trace.inprogram.listen.toolchain) names a ptxas inside torch's package by its place
    there; the capture side (harness.toolchain.use) finds that file in the torch it imports, and
    says so when the torch it has holds none. A torch package of the test's own stands for a CUDA
    torch (whose wheel ships bin/ptxas), in the interpreter venv's real Triton."""
    fake = tmp_path / "site" / "torch"
    (fake / "bin").mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    ptxas = fake / "bin" / "ptxas"
    ptxas.write_text("#!/bin/sh\necho 'Cuda compilation tools, release 12.4, V12.4.131'\n")
    ptxas.chmod(0o755)
    script = f"""
import json, os, sys
import torch, triton
os.environ["TRITON_PTXAS_PATH"] = {str(ptxas)!r}
from reprokit.trace.inprogram import listen
from reprokit.harness import toolchain
seen = listen.toolchain({{"backend": "cuda", "arch": 90, "warp_size": 32}})
os.environ.pop("TRITON_PTXAS_PATH")
used = toolchain.use({{"trace": {{"toolchain": seen}}}})
print(json.dumps({{"seen": seen, "used": used, "env": os.environ.get("TRITON_PTXAS_PATH")}}))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}
    p = subprocess.run([interp_python, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)
    assert out["seen"] == {"ptxas": {"from": "torch", "file": os.path.join("bin", "ptxas"), "version": "12.4",
                                     "env": "TRITON_PTXAS_PATH"}}
    assert out["used"] == {"ptxas": {"from": "torch", "file": "bin/ptxas", "version": "12.4"}}
    assert out["env"] == str(ptxas)
    # A stack whose torch holds no ptxas (the CPU torch): said, and Triton's own is left in place.
    ptxas.unlink()
    p = subprocess.run([interp_python, "-c", script.replace("seen = listen", "seen = {'ptxas': {'from': 'torch', "
                                                                 "'file': 'bin/ptxas', 'version': '12.4', 'env': "
                                                                 "'TRITON_PTXAS_PATH'}}\nlisten")],
                       capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout.splitlines()[-1])
    assert out["env"] is None and out["used"] == {"missing": [
        "the program compiled with torch's ptxas 12.4 (torch/bin/ptxas), which this stack does not have "
        "(Triton's own ptxas compiled here)"]}


def test_compiles_in_inductors_own_worker_pool_are_recorded(tmp_path, interp_python):  # noqa: F811
    """torch.compile's default mode compiles in Inductor's worker pool (a sidecar process started
    with the program's environment, which forks the workers): every compile is in a worker, none
    in the program. generated_workers.py drives that very pool (torch's SubprocPool) with
    generated_kernels.py's compiles; each is a case, held to the worker's own compile."""
    code, doc, root = trace(tmp_path, interp_python, "generated_workers.py")
    assert code == 0, doc
    results = result_cases(root)
    assert sorted(results) == sorted(COMPILES)
    for rec in results.values():
        assert rec["status"] == "ok" and rec["reproduced"]["same"] is True, rec
    tj = json.loads((root / "trace" / "trace.json").read_text())
    procs = tj["processes"]
    # the program, the sidecar, and at least one forked worker; only workers compiled
    assert procs["recorded"] >= 3 and procs["forked"] >= 1 and 1 <= procs["compiled"] <= procs["forked"], procs
