"""Declared calls (docs/user-cases.md) on real pinned releases 3.0-3.9, compile-only: kernel files
written as public Triton kernels are (autotune, heuristics, None constexprs, a helper @jit, torch
and numpy imported and the driver asked at module level; host and device tensor descriptors,
block pointers), specialised by each release's own JIT and compiled through the harness's one
path; their TMA counts against a triton.compile whose specialisation is written here by hand."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import jsonschema
import pytest

from reprokit.run.capture import capture
from reprokit.suite import build_plan
from tests.conftest import by_id
from tests.helpers.runs import planned

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
KERNELS = ROOT / "tests" / "data" / "usercases"
RELEASES = ("triton-3.0-cu129", "triton-3.1-cu129", "triton-3.2-cu129", "triton-3.3-cu129", "triton-3.4-cu129",
            "triton-3.5-cu130", "triton-3.6-cu130", "triton-3.7-cu130", "triton-3.8-cu130", "triton-3.9-cu132")
MINOR = {s: int(s.split("-")[1].split(".")[1]) for s in RELEASES}


def T(shape, dtype="float16", **kw):
    return {"tensor": shape, "dtype": dtype, **kw}


def D(shape, block, dtype="float16"):
    return {"descriptor": T(shape, dtype), "block": block}


def softmax_args(n: int, *, align: int = 16, out_dtype: str = "float16", **over) -> dict:
    args = {"x_ptr": T([4096, n], align=align), "out_ptr": T([4096, n], out_dtype), "M": 4096, "N": n,
            "stride_xm": n, "stride_om": n, "scale": 0.5, "BLOCK_M": 16, "BLOCK_N": 1024, "SCALE2": 1.0,
            "USE_EXP2": True, "ACT": "relu", "OUT_DTYPE": {"dtype": out_dtype}, "MASK": {"none": True}}
    return {**args, **over}


MATMUL_ARGS = {"a_desc": D([4096, 4096], [1, 1]), "b_desc": D([4096, 4096], [1, 1]),
               "c_desc": D([4096, 4096], [1, 1]), "bias_ptr": {"none": True}, "M": 4096, "N": 4096, "K": 4096,
               "NUM_SMS": 132}
ADD_ARGS = {"x_ptr": T([1024, 1024]), "y_ptr": T([1024, 1024]), "out_ptr": T([1024, 1024]), "M": 1024, "N": 1024,
            "BLOCK_M": 64, "BLOCK_N": 64}

CASES = [
    {"id": "softmax.even", "kind": "call", "file": "block_ptr_softmax.py", "function": "scaled_softmax",
     "call": {"args": softmax_args(1024), "grid": [256], "options": {"num_warps": 4}}, "expect": None},
    {"id": "softmax.odd", "kind": "call", "file": "block_ptr_softmax.py", "function": "scaled_softmax",
     "call": {"args": softmax_args(1000, align=8, out_dtype="bfloat16", SCALE2=2.0, USE_EXP2=False, ACT="square"),
              "grid": [256], "options": {"num_warps": 8, "num_stages": 2}}, "expect": "no-tma"},
    {"id": "matmul.persistent", "kind": "call", "file": "persistent_matmul.py", "function": "matmul_tma_persistent",
     "call": {"args": MATMUL_ARGS, "grid": [132]}, "configs": [0, 2], "expect": "sass:UTMALDG"},
    {"id": "add.devdesc", "kind": "call", "file": "persistent_matmul.py", "function": "add_device_descriptor",
     "call": {"args": ADD_ARGS, "grid": [16, 16]}, "expect": "regs<=128"},
    # as `reprokit init`'s plan writes a case: the kernel under `kernel`, the JIT's fields left empty
    {"id": "expmm", "kind": "call", "family": "experimental_tma_matmul", "control": "call",
     "kernel": {"file": "experimental_tma_matmul.py", "function": "matmul_kernel_tma"},
     "call": {"args": {"a_desc_ptr": T([128], "int8"), "b_desc_ptr": T([128], "int8"), "c_desc_ptr": T([128], "int8"),
                       "M": 4096, "N": 4096, "K": 4096, "FP8_OUTPUT": False}, "grid": [1024], "options": {}},
     "signature": {}, "constexprs": {}, "divisible_by_16": [], "num_warps": 4, "num_stages": 3, "requires": [],
     "gated_by": None, "timeout_s": 300.0, "configs": "all", "expect": "tma"},
]


def call_plan(config, stack):
    return build_plan(config.gpu("h100"), stack.pins(), only="block_ptr.p0").with_cases([dict(c) for c in CASES])


@pytest.fixture(scope="module", params=RELEASES)
def release(request, config, venv_executor, stack_ready, tmp_path_factory):
    stack = stack_ready(request.param)
    out = tmp_path_factory.mktemp("calls") / request.param
    cap = capture(stack, venv_executor, out, *planned(config.gpu("h100"), workers=2, plan=call_plan(config, stack),
                                                  kernels=KERNELS))
    return request.param, stack, cap


def _schema(name: str) -> dict:
    return json.loads((ROOT / "schemas" / f"{name}.schema.json").read_text())


def test_every_declared_call_compiles_or_is_unsupported_never_a_harness_error(release):
    stack, _, cap = release
    cases = by_id(cap)
    assert not [c["id"] for c in cap.results.to_json()["cases"] if c["status"] == "harness_error"], cases
    blockptr_ok = MINOR[stack] <= 8  # 3.9 removed block pointers
    for cid in ("softmax.even", "softmax.odd"):
        assert cases[cid]["status"] == ("ok" if blockptr_ok else "unsupported"), cases[cid]
    for cid in ("expmm.cfg0", "expmm.cfg1"):  # 3.0-era descriptors: TMA up to 3.3, gone after
        if MINOR[stack] <= 3:
            assert cases[cid]["status"] == "ok" and cases[cid]["verdict"] == "tma" and cases[cid]["met"], cases[cid]
        else:
            assert cases[cid]["status"] in ("compile_error", "unsupported"), cases[cid]
    if MINOR[stack] >= 4:
        # autotune: the two configs the call picked, each its own case
        assert {"matmul.persistent.cfg0", "matmul.persistent.cfg2"} <= set(cases)
        assert "matmul.persistent" not in cases and "matmul.persistent.cfg1" not in cases
        for cid in ("matmul.persistent.cfg0", "matmul.persistent.cfg2", "add.devdesc"):
            assert cases[cid]["status"] == "ok" and cases[cid]["verdict"] == "tma", cases[cid]
    else:
        # the file imports triton.tools.tensor_descriptor, which 3.0-3.3 lack
        assert cases["matmul.persistent"]["status"] == "unsupported"
        assert "tensor_descriptor" in cases["matmul.persistent"]["error"]


def test_the_plan_beside_the_results_names_the_expanded_cases_and_both_validate(release):
    _, _, cap = release
    plan = json.loads((cap.out_dir / "plan.json").read_text())
    assert [c["id"] for c in plan["cases"]] == [c["id"] for c in cap.results.to_json()["cases"]]
    # every call settled: expanded (autotune names its config), not expanded (null), or its file
    # did not load on this release (left for a release that loads it)
    loaded = {c["id"] for c in cap.results.to_json()["cases"] if "lacks triton.tools" not in (c.get("error") or "")}
    for c in plan["cases"]:
        assert ("autotune" in c) == (c["id"] in loaded), c["id"]
        if c["id"].startswith("softmax."):
            assert c["autotune"] is None
    jsonschema.validate(plan, _schema("plan"))
    jsonschema.validate(cap.results.to_json(), _schema("results"))


def test_specialisation_is_what_the_jit_derives_from_the_call(release):
    stack, _, cap = release
    if MINOR[stack] > 8:
        pytest.skip("block pointers removed in 3.9")
    even, odd = by_id(cap)["softmax.even"]["call"], by_id(cap)["softmax.odd"]["call"]
    # sizes and pointers divisible by 16 are hinted; the 8-byte-aligned pointer, N=1000 and its stride are not
    assert {"x_ptr", "out_ptr", "M", "N", "stride_xm", "stride_om"} <= set(even["divisibility"])
    assert "x_ptr" not in odd["divisibility"] and "N" not in odd["divisibility"]
    assert "stride_xm" not in odd["divisibility"]
    assert even["signature"]["x_ptr"] == "*fp16" and odd["signature"]["out_ptr"] == "*bf16"
    assert even["signature"]["scale"] == "fp32"
    assert even["constexprs"]["ACT"] == "relu" and even["constexprs"]["USE_EXP2"] is True
    assert even["constexprs"]["SCALE2"] == 1.0 and even["constexprs"]["OUT_DTYPE"] == {"dtype": "float16"}
    assert even["constexprs"]["MASK"] is None  # None: a constant in every release
    assert even["heuristics"] == {"EVEN_N": True} and odd["heuristics"] == {"EVEN_N": False}
    assert even["options"]["num_warps"] == 4 and odd["options"]["num_warps"] == 8


def test_expectations_give_met_or_not_and_none_without_one(release):
    stack, _, cap = release
    cases = by_id(cap)
    if MINOR[stack] <= 8:
        assert cases["softmax.even"]["met"] is None and cases["softmax.even"]["expect"] is None
        assert cases["softmax.odd"]["met"] is True  # no-tma, seen
    if MINOR[stack] >= 4:
        c = cases["matmul.persistent.cfg0"]
        assert c["met"] is True and c["expect_seen"]["sass:UTMALDG"] >= 1
        assert cases["add.devdesc"]["met"] is (cases["add.devdesc"]["metadata"]["registers"] <= 128)
        # the autotuner's pre_hook set the descriptors' block shapes from the config
        assert c["call"]["signature"]["a_desc"] == "tensordesc<fp16[128, 64]>"
        assert cases["matmul.persistent.cfg2"]["call"]["signature"]["c_desc"] == "tensordesc<fp16[64, 64]>"


# --- against a compile whose specialisation this test writes by hand ------------------------

HAND = {
    # case id -> (kernel file, function, signature, constexprs (Python source), divisible by 16, options)
    "softmax.even": ("block_ptr_softmax.py", "scaled_softmax",
                     {"x_ptr": "*fp16", "out_ptr": "*fp16", "M": "i32", "N": "i32", "stride_xm": "i32",
                      "stride_om": "i32", "scale": "fp32"},
                     ("{'BLOCK_M': 16, 'BLOCK_N': 1024, 'EVEN_N': True, 'SCALE2': 1.0, 'USE_EXP2': True, "
                      "'ACT': 'relu', 'OUT_DTYPE': tl.float16, 'MASK': None}"),
                     ["x_ptr", "out_ptr", "M", "N", "stride_xm", "stride_om"], {"num_warps": 4, "num_stages": 3}),
    "matmul.persistent.cfg0": ("persistent_matmul.py", "matmul_tma_persistent",
                               {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[128, 64]>",
                                "c_desc": "tensordesc<fp16[128, 128]>", "M": "i32", "N": "i32", "K": "i32"},
                               ("{'bias_ptr': None, 'BLOCK_M': 128, 'BLOCK_N': 128, 'BLOCK_K': 64, 'GROUP_M': 8, "
                                "'EVEN_K': True, 'NUM_SMS': 132, 'HAS_BIAS': None}"),
                               ["M", "N", "K"], {"num_warps": 8, "num_stages": 3}),
    "expmm.cfg0": ("experimental_tma_matmul.py", "matmul_kernel_tma",
                   {"a_desc_ptr": "*i8", "b_desc_ptr": "*i8", "c_desc_ptr": "*i8", "M": "i32", "N": "i32", "K": "i32"},
                   "{'BLOCK_M': 128, 'BLOCK_N': 128, 'BLOCK_K': 64, 'FP8_OUTPUT': False}",
                   ["a_desc_ptr", "b_desc_ptr", "c_desc_ptr", "M", "N", "K"], {"num_warps": 8, "num_stages": 3}),
    "add.devdesc": ("persistent_matmul.py", "add_device_descriptor",
                    {"x_ptr": "*fp16", "y_ptr": "*fp16", "out_ptr": "*fp16", "M": "i32", "N": "i32"},
                    "{'BLOCK_M': 64, 'BLOCK_N': 64}", ["x_ptr", "y_ptr", "out_ptr", "M", "N"],
                    {"num_warps": 4, "num_stages": 3}),
}

_HAND_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from reprokit.common import oracle
from reprokit.harness import compat, standin
standin.ensure_torch(); standin.ensure_numpy()
standin.install_driver({{"capability": 90, "sm_count": 132, "smem_per_block": 232448}})
import triton, triton.language as tl
from triton.runtime.jit import JITFunction
from reprokit.harness.toolbox import load_module
fn = getattr(load_module({kernels!r}, {file!r}), {function!r})
while not isinstance(fn, JITFunction):
    fn = fn.fn
src = compat.make_source(fn, {sig!r}, {consts}, {div!r})
k = triton.compile(src, target=compat.gpu_target(90), options={options!r})
counts, _ = oracle.scan_all({{lv: k.asm[lv] for lv in ("ttir", "ttgir", "llir", "ptx")}})
print(json.dumps({{"tma": counts, "shared": int(k.metadata.shared)}}))
"""


@pytest.mark.parametrize("cid", sorted(HAND))
def test_tma_counts_equal_a_compile_specialised_by_hand(release, cid, tmp_path):
    stack, _, cap = release
    rec = by_id(cap).get(cid)
    if rec is None or rec["status"] != "ok":
        pytest.skip(f"{cid} does not compile on {stack}")
    file, function, sig, consts, div, options = HAND[cid]
    script = _HAND_SCRIPT.format(root=str(ROOT), kernels=str(KERNELS), file=file, function=function, sig=sig,
                                 consts=consts, div=div, options=options)
    env = {**os.environ, "HOME": str(tmp_path), "TRITON_CACHE_DIR": str(tmp_path / "cache")}
    p = subprocess.run([_venv_python(stack), "-c", script], capture_output=True, text=True, env=env, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    hand = json.loads(p.stdout.strip().splitlines()[-1])
    assert {lv: rec["tma"][lv] for lv in hand["tma"]} == hand["tma"], (stack, cid)
    assert rec["metadata"]["shared_bytes"] == hand["shared"], (stack, cid)


def _venv_python(stack: str) -> str:
    from reprokit.config import load_config
    from reprokit.executors.venv import VenvExecutor
    from tests.helpers.runs import host

    return VenvExecutor(host=host()).prepare(load_config().stack(stack))["python"]


_KEY_SCRIPT = """
import json, sys
sys.path.insert(0, {root!r})
from reprokit.harness import call, standin
standin.ensure_torch(); standin.ensure_numpy()
profile = {{"capability": 90, "sm_count": 132, "smem_per_block": 232448}}
standin.install_driver(profile)
from reprokit.harness.toolbox import load_module
fn = load_module({kernels!r}, "block_ptr_softmax.py").scaled_softmax
calls = json.loads(sys.argv[1])
print(json.dumps([list(call.spec_key(fn, c)) for c in calls]))
"""


def test_spec_key_is_one_for_calls_the_jit_compiles_once_and_two_otherwise(release, tmp_path):
    stack, _, _ = release
    calls = [softmax_args(1024), softmax_args(2048, stride_xm=2048, stride_om=2048),  # every size still % 16
             softmax_args(1024, M=4001),  # M no longer divisible by 16
             softmax_args(1024, align=8),  # an 8-byte-aligned input
             softmax_args(1024, M=4000, scale=0.25)]  # a runtime float and a size % 16: same kernel
    script = _KEY_SCRIPT.format(root=str(ROOT), kernels=str(KERNELS))
    env = {**os.environ, "HOME": str(tmp_path)}
    p = subprocess.run([_venv_python(stack), "-c", script, json.dumps([{"args": a} for a in calls])],
                       capture_output=True, text=True, env=env, timeout=300, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    keys = [tuple(k) for k in json.loads(p.stdout.strip().splitlines()[-1])]
    assert keys[0] == keys[1] == keys[4]
    assert len({keys[0], keys[2], keys[3]}) == 3


def test_a_plan_written_on_one_release_replays_on_another_without_expanding_again(
        release, config, venv_executor, stack_ready, tmp_path):
    """The plan beside 3.6's results (autotune expanded) run as it stands on 3.4 and 3.9: the
    same cases, each specialised by that release's own JIT."""
    stack, _, cap = release
    if stack != "triton-3.6-cu130":
        pytest.skip("one source release is enough")
    plan = json.loads((cap.out_dir / "plan.json").read_text())
    for other in ("triton-3.4-cu129", "triton-3.9-cu132"):
        st = stack_ready(other)
        again = capture(st, venv_executor, tmp_path / other,
                        *planned(config.gpu("h100"), workers=2, plan={**plan, "stack": st.pins()}, kernels=KERNELS))
        assert [c["id"] for c in again.results.to_json()["cases"]] == [c["id"] for c in plan["cases"]]
        assert json.loads((again.out_dir / "plan.json").read_text())["cases"] == plan["cases"]
        assert by_id(again)["matmul.persistent.cfg2"]["call"]["autotune"]["config"] == 2
        assert not [c["id"] for c in again.results.to_json()["cases"] if c["status"] == "harness_error"]


def test_a_capture_of_declared_calls_packs_into_a_bundle_that_verifies_and_reports(release, tmp_path):
    """Schemas, the re-counted TMA markers, the re-judged verdicts (expectations included) and
    the plan's cases against the results' all hold in the bundle."""
    from reprokit.bundle.reader import verify
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions
    from reprokit.report import render

    stack, _, cap = release
    if stack not in ("triton-3.0-cu129", "triton-3.6-cu130"):
        pytest.skip("two releases are enough")
    bundle = write_bundle(cap.out_dir, cap.origin(), BundleOptions(tmp_path))
    assert verify(bundle) == []
    md = render([bundle], "md")
    assert "softmax.even" in md


BAD = [
    # the JIT refuses a call that misses an argument: what a real launch meets
    {"id": "bad.missing-arg", "kind": "call", "file": "persistent_matmul.py", "function": "add_device_descriptor",
     "call": {"args": {k: v for k, v in ADD_ARGS.items() if k != "N"}, "grid": [1]}, "expect": "tma"},
    # an option this release does not know
    {"id": "bad.option", "kind": "call", "file": "persistent_matmul.py", "function": "add_device_descriptor",
     "call": {"args": ADD_ARGS, "grid": [1], "options": {"num_warpz": 4}}, "expect": None},
    # a dtype no torch has: the call itself is malformed
    {"id": "bad.dtype", "kind": "call", "file": "persistent_matmul.py", "function": "add_device_descriptor",
     "call": {"args": {**ADD_ARGS, "x_ptr": T([1024, 1024], "float13")}, "grid": [1]}, "expect": None},
    {"id": "bad.import", "kind": "call", "file": "broken_import.py", "function": "never",
     "call": {"args": {"x_ptr": T([16])}}, "expect": None},
    {"id": "bad.no-such-kernel", "kind": "call", "file": "persistent_matmul.py", "function": "nope",
     "call": {"args": {}}, "expect": None},
    # configs that name none of the autotuner's: the case stays, and says so
    {"id": "bad.configs", "kind": "call", "file": "experimental_tma_matmul.py", "function": "matmul_kernel_tma",
     "call": {"args": {"a_desc_ptr": T([128], "int8"), "b_desc_ptr": T([128], "int8"), "c_desc_ptr": T([128], "int8"),
                       "M": 64, "N": 64, "K": 64, "FP8_OUTPUT": False}}, "configs": [7], "expect": None},
    # a good one beside them still compiles
    {"id": "good", "kind": "call", "file": "persistent_matmul.py", "function": "add_device_descriptor",
     "call": {"args": ADD_ARGS, "grid": [16, 16]}, "expect": "smem<=100"},
]


def test_bad_calls_each_get_a_clear_result_and_the_rest_still_compile(config, venv_executor, stack_ready, tmp_path):
    st = stack_ready("triton-3.6-cu130")
    plan = build_plan(config.gpu("h100"), st.pins(), only="block_ptr.p0").with_cases([dict(c) for c in BAD])
    cap = capture(st, venv_executor, tmp_path / "bad", *planned(config.gpu("h100"), workers=2, plan=plan, kernels=KERNELS))
    got = by_id(cap)
    assert got["bad.missing-arg"]["status"] == "compile_error"
    assert "the JIT refused the call" in got["bad.missing-arg"]["error"] and "N" in got["bad.missing-arg"]["error"]
    assert got["bad.missing-arg"]["met"] is False  # "tma" was expected and cannot be met
    assert got["bad.option"]["status"] == "compile_error" and "num_warpz" in got["bad.option"]["error"]
    assert got["bad.option"]["met"] is None  # no expectation: never "not met"
    assert got["bad.dtype"]["status"] == "harness_error" and "float13" in got["bad.dtype"]["error"]
    assert got["bad.import"]["status"] == "harness_error" and "half-edited" in got["bad.import"]["error"]
    assert got["bad.no-such-kernel"]["status"] == "harness_error" and "nope" in got["bad.no-such-kernel"]["error"]
    assert got["bad.configs"]["status"] == "harness_error" and "none of its 2 configs" in got["bad.configs"]["error"]
    assert got["good"]["status"] == "ok" and got["good"]["met"] is False  # 8200 B of shared memory > 100
    assert "smem " in got["good"]["reason"] and "expected smem<=100" in got["good"]["reason"]


def test_suite_cases_beside_declared_calls_are_judged_as_without_them(config, venv_executor, stack_ready, tmp_path):
    """One plan, the suite's cases and a user's: the stand-in torch and driver the calls need
    leave the suite's compiles and verdicts as they are."""
    st = stack_ready("triton-3.6-cu130")
    suite = build_plan(config.gpu("h100"), st.pins(), only="block_ptr.p0,tensor_descriptor.p0,host_descriptor.p0")
    plan = suite.with_cases([*suite.cases, dict(CASES[3])])
    kernels = _merge_kernels(tmp_path / "kernels")
    cap = capture(st, venv_executor, tmp_path / "mixed", *planned(config.gpu("h100"), workers=2, plan=plan, kernels=kernels))
    got = by_id(cap)
    assert got["block_ptr.p0"]["verdict"] == "no-tma" and got["block_ptr.p0"]["met"] is False
    for cid in ("tensor_descriptor.p0", "host_descriptor.p0"):
        assert got[cid]["verdict"] == "tma" and got[cid]["met"] is True, got[cid]["reason"]
    assert got["add.devdesc"]["status"] == "ok" and got["add.devdesc"]["verdict"] == "tma"


def _merge_kernels(dest: Path) -> Path:
    """The suite's kernels folder and the user's files in one folder, as a project's bundle has them."""
    import shutil

    shutil.copytree(ROOT / "kernels", dest)
    for f in KERNELS.glob("*.py"):
        shutil.copyfile(f, dest / f.name)
    return dest


@pytest.mark.parametrize("stack", ["triton-3.0-cu129", "triton-3.6-cu130"])
def test_a_kernel_file_imports_the_modules_beside_it(stack, config, stack_ready, tmp_path):
    """The harness run directly on a kernels folder that holds the helper module too (what a
    project's bundle carries): the kernel's own imports resolve, and the IR names the files by
    their place under kernels/, never by a host path."""
    import shutil

    st = stack_ready(stack)
    shutil.copytree(KERNELS / "pkg", tmp_path / "kernels" / "pkg")
    case = {"id": "copy2d", "kind": "call", "file": "pkg/copy2d.py", "function": "copy2d", "expect": "no-tma",
            "call": {"args": {"src": T([1000, 512]), "dst": T([1000, 512]), "M": 1000, "N": 512}, "grid": [64]}}
    plan = build_plan(config.gpu("h100"), st.pins(), only="block_ptr.p0").with_cases([case]).to_json()
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path)}
    p = subprocess.run([_venv_python(stack), "-m", "reprokit.harness", "--plan", "plan.json",
                        "--kernels", "kernels", "--out", "out"], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=600, check=False)
    assert p.returncode == 0, p.stderr[-3000:]
    (rec,) = json.loads((tmp_path / "out" / "results.json").read_text())["cases"]
    assert rec["status"] == "ok" and rec["met"] is True, rec.get("error")
    assert rec["call"]["constexprs"] == {"BLOCK_M": 128, "BLOCK_N": 64, "GROUP_M": 8}  # defaults, one imported
    ttir = (tmp_path / "out" / rec["artifacts"]["ttir"]).read_text()
    assert "kernels/pkg/_tiles.py" in ttir and str(tmp_path) not in ttir


def test_a_bundle_of_declared_calls_replays_and_diffs_from_the_command_line(release, tmp_path):
    """`reprokit replay` of a 3.6 bundle of calls on 3.4 (compile-only), then `diff`: both exit by
    their documented rule (1: a verdict or metric moved between the releases) and the new bundle holds
    every case, each specialised again by 3.4's JIT."""
    import sys

    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions

    stack, _, cap = release
    if stack != "triton-3.6-cu130":
        pytest.skip("one source release is enough")
    bundle = write_bundle(cap.out_dir, cap.origin(), BundleOptions(tmp_path / "src"))

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "reprokit", *args], capture_output=True, text=True,
                              cwd=ROOT, timeout=900, check=False)

    p = cli("replay", str(bundle), "--stacks", "triton-3.4-cu129", "--executor", "venv", "--out",
            str(tmp_path / "replays"), "--json")
    # 1: moved. 3.4 compiles the same calls to other IR and resources (add.devdesc's registers:
    # 72 on 3.4, 34 on 3.6), which is what the grid is for
    assert p.returncode == 1, p.stderr[-2000:]
    new = Path(json.loads(p.stdout)["stacks"][0]["bundle"])
    shown = json.loads(cli("show", str(new), "--json").stdout)
    assert {c["id"] for c in shown["cases"]} == {c["id"] for c in cap.results.to_json()["cases"]}
    assert {c["id"]: c["status"] for c in shown["cases"]}["matmul.persistent.cfg0"] == "ok"
    d = cli("diff", str(bundle), str(new))
    assert d.returncode == 1, d.stderr[-2000:]
    assert "matmul.persistent.cfg0" in d.stdout
