"""The parts of `reprokit reduce` that need no compiler: the AST passes (every candidate a valid
module, each pass doing what it says), sizes, predicates judged on observations, transitions
across releases, and the cache's torn last line."""

from __future__ import annotations

import ast
import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

import pytest

from reprokit.compare.metric import Metric
from reprokit.compare.transitions import transitions
from reprokit.errors import UsageError
from reprokit.reduce import candidates as cand
from reprokit.reduce.cache import Cache
from reprokit.reduce.driver import score
from reprokit.reduce.predicate import error_text, parse

ROOT = Path(__file__).resolve().parents[2]
SUITE_CASE = {"id": "experimental_descriptor.p1", "kernel": {"file": "copy_experimental_descriptor.py",
                                                             "function": "copy_p1_narrow"},
              "signature": {"src_desc": "*i8", "dst_desc": "*i8"}, "constexprs": {"BM": 128, "BN": 4},
              "divisible_by_16": ["src_desc", "dst_desc"], "num_warps": 8, "num_stages": 4}
CALL_CASE = {"id": "matmul.persistent", "file": "matmul_persistent.py", "function": "matmul_persistent",
             "call": {"args": {"a_ptr": {"tensor": [64, 64]}, "b_ptr": {"tensor": [64, 64]},
                               "c_ptr": {"tensor": [64, 64]}, "M": 64, "N": 64, "K": 64, "BLOCK_M": 128,
                               "BLOCK_N": 256, "BLOCK_K": 64, "GROUP_SIZE_M": 8, "NUM_SMS": 132},
                      "options": {"num_warps": 8, "num_stages": 3}}}


@lru_cache(maxsize=None)
def _all(state: cand.State) -> tuple:
    return tuple(cand.candidates(state))


def _suite_state() -> cand.State:
    return cand.State.of((ROOT / "kernels" / "copy_experimental_descriptor.py").read_text(), SUITE_CASE)


def _call_state() -> cand.State:
    src = (ROOT / "tests" / "data" / "persistent_matmul" / "kernels" / "matmul_persistent.py").read_text()
    return cand.State.of(src, CALL_CASE)


def test_sizes_count_the_reached_functions_without_contexts():
    # copy_p1_narrow alone: the file's two other kernels are not reached
    assert cand.size(_suite_state()) == cand.Size(lines=6, nodes=47)
    # the persistent matmul reaches its _tile helper too
    sz = cand.size(_call_state())
    tree = ast.parse(_call_state().source)
    assert sz.nodes == sum(cand.nodes(f) for f in tree.body if isinstance(f, ast.FunctionDef))


@pytest.mark.parametrize("state", [_suite_state(), _call_state()], ids=["suite", "call"])
def test_every_candidate_is_a_new_valid_module_that_keeps_the_kernel(state):
    seen = set()
    fn = cand.kernel_ref(state.case_dict())[1]
    got = list(_all(state))
    assert len(got) > 20
    for c in got:
        tree = ast.parse(c.state.source)
        assert any(isinstance(f, ast.FunctionDef) and f.name == fn for f in tree.body), c.step
        assert c.state.digest != state.digest and c.state.digest not in seen
        seen.add(c.state.digest)


def test_fixing_a_constexpr_takes_it_out_of_the_source_and_the_call():
    (c,) = [c for c in _all(_call_state()) if c.step == "fix BLOCK_K = 64"]
    fn = next(f for f in ast.parse(c.state.source).body if getattr(f, "name", "") == "matmul_persistent")
    assert "BLOCK_K" not in [a.arg for a in fn.args.args]
    assert "BLOCK_K" not in ast.unparse(fn) and "64" in ast.unparse(fn)
    assert "BLOCK_K" not in c.state.case_dict()["call"]["args"]


def test_an_unused_argument_goes_from_the_signature_and_divisibility():
    src = _suite_state().source.replace("x = tl._experimental_descriptor_load(src_desc,",
                                        "x = tl._experimental_descriptor_load(dst_desc,")
    state = cand.State.of(src, SUITE_CASE)
    (c,) = [c for c in cand.candidates(state) if c.step == "drop the unused argument src_desc"]
    case = c.state.case_dict()
    assert "src_desc" not in case["signature"] and case["divisible_by_16"] == ["dst_desc"]


def test_helpers_inline_loops_peel_and_sizes_shrink():
    steps = [c.step for c in _all(_call_state())]
    assert "inline _tile at line 33" in steps
    assert {"peel the loop at line 32", "peel the loop at line 37"} <= set(steps)
    assert {"BLOCK_N 256 -> 128", "num_warps 8 -> 4", "num_stages 3 -> 2"} <= set(steps)
    inlined = next(c for c in _all(_call_state()) if c.step.startswith("inline _tile"))
    assert "_tile(" not in inlined.state.source.split("def matmul_persistent")[1]
    assert cand.size(inlined.state).nodes < cand.size(_call_state()).nodes


def test_autotune_configs_are_cut_to_one():
    src = ("import triton\nimport triton.language as tl\n\n"
           "@triton.autotune(configs=[triton.Config({'B': 16}), triton.Config({'B': 32})], key=['n'])\n"
           "@triton.jit\ndef k(x, n, B: tl.constexpr):\n    tl.store(x + tl.arange(0, B), 0)\n")
    state = cand.State.of(src, {"id": "k", "file": "k.py", "function": "k", "call": {"args": {"x": {}, "n": 1}}})
    cut = [c for c in cand.candidates(state) if "decorator's list of 2" in c.step]
    assert cut and "32" not in cut[0].state.source


def test_score_drops_only_for_smaller_candidates():
    state = cand.normalised(_suite_state())
    base = score(state)
    smaller = [c for c in cand.candidates(state) if score(c.state) < base]
    assert any(c.step == "num_warps 8 -> 4" for c in smaller)
    assert any(c.step.startswith("drop every top-level statement") for c in smaller)


def test_a_crash_signature_ignores_paths_addresses_and_positions():
    a = error_text("UNREACHABLE executed at /project/build/include/TritonGPUAttrDefs.cpp.inc:385! (killed by SIGABRT)")
    b = error_text("UNREACHABLE executed at /other/place/TritonGPUAttrDefs.cpp.inc:385! (killed by SIGABRT)")
    assert a == b == "UNREACHABLE executed at TritonGPUAttrDefs.cpp.inc:385! (killed by SIGABRT)"
    assert error_text("at 12:4: bad thing at 0xdeadbeef") == error_text("at 3:8: bad thing at 0x1234")
    # a candidate's own file and case names are not part of the failure
    assert error_text("kernels/copy__r0123456789ab.py:3: boom in case p1.r0123456789ab") == \
        error_text("kernels/copy.py:3: boom in case p1")


def _obs(status="ok", verdict="tma", value=None, **kw):
    return {"status": status, "verdict": verdict, "signal": kw.get("signal"), "failing_pass": kw.get("failing_pass"),
            "error": kw.get("error", ""), "value": value,
            **{k: v for k, v in kw.items() if k in ("gpu_status", "median_ms", "baseline_ms", "outputs", "wrong_outputs")}}


def test_crash_holds_only_for_the_same_failure():
    p = parse(None, ("s30",), None, "crash").learn([_obs("crash", "crashed", signal="SIGABRT", error="UNREACHABLE x")])
    assert not isinstance(p, str)
    assert p.holds([_obs("crash", "crashed", signal="SIGABRT", error="UNREACHABLE x")])
    assert not p.holds([_obs("crash", "crashed", signal="SIGSEGV", error="UNREACHABLE x")])
    assert not p.holds([_obs("compile_error", "error", error="UNREACHABLE x")])
    assert isinstance(parse("crash", ("s30",), None, "crash").learn([_obs()]), str)  # never held


def test_metric_holds_while_the_move_keeps_its_way_and_size():
    p = parse("metric:regs", ("a", "b"), 5, "crash").learn([_obs(value=164), _obs(value=154)])
    assert not isinstance(p, str) and p.target["sign"] == -1
    assert p.holds([_obs(value=40), _obs(value=30)])
    assert not p.holds([_obs(value=40), _obs(value=37)])     # moved by less than 5
    assert not p.holds([_obs(value=30), _obs(value=40)])     # the other way round
    assert not p.holds([_obs("compile_error", "error"), _obs(value=30)])
    assert isinstance(parse("metric:regs", ("a", "b"), 20, "crash").learn([_obs(value=164), _obs(value=154)]), str)


def test_verdict_keeps_each_stacks_verdict():
    p = parse("verdict", ("a", "b"), None, "crash").learn([_obs(verdict="tma"), _obs(verdict="no-tma")])
    assert p.holds([_obs(verdict="tma"), _obs(verdict="no-tma")])
    assert not p.holds([_obs(verdict="no-tma"), _obs(verdict="no-tma")])
    assert isinstance(parse("verdict", ("a", "b"), None, "crash").learn([_obs(), _obs()]), str)


def test_wrong_and_slower_read_the_gpu_facts():
    right = _obs(gpu_status="ok", median_ms=1.0, outputs={"c": "aa"})
    wrong = _obs(gpu_status="ok", median_ms=1.0, outputs={"c": "bb"})
    p = parse("wrong", ("ref", "b"), None, "crash").learn([right, wrong])
    assert not isinstance(p, str) and p.holds([right, wrong]) and not p.holds([right, right])
    slow = _obs(gpu_status="ok", median_ms=1.5, outputs={"c": "aa"})
    s = parse("slower", ("ref", "b"), None, "crash").learn([right, slow])
    assert not isinstance(s, str) and s.holds([right, slow]) and not s.holds([right, right])


def test_one_stack_wrong_and_slower_read_the_harness_and_the_recorded_run():
    p = parse("wrong", ("local",), None, "crash").learn([_obs(gpu_status="wrong")])
    assert not isinstance(p, str) and p.holds([_obs(gpu_status="wrong")]) and not p.holds([_obs(gpu_status="ok")])
    # wrong the same way: a planted `+ 1.0` keeps c's wrong bytes; a kernel reduced to `pass`
    # leaves c as the program's memory was, wrong too, but not the original's failure
    planted = _obs(gpu_status="wrong", wrong_outputs={"c": "c0ffee"})
    q = parse("wrong", ("local",), None, "crash").learn([planted])
    assert not isinstance(q, str) and "c holding the original's very bytes" in q.describe()
    assert q.holds([_obs(gpu_status="wrong", wrong_outputs={"c": "c0ffee"})])
    assert not q.holds([_obs(gpu_status="wrong", wrong_outputs={"c": "0000"})])     # the empty kernel
    assert not q.holds([_obs(gpu_status="wrong", wrong_outputs={"c": "c0ffee", "d": "11"})])
    recorded = _obs(gpu_status="ok", median_ms=1.0, baseline_ms=1.0)
    s = replace(parse("slower", ("local",), 0.5, "crash"), reference=recorded)
    # timed against the same run's baseline: a board twice as fast overall is no slowdown
    assert isinstance(s.learn([_obs(gpu_status="ok", median_ms=1.0, baseline_ms=0.5)]), s.__class__)
    assert isinstance(s.learn([_obs(gpu_status="ok", median_ms=1.0, baseline_ms=1.0)]), str)
    assert isinstance(parse("slower", ("local",), 0.5, "crash").learn([recorded]), str)   # no reference


@pytest.mark.parametrize("spec, stacks", [("metric:regs", ("a",)), ("crash", ("a", "b")), ("metric:smem", ("a", "b", "c"))])
def test_a_predicate_names_the_stacks_it_reads(spec, stacks):
    with pytest.raises(UsageError):
        parse(spec, stacks, None, "crash")


class P:
    def __init__(self, version, value, runs=True):
        self.version, self.value, self.runs = version, value, runs


def test_transitions_name_regressions_fixes_and_unsupported_releases():
    pts = [P("3.0.0", None, False), P("3.4.0", 1536), P("3.7.1", 1536), P("3.8.0", 3072), P("3.9.0", 1536)]
    m = Metric("smem")
    got = [t.text(m) for t in transitions(pts, m)]
    assert got == ["runs from 3.4.0 (smem 1536)", "regressed in 3.8.0 (smem 1536 -> 3072)",
                   "fixed in 3.9.0 (smem 3072 -> 1536)"]
    assert [t.kind for t in transitions([P("1", 164), P("2", 154)], Metric("regs"))] == ["improved"]


def test_the_cache_skips_a_torn_last_line(tmp_path):
    c = Cache(tmp_path)
    c.put("k1", {"status": "ok"})
    c.close()
    with open(tmp_path / "cache.jsonl", "a") as f:
        f.write('{"key": "k2", "obs": {"sta')   # what a kill mid-write leaves
    again = Cache(tmp_path)
    assert again.loaded == 1 and again.get("k1") == {"status": "ok"} and again.get("k2") is None
    again.put("k3", {"status": "crash"})
    again.close()
    assert Cache(tmp_path).get("k3") == {"status": "crash"}
    assert json.loads((tmp_path / "cache.jsonl").read_text().splitlines()[-1])["key"] == "k3"


def test_one_dimension_less_and_a_call_replaced_by_the_call_it_wraps():
    """A tile's offsets and block shape lose one element together (each alone would no longer
    agree); a call is replaced by a call among its arguments (a store by the load it stores)."""
    src = ("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(d):\n"
           "    tl._experimental_descriptor_store(d, tl._experimental_descriptor_load(d, [0, 0], [1, 4], tl.float16),"
           " [0, 0])\n")
    state = cand.State.of(src, {"id": "k", "file": "k.py", "function": "k", "call": {"args": {"d": {}}}})
    by_step = {c.step: c.state.source for c in cand.candidates(state)}
    lower = {s: v for s, v in by_step.items() if s.startswith("every 2-element literal")}
    assert sorted(lower) == ["every 2-element literal without element 0", "every 2-element literal without element 1"]
    assert "load(d, [0], [4], tl.float16), [0])" in lower["every 2-element literal without element 0"]
    assert "load(d, [0], [1], tl.float16), [0])" in lower["every 2-element literal without element 1"]
    nested = [v for s, v in by_step.items() if s.endswith("-> its argument 1")]
    assert len(nested) == 1 and "_experimental_descriptor_store" not in nested[0].split("def k")[1]
    assert all(cand.size(cand.State.of(v, state.case_dict())).nodes < cand.size(state).nodes
               for v in [*lower.values(), *nested])


def test_a_load_that_names_its_block_becomes_a_zero_block_of_that_shape_and_type():
    """What a load feeds stays and the load goes: on Triton 3.0.0 a store of a zero [1, 4] fp16
    block crashes the compiler exactly as the store of the loaded block does (checked there), and
    is 4 nodes smaller; a load that does not name its block (tl.load) is left to the other passes."""
    src = ("import triton\nimport triton.language as tl\n\n@triton.jit\ndef k(d, p):\n"
           "    tl._experimental_descriptor_store(d, tl._experimental_descriptor_load(d, [0, 0], [1, 4], tl.float16),"
           " [0, 0])\n"
           "    x = tl._experimental_descriptor_load(d, [0, 0], shape=[2, 8], dtype=tl.float32)\n"
           "    tl.store(p, tl.load(p) + x)\n")
    state = cand.State.of(src, {"id": "k", "file": "k.py", "function": "k", "call": {"args": {"d": {}, "p": {}}}})
    zeros = {c.step: c.state for c in cand.candidates(state) if c.step.endswith("-> a zero block of its shape and type")}
    texts = sorted(s.source.split("def k")[1] for s in zeros.values())
    assert len(texts) == 2
    assert any("tl._experimental_descriptor_store(d, tl.zeros([1, 4], tl.float16), [0, 0])" in t for t in texts)
    assert any("x = tl.zeros([2, 8], tl.float32)" in t for t in texts)
    assert all(cand.size(s).nodes < cand.size(state).nodes for s in zeros.values())
    assert not any("tl.load" in step for step in zeros)
