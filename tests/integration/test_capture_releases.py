"""The same harness, unchanged, on the releases between 3.0 and 3.5 (3.1.0, 3.2.0, 3.3.1, 3.4.0):
each API form of ASTSource, each descriptor spelling, and what each release really does."""

from __future__ import annotations

import pytest

from tests.conftest import by_id

pytestmark = pytest.mark.triton

# Which descriptor families each release offers.
OFFERS = {
    "triton-3.1-cu129": {"experimental_descriptor"},
    "triton-3.2-cu129": {"experimental_descriptor"},
    "triton-3.3-cu129": {"experimental_descriptor", "tensor_descriptor"},
    "triton-3.4-cu129": {"tensor_descriptor", "host_descriptor"},
}


@pytest.fixture(scope="module", params=sorted(OFFERS))
def release(request, captured):
    return request.param, captured(request.param)


def test_every_case_has_a_result_from_the_compiler_not_the_harness(release):
    _, cap = release
    assert len(cap.results["cases"]) == 22
    assert not [c["id"] for c in cap.results["cases"] if c["status"] == "harness_error"]


def test_block_pointers_never_emit_tma(release):
    _, cap = release
    assert by_id(cap)["block_ptr.p0"]["verdict"] == "no-tma"


def test_offered_apis_emit_tma_and_the_others_are_unsupported(release):
    stack, cap = release
    cases = by_id(cap)
    for fam in ("experimental_descriptor", "tensor_descriptor", "host_descriptor"):
        p0 = cases[f"{fam}.p0"]
        if fam in OFFERS[stack]:
            assert p0["verdict"] == "tma" and p0["tma"]["sass"] >= 2, (fam, p0["reason"])
        else:
            assert p0["status"] == "unsupported", fam


def test_no_negative_control_emits_tma(release):
    _, cap = release
    for c in cap.results["cases"]:
        if c["control"] == "P1":
            assert not any((c.get("tma") or {}).values()), c["id"]


def test_triton_3_2_aborts_on_the_aggressive_128x128x128_gemm(captured):
    # A LinearLayout assertion in 3.2.0's TTGIR lowering; 3.0/3.1 and 3.3 compile the same kernel.
    c = by_id(captured("triton-3.2-cu129"))["experimental_descriptor.gemm-128x128x128-w16-s4"]
    assert c["status"] == "crash" and c["signal"] == "SIGABRT" and "getTotalOutDimSize" in c["error"]


def test_narrow_box_aborts_3_1_and_3_2_but_3_3_refuses_it(captured):
    for stack in ("triton-3.1-cu129", "triton-3.2-cu129"):
        assert by_id(captured(stack))["experimental_descriptor.p1"]["verdict"] == "crashed", stack
    assert by_id(captured("triton-3.3-cu129"))["experimental_descriptor.p1"]["verdict"] == "rejected"
