"""Triton's own public tutorials (tests/data/trace/public/: vector add, fused softmax, autotuned
matmul, low-memory dropout, layer norm forward and backward, libdevice, grouped GEMM) and
kernels written the way Liger-Kernel writes them, traced
once each under Triton 3.6's interpreter with the CPU torch, as a user would trace them.

What each bundle must hold is written here by hand from the tutorial's own calls: the distinct
specialisations, and for each the signature, constexprs, divisibility-by-16 hints and options
of a direct `triton.compile` this file spells out. The captured TTIR must have the same op
counts as that compile's, and the same TMA counts at every level. The kernels are taken from the
programs' files by this file's own reading of them (their `@triton.jit` functions, autotune
decorators dropped), never by the code under test. Programs the interpreter cannot run to the
end must still give a clear, recorded outcome (docs/trace.md lists them with the reason)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.errors import ProgramFailed, UsageError
from tests.integration.test_trace import ROOT, interp_python, interp_release, plan_cases, result_cases  # noqa: F401

pytestmark = pytest.mark.triton

PUBLIC = ROOT / "tests" / "data" / "trace" / "public"
_F32, _F16, _I32 = "*fp32", "*fp16", "*i32"
_C = "constexpr"

# program -> (its exit under trace, {case id: (kernel, signature, constexprs by name, parameters
# hinted divisible by 16, num_warps, num_stages)}), from each tutorial's own calls.
EXPECTED: dict = {
    # n = 1000 (not a multiple of 16), then 4096
    "vector_add.py": (0, {
        "add_kernel.1": ("add_kernel", {"x_ptr": _F32, "y_ptr": _F32, "output_ptr": _F32, "n_elements": "i32",
                                        "BLOCK_SIZE": _C}, {"BLOCK_SIZE": 1024}, ["x_ptr", "y_ptr", "output_ptr"], 4, 3),
        "add_kernel.2": ("add_kernel", {"x_ptr": _F32, "y_ptr": _F32, "output_ptr": _F32, "n_elements": "i32",
                                        "BLOCK_SIZE": _C}, {"BLOCK_SIZE": 1024},
                         ["x_ptr", "y_ptr", "output_ptr", "n_elements"], 4, 3)}),
    # two configs tuned at (64, 32, 64); the leaky_relu call reuses the first (same key); fp8 e5m2
    # at (64, 64, 64), a new key: both configs again, B transposed (stride_bk 1, stride_bn 64)
    "matmul_autotuned.py": (0, {
        f"matmul_kernel.{i}": ("matmul_kernel", {
            "a_ptr": ab, "b_ptr": ab, "c_ptr": _F16, "M": "i32", "N": "i32", "K": "i32", "stride_am": "i32",
            "stride_ak": _C, **({"stride_bk": _C, "stride_bn": "i32"} if ab == "*fp8e5" else
                                {"stride_bk": "i32", "stride_bn": _C}), "stride_cm": "i32", "stride_cn": _C,
            "BLOCK_SIZE_M": _C, "BLOCK_SIZE_N": _C, "BLOCK_SIZE_K": _C, "GROUP_SIZE_M": _C, "ACTIVATION": _C},
            {"stride_ak": 1, "stride_bk" if ab == "*fp8e5" else "stride_bn": 1, "stride_cn": 1, "BLOCK_SIZE_M": bm,
             "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8, "ACTIVATION": act},
            ["a_ptr", "b_ptr", "c_ptr", "M", "N", "K", "stride_am", "stride_bn" if ab == "*fp8e5" else "stride_bk",
             "stride_cm"], warps, stages)
        for i, ab, bm, act, warps, stages in ((1, _F16, 32, "", 8, 3), (2, _F16, 64, "", 4, 4),
                                              (3, _F16, 32, "leaky_relu", 8, 3), (4, "*fp8e5", 32, "", 8, 3),
                                              (5, "*fp8e5", 64, "", 4, 4))}),
    # seed 123 and seed 512: two specialisations (512 is a multiple of 16); p a float argument
    "low_memory_dropout.py": (0, {
        "k_dropout.1": ("_dropout", {"x_ptr": _F32, "x_keep_ptr": _I32, "output_ptr": _F32, "n_elements": "i32",
                                     "p": "fp32", "BLOCK_SIZE": _C}, {"BLOCK_SIZE": 1024},
                        ["x_ptr", "x_keep_ptr", "output_ptr"], 4, 3),
        **{f"k_seeded_dropout.{i}": ("_seeded_dropout", {"x_ptr": _F32, "output_ptr": _F32, "n_elements": "i32",
                                                          "p": "fp32", "seed": "i32", "BLOCK_SIZE": _C},
                                     {"BLOCK_SIZE": 1024}, ["x_ptr", "output_ptr", *extra], 4, 3)
           for i, extra in ((1, []), (2, ["seed"]))}}),
    # M = 20, N = 64, fp32: BLOCK_SIZE 64, one warp; GROUP_SIZE_M 256 (N <= 1024); the reduction's M = 20
    "layer_norm.py": (0, {
        "k_layer_norm_fwd_fused.1": ("_layer_norm_fwd_fused", {
            "X": _F32, "Y": _F32, "W": _F32, "B": _F32, "Mean": _F32, "Rstd": _F32, "stride": "i32", "N": "i32",
            "eps": "fp32", "BLOCK_SIZE": _C}, {"BLOCK_SIZE": 64},
            ["X", "Y", "W", "B", "Mean", "Rstd", "stride", "N"], 1, 3),
        "k_layer_norm_bwd_dx_fused.1": ("_layer_norm_bwd_dx_fused", {
            "DX": _F32, "DY": _F32, "DW": _F32, "DB": _F32, "X": _F32, "W": _F32, "Mean": _F32, "Rstd": _F32,
            "Lock": _I32, "stride": "i32", "N": "i32", "GROUP_SIZE_M": _C, "BLOCK_SIZE_N": _C},
            {"GROUP_SIZE_M": 256, "BLOCK_SIZE_N": 64},
            ["DX", "DY", "DW", "DB", "X", "W", "Mean", "Rstd", "Lock", "stride", "N"], 1, 3),
        "k_layer_norm_bwd_dwdb.1": ("_layer_norm_bwd_dwdb", {
            "DW": _F32, "DB": _F32, "FINAL_DW": _F32, "FINAL_DB": _F32, "M": "i32", "N": "i32", "BLOCK_SIZE_M": _C,
            "BLOCK_SIZE_N": _C}, {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 128},
            ["DW", "DB", "FINAL_DW", "FINAL_DB", "N"], 4, 3)}),
    # compiled by softmax_kernel.warmup(...): 37 x 81 fp32, BLOCK_SIZE 128, 8 warps; num_stages is
    # both a constexpr parameter and the launch option (4: the h100 profile's shared memory > 200000).
    # The interpreter's warmup compiles nothing and returns None, so the program then fails.
    "fused_softmax.py": (ProgramFailed.exit_code, {
        "softmax_kernel.1": ("softmax_kernel", {
            "output_ptr": _F32, "input_ptr": _F32, "input_row_stride": "i32", "output_row_stride": "i32",
            "n_rows": "i32", "n_cols": "i32", "BLOCK_SIZE": _C, "num_stages": _C},
            {"BLOCK_SIZE": 128, "num_stages": 4}, ["output_ptr", "input_ptr"], 8, 4)}),
    # libdevice.asin: the interpreter has no libdevice (it returns None): the first launch fails
    "libdevice_asin.py": (ProgramFailed.exit_code, {
        "asin_kernel.1": ("asin_kernel", {"x_ptr": _F32, "y_ptr": _F32, "n_elements": "i32", "BLOCK_SIZE": _C},
                          {"BLOCK_SIZE": 1024}, ["x_ptr", "y_ptr"], 4, 3)}),
    # NUM_SM from torch.cuda.get_device_properties (the stand-in's: the h100 profile's 132 SMs);
    # matrices as a tensor of int64 addresses; two configs tuned at group_size 2 (not divisible)
    "grouped_gemm.py": (0, {
        f"grouped_matmul_kernel.{i}": ("grouped_matmul_kernel", {
            "group_a_ptrs": "*i64", "group_b_ptrs": "*i64", "group_c_ptrs": "*i64", "group_gemm_sizes": _I32,
            "g_lds": _I32, "group_size": "i32", "NUM_SM": _C, "BLOCK_SIZE_M": _C, "BLOCK_SIZE_N": _C,
            "BLOCK_SIZE_K": _C}, {"NUM_SM": sms, "BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32},
            ["group_a_ptrs", "group_b_ptrs", "group_c_ptrs", "group_gemm_sizes", "g_lds"], 4, 3)
        for i, sms in ((1, 4), (2, 132))}),
    # host descriptors made with a [1, 1] block that each config's pre_hook overwrites: the
    # specialisations carry the configs' blocks (64x64x32 then 32x64x64), M = N = K = 64
    "tma_matmul_prehook.py": (0, {
        f"matmul_kernel_tma.{i}": ("matmul_kernel_tma", {
            "a_desc": f"tensordesc<fp16[{bm}, {bk}]>", "b_desc": f"tensordesc<fp16[{bn}, {bk}]>",
            "c_desc": f"tensordesc<fp16[{bm}, {bn}]>", "M": "i32", "N": "i32", "K": "i32", "BLOCK_SIZE_M": _C,
            "BLOCK_SIZE_N": _C, "BLOCK_SIZE_K": _C, "GROUP_SIZE_M": _C, "FP8_OUTPUT": _C, "WARP_SPECIALIZE": _C},
            {"BLOCK_SIZE_M": bm, "BLOCK_SIZE_N": bn, "BLOCK_SIZE_K": bk, "GROUP_SIZE_M": 8, "FP8_OUTPUT": False,
             "WARP_SPECIALIZE": False}, ["M", "N", "K"], warps, stages)
        for i, bm, bn, bk, stages, warps in ((1, 64, 64, 32, 3, 4), (2, 32, 64, 64, 4, 8))}),
    # extern_libs= as the libdevice tutorial passes it (the dict must reach the capture)
    "../extern_libs.py": (0, {
        "add_one.1": ("add_one", {"x_ptr": _F32, "n": "i32", "BLOCK": _C}, {"BLOCK": 64}, ["x_ptr", "n"], 4, 3)}),
    # do_not_specialize=["n"]: n never hinted, so n = 64 and n = 100 are one specialisation
    "../do_not_specialize.py": (0, {
        f"dns.{i}": ("dns", {"x_ptr": _F32, "n": n, "scale": "fp32", "BLOCK": _C}, {"BLOCK": 64}, div, 4, 3)
        for i, n, div in ((1, "i32", ["x_ptr"]), (2, "i32", []), (3, "i64", ["x_ptr"]))}),
    # a warm-up on dtypes alone, then the launch: one case, the launch's
    "../warmup_dtypes.py": (0, {
        "copy.1": ("copy", {"x_ptr": _F32, "y_ptr": _F32, "n": "i32", "BLOCK": _C}, {"BLOCK": 64},
                   ["x_ptr", "y_ptr", "n"], 4, 3)}),
    # written after Liger-Kernel: n_cols a constexpr (100, then 2048 with 8 warps); RMSNorm in
    # two casting modes (stride-1 rows folded to constants); a kernel nested in its launcher
    "liger_style.py": (0, {
        **{f"k_swiglu_forward_kernel.{i}": ("_swiglu_forward_kernel", {
            "a_ptr": _F32, "b_ptr": _F32, "c_ptr": _F32, "stride": "i32", "n_cols": _C, "BLOCK_SIZE": _C},
            {"n_cols": cols, "BLOCK_SIZE": block}, ["a_ptr", "b_ptr", "c_ptr", *extra], warps, 3)
           for i, cols, block, extra, warps in ((1, 100, 128, [], 4), (2, 2048, 2048, ["stride"], 8))},
        **{f"k_rms_norm_forward_kernel.{i}": ("_rms_norm_forward_kernel", {
            "Y_ptr": _F32, "Y_row_stride": "i32", "X_ptr": _F32, "X_row_stride": "i32", "W_ptr": _F32,
            "W_row_stride": _C, "RSTD_ptr": _F32, "RSTD_row_stride": _C, "n_cols": "i32", "eps": "fp32",
            "offset": "fp32", "casting_mode": _C, "BLOCK_SIZE": _C},
            {"W_row_stride": 1, "RSTD_row_stride": 1, "casting_mode": mode, "BLOCK_SIZE": 128},
            ["Y_ptr", "X_ptr", "W_ptr", "RSTD_ptr"], 4, 3) for i, mode in ((1, 0), (2, 1))},
        "kernel.1": ("kernel", {"Y": _F16, "X": _F32, "N": "i32", "BLOCK_SIZE": _C}, {"BLOCK_SIZE": 1024},
                     ["Y", "X"], 4, 3)}),
}

# Compiles EXPECTED's specialisations with triton.compile (3.6's ASTSource form) and prints, for
# each, the TMA counts per IR level (the harness's oracle) and the TTIR's op counts.
_HAND_COMPILE = r"""
import ast, collections, importlib.util, json, re, sys, tempfile
sys.path.insert(0, sys.argv[3])
import triton, triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from reprokit.common import oracle

def jit_only(path, tmp):
    # the program's imports and @triton.jit functions, autotune dropped: never its script part
    # (and its module-level `NAME = tl.constexpr(...)` values; jit functions nested in a function too)
    tree = ast.parse(open(path).read())
    keep = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))
            or isinstance(n, ast.Assign) and "constexpr(" in ast.unparse(n.value)]
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and any("jit" in ast.unparse(d) for d in node.decorator_list):
            node.decorator_list = [d for d in node.decorator_list if "jit" in ast.unparse(d)]
            keep.append(node)
    out = f"{tmp}/{path.rsplit('/', 1)[-1]}"
    open(out, "w").write(ast.unparse(ast.Module(body=keep, type_ignores=[])))
    spec = importlib.util.spec_from_file_location("public_" + str(abs(hash(path))), out)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod

OP = re.compile(r'^\s*(?:%[\w#:, %]+=\s*)?"?([a-z_]+\.[a-z_.]+)')
def op_counts(ttir):
    return dict(collections.Counter(m.group(1) for line in ttir.splitlines() if (m := OP.match(line))))

def func_line(ttir):
    # the kernel's TTIR signature: argument types with their tt.divisibility attributes
    line = next(ln for ln in ttir.splitlines() if "tt.func public" in ln)
    return re.sub(r"\s*loc\([^()]*(\([^()]*\)[^()]*)*\)", "", line).strip()

tmp = tempfile.mkdtemp()
expected = json.loads(open(sys.argv[1]).read())
out = {}
for program, (_code, cases) in expected.items():
    mod = jit_only(f"{sys.argv[2]}/{program}", tmp)
    for cid, (kernel, sig, consts, div, warps, stages) in cases.items():
        names = list(sig)
        k = triton.compile(ASTSource(getattr(mod, kernel), sig,
                                     constexprs={(names.index(n),): v for n, v in consts.items()},
                                     attrs={(names.index(a),): [["tt.divisibility", 16]] for a in div}),
                           target=GPUTarget("cuda", 90, 32), options={"num_warps": warps, "num_stages": stages})
        texts = {lv: k.asm[lv] for lv in ("ttir", "ttgir", "llir", "ptx") if lv in k.asm}
        out[cid] = {"tma": oracle.scan_all(texts)[0], "ops": op_counts(k.asm["ttir"]),
                    "func": func_line(k.asm["ttir"])}
print(json.dumps(out))
"""


def _trace(tmp: Path, python: str, program: str) -> tuple[int, dict, Path | None]:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--out", str(tmp / "bundles"), "--",
                        python, str(PUBLIC / program)], cwd=ROOT, env=env, capture_output=True, text=True,
                       check=False, timeout=900)
    assert p.stdout.strip(), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    if "bundle" not in doc:
        return p.returncode, doc, None
    with tarfile.open(doc["bundle"]) as tar:
        tar.extractall(tmp / "unpacked", filter="data")
    (root,) = (tmp / "unpacked").iterdir()
    return p.returncode, doc, root


@pytest.fixture(scope="module")
def traced(tmp_path_factory, interp_python):  # noqa: F811
    """Every program traced once: program -> (exit code, JSON, unpacked bundle or None); and the
    hand-written compiles' TMA and TTIR op counts by case."""
    runs = {prog: _trace(tmp_path_factory.mktemp(Path(prog).stem), interp_python, prog) for prog in EXPECTED}
    spec = tmp_path_factory.mktemp("hand") / "expected.json"
    spec.write_text(json.dumps(EXPECTED))
    p = subprocess.run([interp_python, "-c", _HAND_COMPILE, str(spec), str(PUBLIC), str(ROOT)], check=False,
                       capture_output=True, text=True, timeout=900,
                       env={k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"})
    assert p.returncode == 0, p.stderr[-3000:]
    return runs, json.loads(p.stdout.strip().splitlines()[-1])


def _ttir_ops(path: Path) -> dict:
    import collections
    import re

    op = re.compile(r'^\s*(?:%[\w#:, %]+=\s*)?"?([a-z_]+\.[a-z_.]+)')
    return dict(collections.Counter(m.group(1) for line in path.read_text().splitlines() if (m := op.match(line))))


def _func_line(ttir: str) -> str:
    import re

    line = next(ln for ln in ttir.splitlines() if "tt.func public" in ln)
    return re.sub(r"\s*loc\([^()]*(\([^()]*\)[^()]*)*\)", "", line).strip()


@pytest.mark.parametrize("program", list(EXPECTED))
def test_each_captured_kernel_is_the_hand_written_compile(program, traced):
    runs, hand = traced
    code, doc, root = runs[program]
    want_code, cases = EXPECTED[program]
    assert code == want_code, doc
    plan, results = plan_cases(root), result_cases(root)
    assert sorted(plan) == sorted(cases)
    for cid, (kernel, sig, consts, div, warps, stages) in cases.items():
        got = results[cid]
        assert got["status"] == "ok", cid
        call = got["call"]
        assert call["kernel"] == kernel and plan[cid]["trace"]["spec"] == call, cid
        assert call["signature"] == {n: t for n, t in sig.items() if t != _C}, cid
        assert call["constexprs"] == consts, cid
        assert sorted(call["divisibility"]) == sorted(div), cid
        assert (call["options"]["num_warps"], call["options"]["num_stages"]) == (warps, stages), cid
        assert (plan[cid]["num_warps"], plan[cid]["num_stages"]) == (warps, stages), cid
        assert {lv: n for lv, n in got["tma"].items() if lv in hand[cid]["tma"]} == hand[cid]["tma"], cid
        ttir = root / "cases" / cid / "kernel.ttir"
        assert _ttir_ops(ttir) == hand[cid]["ops"], cid
        assert _func_line(ttir.read_text()) == hand[cid]["func"], cid
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["missed"] == [] and tj["interpreter"] is True


def test_a_kernel_compiled_by_warmup_is_recorded_and_the_interpreters_limit_is_recorded(traced):
    """fused_softmax.py compiles its kernel with `softmax_kernel.warmup(...)` and launches the
    CompiledKernel itself: the specialisation is recorded from the warm-up (on a GPU too, where
    the launch never passes through the JIT). Under the interpreter warmup returns None, so the
    program fails right after: exit 6, the failure in trace.json, the kernel in the bundle."""
    runs, _ = traced
    code, doc, root = runs["fused_softmax.py"]
    assert code == ProgramFailed.exit_code and doc["program"]["exit_code"] == 1
    case = plan_cases(root)["softmax_kernel.1"]
    assert case["trace"]["warmup"] is True and case["trace"]["launched"] is False
    tj = json.loads((root / "trace" / "trace.json").read_text())
    assert tj["failed"] is True and "_init_handles" in tj["stderr_tail"]


def test_a_cuda_only_program_is_refused_with_its_reason(tmp_path, interp_python):  # noqa: F811
    code, doc, root = _trace(tmp_path, interp_python, "../cuda_only.py")
    assert code == UsageError.exit_code and root is None
    # the program's own last error line says why
    assert doc["error"].endswith("exited 1 and launched no Triton kernel: "
                                 "AssertionError: Torch not compiled with CUDA enabled"), doc["error"]


def test_torch_cuda_device_facts_are_the_profiles_under_the_stand_in(traced):
    """grouped_gemm.py takes NUM_SM from torch.cuda.get_device_properties("cuda"), which a CPU
    torch refuses: the stand-in answers the profile's SM count, so the program runs to the end (and checks its results)."""
    runs, _ = traced
    code, doc, root = runs["grouped_gemm.py"]
    assert code == 0, doc
    tj = json.loads((root / "trace" / "trace.json").read_text())
    (tuned,) = tj["autotune"]
    assert [c["kwargs"]["NUM_SM"] for c in tuned["configs"]] == [4, 132]


def test_a_pre_hook_that_sets_descriptor_blocks_gives_each_config_its_own_tma_kernel(traced):
    """The persistent-matmul tutorial's host descriptors carry a dummy [1, 1] block until each
    config's pre_hook sets its own: the recorded calls hold the configs' blocks, never [1, 1],
    and both compile to TMA (the hand-written compiles too)."""
    runs, hand = traced
    code, doc, root = runs["tma_matmul_prehook.py"]
    assert code == 0, doc
    plan, results = plan_cases(root), result_cases(root)
    assert [plan[f"matmul_kernel_tma.{i}"]["call"]["args"]["a_desc"]["block"] for i in (1, 2)] == [[64, 32], [32, 64]]
    for cid in ("matmul_kernel_tma.1", "matmul_kernel_tma.2"):
        assert results[cid]["verdict"] == "tma" and hand[cid]["tma"]["ptx"] > 0, cid


def test_a_dict_launch_option_is_recorded_as_a_dict(traced):
    """`extern_libs={'libdevice': path}` was written down by its repr, a string the JIT then
    refused: the launch was missed, and a program whose only launch it was "launched no kernel"."""
    runs, _ = traced
    code, doc, root = runs["../extern_libs.py"]
    assert code == 0, doc
    opts = plan_cases(root)["add_one.1"]["call"]["options"]
    assert list(opts) == ["extern_libs"] and opts["extern_libs"]["libdevice"].endswith("/libdevice.10.bc")
    assert result_cases(root)["add_one.1"]["status"] == "ok"


def test_do_not_specialize_is_the_programs_in_the_recorded_specialisation(traced):
    """The recorder's JIT twin was made without the kernel's do_not_specialize, so it hinted n
    by its value: n = 64 and n = 100 were two recorded specialisations of one compiled kernel."""
    runs, _ = traced
    code, doc, root = runs["../do_not_specialize.py"]
    assert code == 0, doc
    plan = plan_cases(root)
    assert [plan[f"dns.{i}"]["trace"]["launches"] for i in (1, 2, 3)] == [3, 1, 1]


def test_a_warmup_on_dtypes_alone_leaves_the_call_to_the_launch(traced):
    """Recorded from `copy.warmup(torch.float32, ...)`, the case's call was the warm-up's
    1-element stand-ins and n = 1024: a replay would launch past the end of its tensors."""
    runs, _ = traced
    code, doc, root = runs["../warmup_dtypes.py"]
    assert code == 0, doc
    case = plan_cases(root)["copy.1"]
    assert case["call"]["args"]["x_ptr"]["tensor"] == [64] and case["call"]["args"]["n"] == 64
    assert case["trace"]["launched"] is True and "warmup" not in case["trace"]


def test_do_not_specialize_under_the_3_3_interpreter(tmp_path, interp_release):  # noqa: F811
    """3.2-3.5's interpreter keeps the decorator's arguments out of the GridExecutor's reach:
    the recorder notes them when the kernel is decorated."""
    code, doc, root = _trace(tmp_path, interp_release("3.3.1"), "../do_not_specialize.py")
    assert code == 0, doc
    plan = plan_cases(root)
    assert sorted(plan) == ["dns.1", "dns.2", "dns.3"]
    assert [plan[f"dns.{i}"]["trace"]["launches"] for i in (1, 2, 3)] == [3, 1, 1]
    assert plan["dns.1"]["trace"]["spec"]["divisibility"] == ["x_ptr"]
