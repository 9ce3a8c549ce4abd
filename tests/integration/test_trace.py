"""`reprokit trace` end to end under Triton's interpreter, in a real venv (triton 3.6.0, the CPU
torch 2.13.0, numpy) built once under $REPROKIT_CACHE: real programs run, real records, a real
capture (ahead-of-time compiles for sm_90) and a real bundle.

What the bundle must hold is written here by hand: the distinct specialisations each program
launched, and, for each, the TMA counts of a `triton.compile` whose signature, constexprs and
divisibility hints this file spells out (not derived by the code under test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.errors import ExecutorError, ProgramFailed
from tests.conftest import skip_or_fail_triton
from tests.helpers.interp import interpreter_python
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "data" / "trace"
@pytest.fixture(scope="session")
def interp_python() -> str:
    """The interpreter venv (tests/helpers/interp.py): triton 3.6.0, the CPU torch, numpy."""
    try:
        return str(interpreter_python(host()))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))


@pytest.fixture(scope="session")
def interp_release():
    """release -> the python of an interpreter venv with that Triton and the same CPU torch."""
    made = {}

    def get(release: str) -> str:
        if release not in made:
            try:
                made[release] = str(interpreter_python(host(), release))
            except ExecutorError as e:
                skip_or_fail_triton(str(e))
        return made[release]

    return get


def trace(tmp_path: Path, python: str, program: str, *extra: str, env_extra: dict | None = None
          ) -> tuple[int, dict, Path]:
    """Run `reprokit trace --json` on a program of tests/data/trace; (exit code, JSON, unpacked bundle)."""
    out = tmp_path / "bundles"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(env_extra or {})
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(out), *extra, "--",
                        python, str(PROGRAMS / program)], cwd=ROOT, env=env, capture_output=True, text=True, check=False,
                       timeout=900)
    assert p.stdout.strip(), p.stderr
    doc = json.loads(p.stdout)
    with tarfile.open(doc["bundle"]) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (root,) = (tmp_path / "unpacked").iterdir()
    return p.returncode, doc, root


def plan_cases(root: Path) -> dict:
    return {c["id"]: c for c in json.loads((root / "plan.json").read_text())["cases"]}


def result_cases(root: Path) -> dict:
    return {c["id"]: c for c in json.loads((root / "results.json").read_text())["cases"]}


# Each distinct specialisation several.py launches, by hand: (kernel, signature with "constexpr"
# entries, constexprs by parameter index, parameters hinted divisible by 16, num_warps, num_stages).
_F32, _F16 = "*fp32", "*fp16"
SEVERAL = {
    # scale at n=64 and n=128: one specialisation (n divisible by 16); at n=100: a second.
    "scale.1": ("scale", {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {3: 32},
                ["x_ptr", "y_ptr", "n"], 4, 3),
    "scale.2": ("scale", {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {3: 32},
                ["x_ptr", "y_ptr"], 4, 3),
    # add: every config of the autotuner.
    "add.1": ("add", {"x_ptr": _F32, "y_ptr": _F32, "out_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {4: 32},
              ["x_ptr", "y_ptr", "out_ptr", "n"], 2, 3),
    "add.2": ("add", {"x_ptr": _F32, "y_ptr": _F32, "out_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {4: 64},
              ["x_ptr", "y_ptr", "out_ptr", "n"], 4, 3),
    "add.3": ("add", {"x_ptr": _F32, "y_ptr": _F32, "out_ptr": _F32, "n": "i32", "BLOCK": "constexpr"}, {4: 128},
              ["x_ptr", "y_ptr", "out_ptr", "n"], 4, 2),
    "copy_device_desc.1": ("copy_device_desc", {"src": _F16, "dst": _F16, "M": "i32", "N": "i32", "BM": "constexpr",
                                                "BN": "constexpr"}, {4: 32, 5: 32}, ["src", "dst", "M", "N"], 4, 3),
    "copy_host_desc.1": ("copy_host_desc", {"src_desc": "tensordesc<fp16[32, 32]>",
                                            "dst_desc": "tensordesc<fp16[32, 32]>", "BM": "constexpr",
                                            "BN": "constexpr"}, {2: 32, 3: 32}, [], 4, 3),
    "row_sum.1": ("row_sum", {"x_ptr": _F16, "out_ptr": _F32, "stride": "i32", "N": "constexpr", "ACC": "constexpr",
                              "BIAS": "constexpr"}, {3: 64, 4: "tl.float32", 5: None}, ["x_ptr", "out_ptr", "stride"],
                  4, 3),
}

# Compiles SEVERAL's specialisations with triton.compile (3.6's ASTSource form) and prints the
# TMA counts per IR level for each, as the harness's oracle counts them.
_HAND_COMPILE = r"""
import json, sys
sys.path[:0] = [sys.argv[2], sys.argv[3]]
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from reprokit.common import oracle
import trace_kernels as K
cases = json.loads(open(sys.argv[1]).read())
out = {}
for cid, (kernel, sig, consts, div, warps, stages) in cases.items():
    fn = getattr(K, kernel)
    fn = getattr(fn, "fn", fn) if not isinstance(fn, triton.runtime.JITFunction) else fn
    names = list(sig)
    consts = {(int(i),): (tl.float32 if v == "tl.float32" else v) for i, v in consts.items()}
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in div}
    k = triton.compile(ASTSource(fn, sig, constexprs=consts, attrs=attrs), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": warps, "num_stages": stages})
    texts = {lv: k.asm[lv] for lv in ("ttir", "ttgir", "llir", "ptx") if lv in k.asm}
    out[cid] = oracle.scan_all(texts)[0]
print(json.dumps(out))
"""


def hand_compiled_tma(python: str, tmp_path: Path) -> dict:
    spec = tmp_path / "hand.json"
    spec.write_text(json.dumps(SEVERAL))
    p = subprocess.run([python, "-c", _HAND_COMPILE, str(spec), str(PROGRAMS), str(ROOT)], check=False, capture_output=True,
                       text=True, timeout=900, env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.strip().splitlines()[-1])


def test_several_kernels_give_exactly_their_specialisations_with_the_hand_compiled_tma(tmp_path, interp_python):
    code, doc, root = trace(tmp_path, interp_python, "several.py")
    assert code == 0, doc
    plan, results = plan_cases(root), result_cases(root)
    assert sorted(plan) == sorted(SEVERAL)
    assert all(c["kind"] == "call" and c["expect"] is None for c in plan.values())
    assert {cid: r["status"] for cid, r in results.items()} == dict.fromkeys(SEVERAL, "ok")
    # What the JIT specialised on: the capture's derivation from the recorded call, which must
    # also be what the program's own Triton derived from the live launch (trace.spec).
    for cid, (kernel, sig, _consts, div, warps, stages) in SEVERAL.items():
        case, spec = plan[cid], results[cid]["call"]
        assert case["kernel"]["function"] == kernel and spec["kernel"] == kernel
        assert sorted(spec["divisibility"]) == sorted(div), cid
        assert {k: v for k, v in sig.items() if v != "constexpr"} == spec["signature"], cid
        assert (spec["options"]["num_warps"], spec["options"]["num_stages"]) == (warps, stages), cid
        assert case["trace"]["spec"] == spec, cid
    assert plan["scale.1"]["call"]["args"]["n"] == 64 and plan["scale.2"]["call"]["args"]["n"] == 100
    # scale.1: n = 64, n = 128, then the launches do_bench timed; scale.2: n = 100 alone
    assert plan["scale.1"]["trace"]["launches"] > 2 and plan["scale.2"]["trace"]["launches"] == 1
    assert plan["copy_host_desc.1"]["call"]["args"]["src_desc"] == {
        "descriptor": {"tensor": [64, 64], "dtype": "float16", "strides": [64, 1], "align": 16}, "block": [32, 32],
        "shape": [64, 64], "strides": [64, 1]}
    assert plan["row_sum.1"]["call"]["args"]["ACC"] == {"dtype": "float32"}
    assert plan["row_sum.1"]["call"]["args"]["BIAS"] == {"none": True}
    assert results["row_sum.1"]["call"]["constexprs"] == {"N": 64, "ACC": {"dtype": "float32"}, "BIAS": None}
    # The autotuner: all three configs recorded, the first one let through (the interpreter cannot time).
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["missed"] == []
    (tuned,) = tj["autotune"]
    assert tuned["kernel"] == "add" and tuned["cases"] == ["add.1", "add.2", "add.3"]
    assert tuned["chosen"]["kwargs"] == {"BLOCK": 32} and tuned["chosen_by"].startswith("trace: first config")
    assert [plan[f"add.{i}"]["trace"]["autotune"]["chosen"] for i in (1, 2, 3)] == [True, False, False]
    # TMA counts: the capture's against a hand-written triton.compile of each specialisation.
    hand = hand_compiled_tma(interp_python, tmp_path)
    for cid in SEVERAL:
        got = {lv: n for lv, n in results[cid]["tma"].items() if lv in hand[cid]}
        assert got == hand[cid], cid
    assert results["copy_device_desc.1"]["tma"]["ptx"] > 0 and results["copy_host_desc.1"]["tma"]["ptx"] > 0
    assert results["scale.1"]["tma"]["ptx"] == 0
    # The extracted kernel file is the kernel with what it reaches, and none of the program.
    scale_src = (root / "kernels" / "trace_kernels.scale.py").read_text()
    assert "def _scaled(x)" in scale_src and "SCALE = triton.language.constexpr(3)" in scale_src
    assert "autotune" not in (root / "kernels" / "trace_kernels.add.py").read_text()
    assert (root / "trace" / "sources" / "trace_kernels.py").is_file()


def test_a_program_that_fails_midway_gives_a_bundle_of_what_it_launched(tmp_path, interp_python):
    code, doc, root = trace(tmp_path, interp_python, "raises.py", "--tensors", "small")
    assert code == ProgramFailed.exit_code
    assert doc["program"]["exit_code"] == 1
    assert sorted(plan_cases(root)) == ["negate.1"]
    assert result_cases(root)["negate.1"]["status"] == "ok"
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["failed"] is True and tj["exit_code"] == 1
    assert "gave up midway" in tj["stderr_tail"]
    # --tensors small: the launch's tensors before and after it.
    assert tj["tensor_files"] == ["trace/tensors/0001.inputs.pt", "trace/tensors/0001.outputs.pt"]
    for f in tj["tensor_files"]:
        assert (root / f).stat().st_size > 0


def test_a_program_that_asks_for_tritons_spec_before_importing_it_is_traced(tmp_path, interp_python):
    """torch asks importlib.util.find_spec("triton") before Inductor imports it; the recorder
    must still install at the import itself (it once went with the spec thrown away, and a
    torch.compile program was traced in its compile workers only)."""
    code, doc, root = trace(tmp_path, interp_python, "asks_first.py")
    assert code == 0, doc
    assert sorted(plan_cases(root)) == ["double.1"]
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["processes"] == {"recorded": 1, "forked": 0, "compiled": 1, "launched": 1}
    assert tj["inductor_caches"] == "off"  # TORCHINDUCTOR_FORCE_DISABLE_CACHES=1 in the traced run


def _prestarted() -> list[int]:
    """Live harness processes started ahead of their run (`python -m reprokit.harness --prestart`)."""
    pids = []
    for p in os.listdir("/proc"):
        try:
            with open(f"/proc/{p}/cmdline", "rb") as f:
                if b"reprokit.harness\0--prestart" in f.read():
                    pids.append(int(p))
        except (OSError, ValueError):
            continue
    return pids


def test_the_captures_harness_loads_while_the_program_runs(tmp_path, interp_python):
    """`python prog.py`: the capture's harness was started beside the program, in the program's
    own Python, and had Triton, its warm-up and torch loaded before its run came (its log's first
    line); a command whose program is no Python itself (`env python prog.py`) gets a harness
    started afterwards in the Python that ran, and the same bundle's cases."""
    code, _, root = trace(tmp_path / "direct", interp_python, "asks_first.py")
    assert code == 0
    first = (root / "logs" / "harness.log").read_text().splitlines()[0]
    assert "prestarted while the host was busy: Triton and its warm-up" in first and "torch" in first
    out = tmp_path / "launcher"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(out), "--", "env",
                        interp_python, str(PROGRAMS / "asks_first.py")], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=False, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    with tarfile.open(json.loads(p.stdout)["bundle"]) as tar:
        tar.extractall(out / "unpacked", filter="data")
    (other,) = (out / "unpacked").iterdir()
    assert "prestarted" not in (other / "logs" / "harness.log").read_text()
    assert plan_cases(other) == plan_cases(root)
    assert json.loads((other / "manifest.json").read_text())["executor"]["python"] == interp_python


def test_a_trace_with_nothing_to_capture_calls_its_early_harness_off(tmp_path, interp_python):
    program = tmp_path / "no_triton.py"
    program.write_text("import time\ntime.sleep(1)\nprint('no kernels here')\n")
    before = set(_prestarted())
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--out", str(tmp_path / "out"), "--", interp_python,
                        str(program)], cwd=ROOT, capture_output=True, text=True, check=False, timeout=300,
                       env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert p.returncode == 2 and "without importing triton" in p.stderr
    assert set(_prestarted()) - before == set()
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


@pytest.mark.parametrize("release", ["3.0.0", "3.3.1", "3.6.0", "3.9.0"])
def test_releases_old_and_new_trace_alike(release, tmp_path, interp_release):
    """3.0-3.5 launch through GridExecutor (3.0-3.1 time configs with the autotuner module's
    do_bench, 3.2-3.3 with the driver's benchmarker taken at decoration); 3.6+ through
    InterpretedFunction.run: the records must not differ."""
    python = interp_release(release)
    code, doc, root = trace(tmp_path, python, "classic.py")
    assert code == 0, doc
    plan = plan_cases(root)
    assert sorted(plan) == ["double.1", "double.2", "inc.1", "inc.2"]
    # n = 32 and 96: one specialisation, n divisible by 16; n = 90: the second.
    spec = {cid: c["trace"]["spec"] for cid, c in plan.items()}
    for sp in spec.values():  # 3.0-3.2 also hint constexprs: the runtime arguments are what differ
        sp["divisibility"] = [a for a in sp["divisibility"] if a in sp["signature"]]
    assert spec["double.1"]["divisibility"] == ["x_ptr", "n"] and plan["double.1"]["trace"]["launches"] == 2
    assert spec["double.2"]["divisibility"] == ["x_ptr"] and plan["double.2"]["call"]["args"]["n"] == 90
    assert [spec[f"inc.{i}"]["constexprs"]["BLOCK"] for i in (1, 2)] == [32, 64]
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["triton"] == release and tj["interpreter"] is True and tj["missed"] == []
    assert tj["autotune"][0]["chosen"]["kwargs"] == {"BLOCK": 32}
    assert all(r["status"] == "ok" for r in result_cases(root).values())


def test_a_traced_bundle_replays_on_another_release(tmp_path, interp_python, stack_ready):
    """A trace is a plan like any other: `replay --stacks` compiles its call cases on another
    release from the bundle alone (compile-only), every case ok there too."""
    stack_ready("triton-3.5-cu130")
    code, doc, _ = trace(tmp_path, interp_python, "classic.py")
    assert code == 0, doc
    out = tmp_path / "replayed"
    p = subprocess.run([sys.executable, "-m", "reprokit", "replay", doc["bundle"], "--stacks", "triton-3.5-cu130",
                        "--executor", "venv", "--workers", "2", "--candidates", "--out", str(out), "--json"], cwd=ROOT,
                       capture_output=True, text=True, timeout=900, check=False)
    assert p.returncode in (0, 1), p.stderr[-3000:]  # 1: a metric moved between the releases
    (bundle,) = out.glob("triton-3.5-cu130-*.tgz")
    with tarfile.open(bundle) as tar:
        tar.extractall(tmp_path / "replay", filter="data")
    (root,) = (tmp_path / "replay").iterdir()
    results = result_cases(root)
    assert sorted(results) == ["double.1", "double.2", "inc.1", "inc.2"]
    assert {r["status"] for r in results.values()} == {"ok"}
    assert json.loads((root / "results.json").read_text())["triton"] == "3.5.0"


def test_the_same_program_gives_the_same_plan_and_kernels_whatever_the_hash_seed(tmp_path, interp_python):
    """plan.json, trace/trace.json and the extracted kernel files are the same bytes across runs
    (the bundle's time and the compile timings in results.json are what differ, as for `run`)."""
    roots = []
    for seed in ("1", "2"):
        home = tmp_path / f"home{seed}"
        home.mkdir()
        code, doc, root = trace(tmp_path / seed, interp_python, "classic.py",
                                env_extra={"PYTHONHASHSEED": seed, "TMPDIR": str(home)})
        assert code == 0, doc
        roots.append(root)
    a, b = roots
    for rel in ("plan.json", "trace/trace.json"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel
    files = sorted(p.relative_to(a / "kernels") for p in (a / "kernels").rglob("*") if p.is_file())
    assert files == sorted(p.relative_to(b / "kernels") for p in (b / "kernels").rglob("*") if p.is_file())
    assert all((a / "kernels" / f).read_bytes() == (b / "kernels" / f).read_bytes() for f in files)


def test_the_programs_own_modules_travel_with_the_kernel(tmp_path, interp_python):
    """A kernel that calls a helper through a module of the program's own: the module's file is
    carried beside the extracted kernel (the capture runs from the checkout's root, where that
    module cannot be imported otherwise)."""
    code, doc, root = trace(tmp_path, interp_python, "modules.py")
    assert code == 0, doc
    assert "import trace_kernels as K" in (root / "kernels" / "modules.via_module.py").read_text()
    assert (root / "kernels" / "trace_kernels.py").read_bytes() == (PROGRAMS / "trace_kernels.py").read_bytes()
    assert result_cases(root)["via_module.1"]["status"] == "ok"


def test_a_users_interpreter_setting_and_attribute_names_give_no_false_failure(tmp_path, interp_python):
    """Two failures public libraries showed (flash-linear-attention 0.6.0, torchao 0.18.0): with
    TRITON_INTERPRET=1 already in the user's environment the capture's harness inherited it, and
    every kernel calling tl.sum or tl.sigmoid was a compile_error (exit 0); and a module-level
    `maximum` or `sigmoid` of the program, named like an attribute the kernel reads, was copied
    into the kernel's file (a harness_error: its decorator undefined) or listed as left out."""
    code, doc, root = trace(tmp_path, interp_python, "names_and_helpers.py", env_extra={"TRITON_INTERPRET": "1"})
    assert code == 0, doc
    results = result_cases(root)
    assert sorted(results) == ["relu_gate.1", "row_sum.1"]
    assert all(c["status"] == "ok" for c in results.values()), {k: (c["status"], c.get("error")) for k, c in results.items()}
    plans = plan_cases(root)
    assert all(not c["trace"]["left_out"] for c in plans.values()), {k: c["trace"]["left_out"] for k, c in plans.items()}
    for kernel in (root / "kernels").glob("names_and_helpers.*.py"):
        text = kernel.read_text()
        assert "def maximum" not in text and "logged" not in text and "SigmoidFunction" not in text, text


def test_a_copied_plain_helper_leaves_its_decorators_behind(tmp_path, interp_python):
    """What the kernel's file gets of a plain function or class: from its `def`/`class` line on,
    whatever decorators of the program's it had (they are not in that file)."""
    (tmp_path / "helpers_mod.py").write_text(
        "import functools\n\ndef logged(f):\n    return f\n\n\n@logged\n@functools.lru_cache(None)\n"
        "def block_for(n):\n    return 64 if n > 1000 else 16\n\n\n@logged\nclass Cfg:\n    BLOCK = 32\n\n\n"
        "def plain(x):\n    return x\n")
    script = ("import json, sys; sys.path.insert(0, sys.argv[1]); import helpers_mod as m\n"
              "from reprokit.trace.inprogram.extract import undecorated_source as u\n"
              "print(json.dumps([u(m.block_for.__wrapped__), u(m.Cfg), u(m.plain)]))")
    p = subprocess.run([interp_python, "-c", script, str(tmp_path)], capture_output=True, text=True, check=False,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=120)
    assert p.returncode == 0, p.stderr
    fn, cls, plain = json.loads(p.stdout)
    assert fn == "def block_for(n):\n    return 64 if n > 1000 else 16\n"
    assert cls == "class Cfg:\n    BLOCK = 32\n"
    assert plain == "def plain(x):\n    return x\n"


def test_names_a_kernels_defaults_read_are_in_its_file(tmp_path, interp_python):
    """gemlite 0.6.0's GEMV kernels default a constexpr to a module-level name: the kernel's file
    had kept `= BLOCK` and never defined it (capture_failed, NameError, on every case)."""
    code, doc, root = trace(tmp_path, interp_python, "defaults.py")
    assert code == 0, doc
    assert {k: c["status"] for k, c in result_cases(root).items()} == {"copy_scaled.1": "ok"}
    text = (root / "kernels" / "defaults.copy_scaled.py").read_text()
    assert "BLOCK = 64" in text and "SCALE = 2.0" in text, text


def test_the_traced_program_imports_what_it_imports_plain(tmp_path, interp_python):
    """tests/data/trace/shadowing.py has a `kernels` package of its own on its PYTHONPATH and no
    `tests` or `scripts`: traced, it gets its own and finds neither, as it does plain (before,
    reprokit's checkout stood on its PYTHONPATH ahead of the user's, and its folders won)."""
    own = tmp_path / "own" / "kernels"
    own.mkdir(parents=True)
    (own / "__init__.py").write_text('WHO = "the program\'s own"\n')
    env = {"PYTHONPATH": str(own.parent)}
    plain = subprocess.run([interp_python, str(PROGRAMS / "shadowing.py")], env={**os.environ, **env,
                           "TRITON_INTERPRET": "1"}, capture_output=True, text=True, check=False, timeout=300)
    assert plain.returncode == 0, plain.stderr[-2000:]
    code, doc, root = trace(tmp_path, interp_python, "shadowing.py", env_extra=env)
    assert code == 0, doc
    assert [c["status"] for c in result_cases(root).values()] == ["ok"]


def test_a_chosen_config_no_gpu_of_the_profile_could_launch_is_not_what_a_replay_runs(tmp_path, interp_python):
    """tests/data/trace/unlaunchable_choice.py (mamba-ssm's pattern): the interpreter's trace keeps
    the first config, which needs 294912 B of shared memory; the capture records that it does not
    fit the H100, and a replay runs the call's config that fits instead, and says so."""
    from reprokit.bundle.reader import open_bundle
    from reprokit.run.replay import request

    code, doc, root = trace(tmp_path, interp_python, "unlaunchable_choice.py")
    assert code == 0, doc
    plans, results = plan_cases(root), result_cases(root)
    assert {i: (c["trace"]["autotune"]["chosen"], results[i]["launch"]["fits"]) for i, c in plans.items()} == {
        "mm.1": (True, False), "mm.2": (False, True)}
    assert results["mm.1"]["launch"]["shared_bytes"] > results["mm.1"]["launch"]["limit"]
    req = request(open_bundle(Path(doc["bundle"])))
    assert req.plan.ids == ["mm.2"] and req.instead == (("mm.1", "mm.2"),)
    every = request(open_bundle(Path(doc["bundle"])), candidates=True)
    assert every.plan.ids == ["mm.1", "mm.2"] and every.instead == ()


def test_two_kernels_of_one_name_are_two_families(tmp_path, interp_python):
    """tests/data/trace/twins: `scale` in first.py and in second.py (triton-kernels 0.1.0's two
    `add_vectors`): before, one family `scale` with ids .1 and .2; now each its module's."""
    code, doc, root = trace(tmp_path, interp_python, "twins/prog.py")
    assert code == 0, doc
    plans = plan_cases(root)
    assert {i: (c["family"], c["kernel"]["file"]) for i, c in plans.items()} == {
        "first.scale.1": ("first.scale", "first.scale.py"), "second.scale.1": ("second.scale", "second.scale.py")}
    assert {c["status"] for c in result_cases(root).values()} == {"ok"}
