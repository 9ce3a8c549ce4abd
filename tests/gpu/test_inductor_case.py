"""On a real GPU: the torch.compile cases (reprokit.harness.kinds.inductor) compile a 4096^3 fp16 matmul
with max-autotune, keep every Triton kernel Inductor compiled with its IR, name the one it chose,
and check the result against torch.mm. With Inductor's persistent TMA template switched on, a
kernel whose source uses tensor descriptors is among them."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch", reason="the GPU tier needs torch")
pytest.importorskip("triton", reason="the GPU tier needs triton")

from reprokit.config import load_config  # noqa: E402
from reprokit.harness.kinds import inductor  # noqa: E402
from reprokit.suite import build_plan, kernels_dir  # noqa: E402

pytestmark = pytest.mark.gpu


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    plan = build_plan(load_config().gpu("h100"), {"name": "local"}, mode="gpu", only="inductor.*").to_json()
    out = {}
    for case in plan["cases"]:
        root = tmp_path_factory.mktemp(case["id"])
        os.environ["TRITON_CACHE_DIR"] = str(root / "cache")  # as the runner gives each case
        (root / "case").mkdir()
        out[case["id"]] = (inductor.compile_case(case, plan, str(kernels_dir()), str(root / "case")), root / "case")
    return out


def test_max_autotune_keeps_what_inductor_made(results):
    for cid, (rec, case_dir) in results.items():
        info = rec["inductor"]
        assert rec["status"] == "ok", (cid, rec.get("error"))
        assert info["check"]["ok"], (cid, info["check"])
        assert info["chosen"] and info["kernels"], cid
        assert (case_dir / rec["artifacts"]["inductor_code"]).is_file()
        for k in info["kernels"]:
            assert all((case_dir / p).is_file() for p in k["ir"].values()), (cid, k["name"])
        assert info["settings"]["max_autotune"] is True
        print(cid, info["summary"], info["judged"])


def test_the_tma_template_is_off_by_default_and_shows_tma_when_on(results):
    default, _ = results["inductor.max-autotune"]
    assert default["inductor"]["settings"]["triton.enable_persistent_tma_matmul"] is False
    on, _ = results["inductor.max-autotune-tma"]
    assert on["inductor"]["settings"]["triton.enable_persistent_tma_matmul"] is True
    with_tma = [k for k in on["inductor"]["kernels"] if k["tma_api"]]
    assert with_tma, [k["name"] for k in on["inductor"]["kernels"]]
    assert any(k["tma"].get("sass") or k["tma"].get("ptx") for k in with_tma)
