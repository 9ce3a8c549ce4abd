"""Sweep specs: grid expansion into plan cases, shards, the SASS policy, and the answers read
from cells (boundaries per axis, threshold rules, hypotheses)."""

from __future__ import annotations

import pytest

from reprokit.bundle import schemas
from reprokit.errors import ConfigError, UsageError
from reprokit.records import Results
from reprokit.sweep import answers
from reprokit.sweep import spec as S

SPEC = """
[sweep]
name = "tiny"
timeout_s = 30
[[sweep.targets]]
gpu = "h100"
stacks = ["triton-3.5-cu130"]
[[sweep.hypotheses]]
name = "guess"
rule = { BK = 64, num_stages = 4 }

[[groups]]
name = "copy"
family = "tensor_descriptor"
file = "sweep_tma.py"
function = "tensor_desc_copy"
signature = { src = "*{dtype}", dst = "*{dtype}", M = "i32", N = "i32" }
divisible_by_16 = { src = "align", dst = "align", M = "", N = "" }
constexprs = ["BM", "BN", "INNER", "BOUNDARY"]
base = { dtype = "fp16", BM = 128, BN = 128, INNER = 1, BOUNDARY = 0, align = 16, stride = 1, num_warps = 8, num_stages = 4 }
reduced = { stride = ["runtime"] }
[groups.axes]
dtype = [{ dtype = "fp16" }, { dtype = "fp32", BN = 64 }]
BN = [8, 128, 256]
align = [16, 1]
stride = [{ stride = 1 }, { stride = 2, INNER = 2 }, { stride = "runtime", function = "rt", signature = { S = "i32" }, constexprs = ["BM", "BN"] }]

[[groups]]
name = "gemm"
vary = "product"
file = "gemm_tma.py"
function = "gemm_tensor_descriptor"
signature = { a = "*fp16" }
constexprs = ["BM", "BK"]
base = { BM = 128, BK = 64, num_warps = 8, num_stages = 4 }
[groups.axes]
BM = [64, 128]
BK = [32, 64, 128]
num_stages = [1, 4]
"""


@pytest.fixture
def tiny(tmp_path):
    p = tmp_path / "tiny.toml"
    p.write_text(SPEC)
    return S.load_spec(p)


def test_one_at_a_time_starts_at_the_base_and_moves_one_axis(tiny):
    pts = [p for p in S.expand(tiny) if p.group == "copy"]
    assert [p.id for p in pts] == ["copy.base", "copy.dtype-fp32", "copy.bn-8", "copy.bn-256", "copy.align-1",
                                   "copy.stride-2", "copy.stride-runtime"]
    fp32 = pts[1]
    assert fp32.params["dtype"] == "fp32" and fp32.params["BN"] == 64 and fp32.params["INNER"] == 1
    rt = pts[-1]
    assert rt.function == "rt" and rt.signature["S"] == "i32" and rt.constexprs == ("BM", "BN")


def test_cases_fill_templates_hints_and_sass_policy(tiny, config):
    plan = S.build_sweep_plan(tiny, config.gpu("h100"), {"name": "x"}).to_json()
    cases = {c["id"]: c for c in plan["cases"]}
    assert cases["copy.dtype-fp32"]["signature"]["src"] == "*fp32"
    assert cases["copy.base"]["divisible_by_16"] == ["src", "dst"]
    assert cases["copy.align-1"]["divisible_by_16"] == []
    assert cases["copy.stride-runtime"]["constexprs"] == {"BM": 128, "BN": 128}
    assert cases["copy.base"]["sass"] is True and cases["copy.bn-8"]["sass"] is False
    assert not schemas.problems("plan.json", plan)
    assert plan["sweep"]["points"] == len(plan["cases"]) == 7 + 12


def test_product_groups_cross_every_axis(tiny):
    pts = [p for p in S.expand(tiny) if p.group == "gemm"]
    assert len(pts) == 2 * 3 * 2
    assert pts[0].id == "gemm.bm64-bk32-num_stages1"


def test_reduced_grid_keeps_only_the_named_values(tiny):
    assert [p.id for p in S.expand(tiny, reduced=True) if p.group == "copy"] == ["copy.base", "copy.stride-runtime"]


def test_shards_partition_the_grid(tiny, config):
    full = [c["id"] for c in S.build_sweep_plan(tiny, config.gpu("h100"), {"name": "x"}).to_json()["cases"]]
    parts = [S.build_sweep_plan(tiny, config.gpu("h100"), {"name": "x"}, shard=(i, 3)).to_json()["cases"] for i in (1, 2, 3)]
    ids = [c["id"] for part in parts for c in part]
    assert sorted(ids) == sorted(full) and len(ids) == len(full)
    assert [c["id"] for c in parts[1]] == full[1::3]
    with pytest.raises(UsageError):
        S.parse_shard("4/3")


def test_bad_specs_are_one_clear_error(tmp_path):
    p = tmp_path / "bad.toml"
    p.write_text(SPEC.replace('base = { dtype = "fp16", BM = 128', 'base = { BM = 128'))
    with pytest.raises(ConfigError, match="dtype"):
        S.load_spec(p)
    with pytest.raises(UsageError, match="no sweep"):
        S.load_spec("no-such-sweep")


@pytest.mark.parametrize("name", ["tma-invariants", "gemm-configs"])
def test_shipped_sweeps_expand(name, config):
    sp = S.load_spec(name)
    full, reduced = S.expand(sp), S.expand(sp, reduced=True)
    assert len(reduced) < len(full)
    plan = S.build_sweep_plan(sp, config.gpu("h100"), {"name": "x"}).to_json()
    assert not schemas.problems("plan.json", plan)
    if name == "gemm-configs":
        assert len(full) == 2 * 3 * 3 * 3 * 3 * 5
        named = {p.name for p in full if p.name}
        assert {"conservative", "aggressive-128x128x128", "aggressive-256x128x128"} <= named


def _rec(cid, status="ok", verdict="tma", shared=1000, error=None, fpass=None):
    return {"id": cid, "family": "f", "control": "sweep", "status": status, "verdict": verdict, "expect": "tma",
            "met": verdict == "tma", "reason": "", "artifacts": {}, "error": error, "failing_pass": fpass,
            "metadata": {"shared_bytes": shared}, "launch": {"fits": shared <= 232448}, "tma": {"ptx": 2}}


def test_boundaries_are_the_nearest_flips_on_each_side(tiny, config):
    plan = S.build_sweep_plan(tiny, config.gpu("h100"), {"name": "x"}).to_json()
    recs = {c["id"]: _rec(c["id"], shared=(300000 if "bk128" in c["id"] and "num_stages4" in c["id"] else 1000))
            for c in plan["cases"]}
    recs["copy.bn-8"] = _rec("copy.bn-8", "compile_error", "error", error="box too small")
    recs["copy.stride-runtime"] = _rec("copy.stride-runtime", "ok", "no-tma")
    for cid in recs:
        if "bk128" in cid and "num_stages4" in cid:
            recs[cid] = _rec(cid, "crash", "crashed", error=f"LLVM ERROR: x at line {len(cid)}", fpass="SomePass")
    res = {"triton": "3.5.0", "mode": "compile-only", "cases": [recs[c["id"]] for c in plan["cases"]]}
    a = answers.answer(plan, Results.from_json(res))
    assert not schemas.problems("sweep.json", a)
    copy = a["groups"][0]
    axes = {ax["axis"]: ax for ax in copy["axes"]}
    assert axes["BN"]["boundary"]["below"]["label"] == "8" and axes["BN"]["boundary"]["above"] is None
    assert axes["dtype"]["flips"] == [] and "no flip with these 2 values" in axes["dtype"]["answer"]
    assert axes["stride"]["boundary"]["above"]["label"] == "runtime"
    gemm = a["groups"][1]
    (fail,) = gemm["failures"]
    assert fail["failing_pass"] == "SomePass" and fail["rule"]["exact"]
    assert fail["rule"]["rule"] == {"BK": 128, "num_stages": 4}
    assert gemm["frontier"]["max_stages_fitting"] == {"BM64-BK64": 4, "BM128-BK64": 4, "BM64-BK32": 4,
                                                      "BM128-BK32": 4, "BM64-BK128": 1, "BM128-BK128": 1}
    (hyp,) = gemm["hypotheses"]
    assert not hyp["holds"] and hyp["selected"] == 4 and hyp["failing_selected"] == 2
    assert "copy.bn-8" in answers.boundary_ids(a)


def test_best_rule_says_when_no_threshold_fits():
    params = {"a": {"x": 1, "y": 1}, "b": {"x": 2, "y": 1}, "c": {"x": 1, "y": 2}, "d": {"x": 2, "y": 2}}
    r = answers.best_rule({"b", "c"}, list(params), params, ["x", "y"], {"x": [1, 2], "y": [1, 2]})
    # Nothing selects exactly {b, c}; every rule misses by two, and the simplest of them wins.
    assert not r["exact"] and r["false_positives"] + r["missed"] == 2 and r["rule"] == {}


def test_a_point_kept_as_hashes_is_still_judged_from_its_counts():
    from reprokit.bundle import meaning

    case = {"id": "g.x", "family": "f", "control": "sweep", "expect": "tma"}
    rec = {**case, "status": "ok", "tma": {"ptx": 2}, "ir_sha256": {"ptx": "0" * 64}, "artifacts": {},
           "verdict": "tma", "met": True, "reason": ""}

    def results(r):
        return Results.from_json({"triton": "3.5.0", "mode": "compile-only", "cases": [r]})

    assert meaning.problems({"cases": [case]}, results(rec), {}) == []
    forged = {**rec, "verdict": "no-tma", "met": False}
    assert any("oracle gives 'tma'" in p for p in meaning.problems({"cases": [case]}, results(forged), {}))
    unhashed = {**rec, "ir_sha256": {}}
    assert any("holds no ptx IR" in p for p in meaning.problems({"cases": [case]}, results(unhashed), {}))
