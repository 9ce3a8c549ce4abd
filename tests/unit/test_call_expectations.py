"""A declared call's verdict (oracle.judge_call) and the stand-ins a compile-only stack gets
(harness.standin): pure code, no Triton needed."""

from __future__ import annotations

import re
import sys

import pytest

from reprokit.common import oracle
from reprokit.harness import standin

SASS = """
        /*0140*/                   UTMALDG.2D [UR8], [UR4] ;
        /*0150*/                   UTMALDG.2D [UR12], [UR4] ;
        /*0160*/                   UTMASTG.2D [UR4], [UR10] ;
        /*0170*/                   LDG.E R2, desc[UR4][R2.64] ;
"""


def rec(sass=None, **kw):
    r = {"status": "ok", "tma": {"ttgir": 3, "ptx": 3, "sass": 3}, "metadata": {"registers": 96,
                                                                               "shared_bytes": 131096}}
    if sass is not None:
        r["expect_seen"] = {f"sass:{op}": oracle.sass_op_count(op, SASS) for op in sass}
    r.update(kw)
    return r


def judge(expect, result):
    return oracle.judge({"kind": "call", "expect": expect}, result, None, "3.6.0")


def test_without_an_expectation_the_verdict_is_what_was_seen_and_never_not_met():
    for result in (rec(), rec(tma={"sass": 0, "ptx": 0}), rec(status="compile_error", error="boom"),
                   rec(status="crash", error="SIGSEGV")):
        v = judge(None, result)
        assert v["met"] is None, v
    assert judge(None, rec())["verdict"] == "tma"
    assert judge(None, rec(tma={"sass": 0}))["verdict"] == "no-tma"


def test_tma_and_no_tma():
    assert judge("tma", rec())["met"] is True
    assert judge("no-tma", rec())["met"] is False
    assert judge("no-tma", rec(tma={"sass": 0}))["met"] is True


def test_a_sass_op_is_counted_with_its_modifiers_and_only_as_a_whole_opcode():
    assert oracle.sass_op_count("UTMALDG", SASS) == 2
    assert oracle.sass_op_count("LDG", SASS) == 1  # not inside UTMALDG
    assert oracle.sass_op_count("STG", SASS) == 0  # not inside UTMASTG
    assert judge("sass:UTMALDG", rec(sass=["UTMALDG"]))["met"] is True
    assert judge("sass:STG", rec(sass=["STG"]))["met"] is False
    assert judge("sass:UTMALDG", rec())["met"] is None  # no SASS was disassembled: cannot say


def test_register_and_shared_memory_bounds():
    assert judge("regs<=128", rec())["met"] is True
    assert judge("regs<=64", rec())["met"] is False
    assert judge("smem<=200000", rec())["met"] is True
    assert judge("smem<=100000", rec())["met"] is False
    assert judge("regs<=128", rec(metadata={"shared_bytes": 0}))["met"] is None  # no ptxas log


def test_an_expectation_a_failed_compile_cannot_meet_is_not_met_and_unsupported_says_nothing():
    assert judge("tma", rec(status="compile_error", error="x"))["met"] is False
    assert judge("tma", rec(status="unsupported", error="lacks"))["met"] is None
    assert judge("tma", rec(status="unsupported", error="lacks"))["verdict"] == "unsupported"


def test_an_expectation_that_cannot_be_read_is_said_so_and_judges_nothing():
    v = judge("regs<128", rec())
    assert v["met"] is None and "regs<128" in v["reason"] and v["verdict"] == "tma"


def test_the_expectation_forms_the_schemas_accept():
    ok = ["tma", "no-tma", "sass:UTMALDG", "sass:HMMA.16816", "regs<=128", "smem<=232448"]
    bad = ["TMA", "sass:", "regs<128", "smem<=", "regs<=-1", "sass:utmaldg"]
    assert all(oracle.EXPECT_RE.match(e) for e in ok)
    assert not any(oracle.EXPECT_RE.match(e) for e in bad)


def test_the_stand_in_torch_has_what_kernel_files_touch_at_import(monkeypatch):
    mod = standin.torch_module()
    assert str(mod.float16) == "torch.float16" and mod.float16.itemsize == 2 and mod.float16.is_floating_point
    assert mod.half == mod.float16 and not mod.int32.is_floating_point
    assert not mod.cuda.is_available()
    t = mod.empty((64, 32), dtype=mod.bfloat16, device="cuda")
    assert t.shape == (64, 32) and t.stride() == (32, 1) and t.data_ptr() % 16 == 0 and t.element_size() == 2
    assert isinstance(t, mod.Tensor) and str(t.device) == "cuda"
    s = mod.empty_strided((8, 8), (1, 8), dtype=mod.float32)
    assert s.stride() == (1, 8) and not s.is_contiguous()
    # module-level set-up as tutorials write it: seeded inputs moved and cast
    mod.manual_seed(0)
    x = mod.randn(128, 64, device="cuda").half().cuda()
    assert x.dtype == mod.float16 and x.shape == (128, 64) and x.to(mod.bfloat16).element_size() == 2
    assert s.contiguous().is_contiguous() and x.float().dtype == mod.float32


@pytest.mark.parametrize("align", [1, 2, 4, 8, 16])
def test_a_stand_in_tensors_pointer_has_exactly_the_recorded_alignment(align):
    t = standin.Tensor([16], "float16", align=align)
    p = t.data_ptr()
    largest = 16 if p % 16 == 0 else next(a for a in (8, 4, 2, 1) if p % a == 0)
    assert largest == align


def test_the_stand_in_numpy_computes_constants_and_refuses_the_rest_only_when_called():
    np = standin.numpy_module()
    assert abs(np.log2(np.e) - 1.4426950408889634) < 1e-12
    fn = np.linalg  # a placeholder: looking it up is fine
    with pytest.raises(RuntimeError, match="numpy is not installed"):
        fn()
    with pytest.raises(AttributeError):
        np.__path__  # noqa: B018 - import machinery must see a real miss


def test_ensure_torch_keeps_a_torch_already_imported(monkeypatch):
    fake = standin.torch_module()
    monkeypatch.setitem(sys.modules, "torch", fake)
    assert standin.ensure_torch() is True and sys.modules["torch"] is fake
    assert re.match(r"0\+reprokit", fake.__version__)


def _out(sha="a" * 64, dtype="float16", total=100.0, absmax=3.0, nan=0, shape=(64, 64)):
    return {"sha256": sha, "dtype": dtype, "shape": list(shape), "sum": total, "absmax": absmax, "nan": nan}


def test_outputs_across_stacks_are_exact_close_or_differ_by_their_dtype():
    from reprokit.compare.grid import Cell, _moved
    from reprokit.harness.kinds.callgpu import compare_outputs

    base = {"out": _out()}
    assert compare_outputs(base, {"out": _out()}) == {"out": "exact"}
    # other bytes, sums within n * (atol + rtol * absmax) of fp16's tolerance: close
    assert compare_outputs(base, {"out": _out(sha="b" * 64, total=100.5)}) == {"out": "close"}
    assert compare_outputs(base, {"out": _out(sha="b" * 64, absmax=5.0)}) == {"out": "differs"}
    assert compare_outputs(base, {"out": _out(sha="b" * 64, nan=1)}) == {"out": "differs"}
    assert compare_outputs(base, {}) == {"out": "missing"}
    assert compare_outputs(base, {"out": _out(sha="b" * 64, dtype="bfloat16")}) == {"out": "differs"}
    ints = {"out": _out(dtype="int32")}
    assert compare_outputs(ints, {"out": _out(sha="b" * 64, dtype="int32")}) == {"out": "differs"}
    # the grid: an output that differs moves the cell, one that is close does not
    cell = lambda outs: Cell(present=True, outputs=tuple(sorted(outs.items())))
    assert _moved(cell(base), cell({"out": _out(sha="b" * 64, total=100.5)})) == ()
    assert _moved(cell(base), cell({"out": _out(sha="b" * 64, absmax=5.0)})) == ("outputs",)
    assert _moved(cell(base), Cell(present=True)) == ()  # a compile-only side says nothing
