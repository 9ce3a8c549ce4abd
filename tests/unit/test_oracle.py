"""The TMA oracle on IR excerpts captured from real compiles (3.0.0 and 3.6.0, sm_90a)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprokit.common import oracle

DATA = Path(__file__).parent / "data"


def test_ttgir_3_6_counts_loads_and_stores_not_setup():
    moves, ops = oracle.scan("ttgir", (DATA / "tensor_descriptor_p0-3.6.ttgir").read_text())
    assert moves == 2
    assert ops["ttng.async_tma_copy_global_to_local"] == 1
    assert ops["ttng.async_tma_copy_local_to_global"] == 1
    assert ops["ttng.async_tma_store_wait"] == 1  # set-up, reported but not counted as movement


def test_ttgir_3_0_dialect_spelling_is_normalised():
    moves, ops = oracle.scan("ttgir", (DATA / "experimental_descriptor_p0-3.0.ttgir").read_text())
    assert moves == 2
    assert "ttng.async_tma_copy_global_to_local" in ops
    assert not any(k.startswith("triton_nvidia_gpu.") for k in ops)


def test_ptx_bulk_tensor_copies_and_tensormap_setup():
    moves, ops = oracle.scan("ptx", (DATA / "tensor_descriptor_p0-3.6.ptx").read_text())
    assert moves == 2
    assert any(k.startswith("tensormap.replace") for k in ops)


def test_sass_utma_ops():
    moves, ops = oracle.scan("sass", (DATA / "tensor_descriptor_p0-3.6.sass").read_text())
    assert moves == 2 and ops["UTMALDG"] == 1 and ops["UTMASTG"] == 1
    assert ops.get("UTMACCTL", 0) >= 1


def test_block_pointer_sass_has_no_tma():
    moves, ops = oracle.scan("sass", (DATA / "block_ptr_p0-3.0.sass").read_text())
    assert moves == 0 and ops == {}


@pytest.mark.parametrize("level,text", [
    ("ttgir", "// ttng.async_tma_copy_global_to_local was considered\n"),
    ("ptx", "// cp.async.bulk.tensor.2d not emitted\n"),
    ("llir", "; cp.async.bulk.tensor.2d in a comment\n"),
])
def test_comments_are_not_ops(level, text):
    assert oracle.scan(level, text)[0] == 0


def _judge(expect, status="ok", tma=None, gate=None, error=None):
    case = {"id": "x", "expect": expect, "gated_by": "fam.p0" if gate else None}
    result = {"status": status, "tma": tma or {}, "error": error}
    return oracle.judge(case, result, gate)


def test_positive_control_met_and_unmet():
    assert _judge("tma", tma={"ttgir": 2, "ptx": 2, "sass": 2}) | {} == {
        "verdict": "tma", "met": True, "reason": "TMA at sass (ttgir=2, ptx=2, sass=2); expected tma"}
    v = _judge("tma", tma={"ttgir": 0, "ptx": 0, "sass": 0})
    assert v["verdict"] == "no-tma" and v["met"] is False


def test_sass_decides_over_ptx_and_ptx_when_sass_is_missing():
    assert _judge("tma", tma={"ptx": 2, "sass": 0})["verdict"] == "no-tma"
    assert _judge("tma", tma={"ttgir": 2, "ptx": 2})["verdict"] == "tma"


def test_negative_control_refused_cleanly_is_met_but_a_crash_is_not():
    assert _judge("no-tma", status="compile_error", error="last dim must be 1") == {
        "verdict": "rejected", "met": True, "reason": "compiler refused the broken invariant: last dim must be 1"}
    v = _judge("no-tma", status="crash", error="UNREACHABLE executed (killed by SIGABRT)")
    assert v["verdict"] == "crashed" and v["met"] is False


HOST_P1 = {"id": "host_descriptor.p1", "expect": "no-tma", "reject": [
    {"triton": ">=3.4,<3.7", "pass": "TritonNvidiaGPUTMALoweringPass",
     "message": "TMA copies must have between 1 and 5 coordinates"},
    {"triton": ">=3.7", "pass": "TritonNvidiaGPUTMALoweringPass", "message": "op must have between 1 and 5 coordinates"},
]}
WORDS_36 = "'ttng.async_tma_copy_global_to_local' op TMA copies must have between 1 and 5 coordinates"
WORDS_37 = "'ttng.async_tma_copy_global_to_local' op must have between 1 and 5 coordinates"


def _p1(error, triton, failing_pass="TritonNvidiaGPUTMALoweringPass"):
    return oracle.judge(HOST_P1, {"status": "compile_error", "error": error, "failing_pass": failing_pass}, None,
                        triton)


def test_a_p1_is_met_only_by_the_rejection_it_names_for_its_release():
    assert _p1(WORDS_36, "3.6.0")["verdict"] == "rejected" and _p1(WORDS_36, "3.6.0")["met"] is True
    assert _p1(WORDS_37, "3.7.1")["met"] is True and _p1(WORDS_37, "3.9.0")["met"] is True
    # Each release's words are its own: 3.6's rule does not hold on 3.4's neighbours by accident.
    assert _p1(WORDS_37, "3.5.0")["verdict"] == "error"


@pytest.mark.parametrize("error, triton, failing_pass, why", [
    ("KeyError: 'num_stage'", "3.6.0", None, "not the expected rejection"),                # a harness bug
    ("num_warps must be a power of 2", "3.6.0", None, "not the expected rejection"),       # bad options
    (WORDS_36, "3.6.0", "TritonGPUAccelerateMatmul", "not the expected rejection"),         # another pass
    (WORDS_36, "3.3.1", "TritonNvidiaGPUTMALoweringPass", "names no rejection for triton 3.3.1"),
    (WORDS_36, None, "TritonNvidiaGPUTMALoweringPass", "names no rejection for triton None"),
])
def test_a_p1_rejected_for_the_wrong_reason_is_an_error_not_met(error, triton, failing_pass, why):
    v = _p1(error, triton, failing_pass)
    assert v["verdict"] == "error" and v["met"] is False and why in v["reason"], v


def test_a_p1_that_names_no_rejection_is_an_error_on_any_compile_error():
    case = {"id": "block_ptr.p1", "expect": "no-tma", "reject": []}
    v = oracle.judge(case, {"status": "compile_error", "error": "whatever"}, None, "3.6.0")
    assert v["verdict"] == "error" and v["met"] is False
    assert oracle.judge(case, {"status": "ok", "tma": {"sass": 0}}, None, "3.6.0")["met"] is True


@pytest.mark.parametrize("version, spec, holds", [
    ("3.4.0", ">=3.4,<3.7", True), ("3.6.0", ">=3.4,<3.7", True), ("3.7.1", ">=3.4,<3.7", False),
    ("3.3.1", "3.3", True), ("3.3.1", "==3.3.1", True), ("3.3.0", "==3.3.1", False), ("3.10.0", ">=3.7", True),
    ("3.9.1", "<=3.9", True), ("3.9.5", ">3.9", False), ("3.10.0", ">3.9", True), ("3.0.0", "", True),
    ("3.5.0", "~3.5", False), ("3.5.0+git1234", ">=3.5", True),
])
def test_version_specs(version, spec, holds):
    assert oracle.version_in(version, spec) is holds


def test_stress_case_is_inconclusive_when_its_p0_shows_no_tma():
    v = _judge("tma", tma={"sass": 2}, gate={"verdict": "no-tma"})
    assert v["verdict"] == "inconclusive" and v["met"] is None
    assert _judge("tma", tma={"sass": 2}, gate={"verdict": "tma"})["verdict"] == "tma"


@pytest.mark.parametrize("status,verdict", [("unsupported", "unsupported"), ("timeout", "timeout"),
                                            ("harness_error", "error")])
def test_statuses_that_cannot_be_judged(status, verdict):
    v = _judge("tma", status=status, error="why")
    assert v["verdict"] == verdict and v["met"] is None and v["reason"] == "why"
