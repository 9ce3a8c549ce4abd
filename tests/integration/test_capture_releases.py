"""The same harness, unchanged, on the releases between 3.0 and 3.5 (3.1.0, 3.2.0, 3.3.1, 3.4.0)
and after 3.6 (3.7.1, 3.8.0, 3.9.0): each API form of ASTSource, each descriptor spelling, and
what each release really does, dropped APIs included."""

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
    # 22 Triton cases, the CUDA C++ ground truth and two torch.compile cases (GPU mode only)
    assert len(cap.results.to_json()["cases"]) == 25
    assert not [c["id"] for c in cap.results.to_json()["cases"] if c["status"] == "harness_error"]


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
    for c in cap.results.to_json()["cases"]:
        if c["control"] == "P1":
            assert not any((c.get("tma") or {}).values()), c["id"]


def test_every_refused_negative_control_is_the_rejection_the_suite_names(release):
    """suite.toml's `reject` rules hold on each release: its words, its pass."""
    stack, cap = release
    for c in cap.results.to_json()["cases"]:
        if c["control"] == "P1" and c["status"] == "compile_error":
            assert c["verdict"] == "rejected" and c["met"] is True, (stack, c["id"], c["reason"])


def test_triton_3_2_aborts_on_the_aggressive_128x128x128_gemm(captured):
    # A LinearLayout assertion in 3.2.0's TTGIR lowering; 3.0/3.1 and 3.3 compile the same kernel.
    c = by_id(captured("triton-3.2-cu129"))["experimental_descriptor.gemm-128x128x128-w16-s4"]
    assert c["status"] == "crash" and c["signal"] == "SIGABRT" and "getTotalOutDimSize" in c["error"]


def test_narrow_box_aborts_3_1_and_3_2_but_3_3_refuses_it(captured):
    for stack in ("triton-3.1-cu129", "triton-3.2-cu129"):
        assert by_id(captured(stack))["experimental_descriptor.p1"]["verdict"] == "crashed", stack
    assert by_id(captured("triton-3.3-cu129"))["experimental_descriptor.p1"]["verdict"] == "rejected"


# After 3.6: one case per family and both descriptor negatives, h100; enough to see what each
# release offers, refuses and dropped without the whole suite's cost.
NEWER = ("triton-3.7-cu130", "triton-3.8-cu130", "triton-3.9-cu132")
LEAN = "block_ptr.p0,block_ptr.p1,experimental_descriptor.p0,tensor_descriptor.p0,tensor_descriptor.p1,host_descriptor.p*"


@pytest.fixture(scope="module", params=NEWER)
def newer(request, captured):
    return request.param, by_id(captured(request.param, "h100", LEAN))


def test_newer_releases_keep_both_descriptor_families_and_refuse_their_negatives(newer):
    stack, cases = newer
    assert not [c["id"] for c in cases.values() if c["status"] == "harness_error"]
    for fam in ("tensor_descriptor", "host_descriptor"):
        p0 = cases[f"{fam}.p0"]
        assert p0["verdict"] == "tma" and p0["tma"]["ttgir"] >= 2 and p0["tma"]["sass"] >= 2, (stack, p0["reason"])
    assert cases["host_descriptor.p2"]["verdict"] == "tma"
    assert cases["tensor_descriptor.p1"]["verdict"] == "rejected"
    assert "last dim must be 1" in cases["tensor_descriptor.p1"]["error"]
    host_p1 = cases["host_descriptor.p1"]
    assert host_p1["verdict"] == "rejected" and host_p1["failing_pass"] == "TritonNvidiaGPUTMALoweringPass"
    assert "must have between 1 and 5 coordinates" in host_p1["error"]


def test_newer_releases_lack_experimental_descriptors(newer):
    stack, cases = newer
    c = cases["experimental_descriptor.p0"]
    assert c["status"] == "unsupported" and "lacks tl._experimental_descriptor_load" in c["error"], stack


def test_block_pointers_compile_without_tma_until_3_9_drops_them(newer):
    stack, cases = newer
    for cid in ("block_ptr.p0", "block_ptr.p1"):
        c = cases[cid]
        if stack == "triton-3.9-cu132":
            # The name is still there (the attribute probe passes); the compiler itself says why.
            assert c["status"] == "unsupported" and c["verdict"] == "unsupported" and c["met"] is None, cid
            assert c["error"] == "Block pointers have been removed in favor of the tensor descriptor API"
            assert c["exception"] == "CompilationError"
        else:
            assert c["status"] == "ok" and c["verdict"] == "no-tma" and c["tma"]["sass"] == 0, (stack, cid)


def test_triton_3_9_runs_ptxas_blackwell_for_hopper_and_blackwell(captured):
    # 3.9 ships ptxas 12.9 beside ptxas-blackwell 13.4 and uses the latter even for sm_90a.
    for gpu, arch in (("h100", "sm_90a"), ("b200", "sm_100a")):
        c = by_id(captured("triton-3.9-cu132", gpu, "tensor_descriptor.p0"))["tensor_descriptor.p0"]
        assert c["verdict"] == "tma" and c["tma"]["sass"] >= 2, gpu
        assert c["ptxas"]["path"].endswith("/ptxas-blackwell") and c["ptxas"]["version"].startswith("13.4."), gpu
        assert f"--gpu-name={arch}" in c["ptxas"]["argv"], gpu
