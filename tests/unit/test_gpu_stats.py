"""The CPU-side arithmetic of GPU runs: tolerances by dtype, timing summaries, spread and the
agreement of two timing methods, throughput, launch-error parsing, throttle decoding, the launch
recipes' coverage of the suite, and the results schema for GPU records."""

from __future__ import annotations

import json

import pytest

from reprokit.bundle.schemas import problems
from reprokit.config import load_config
from reprokit.harness import bench, stats
from reprokit.harness.kinds import launch
from reprokit.suite import build_plan

OOR = ("out of resource: shared memory, Required: 262176, Hardware limit: 232448. "
       "Reducing block sizes or `num_stages` may help.")


def test_tolerance_by_dtype_and_exact_copies():
    assert stats.tolerance("float16") == {"rtol": 1e-2, "atol": 1e-2, "rel_fro": 5e-3}
    assert stats.tolerance("bfloat16")["rel_fro"] > stats.tolerance("float16")["rel_fro"]
    assert stats.tolerance("float32")["rtol"] < stats.tolerance("tf32")["rtol"]
    assert stats.tolerance("float16", exact=True) == {"rtol": 0.0, "atol": 0.0, "rel_fro": 0.0}
    with pytest.raises(ValueError, match="float8"):
        stats.tolerance("float8")


def test_within_rejects_excess_and_nan():
    tol = stats.tolerance("float16")
    assert stats.within(0.0, 1e-3, tol)
    assert not stats.within(1e-6, 1e-3, tol)
    assert not stats.within(0.0, 6e-3, tol)
    assert not stats.within(float("nan"), 0.0, tol)
    assert not stats.within(0.0, float("nan"), tol)


def test_summarize_drops_iqr_outliers_and_reports_spread_inside_a_run():
    xs = [1.0, 1.01, 0.99, 1.02, 0.98, 1.0, 5.0]  # one launch hit by a hiccup
    s = stats.summarize(xs)
    assert s["n"] == 7 and s["outliers"] == 1
    assert s["median_ms"] == pytest.approx(1.0)
    assert s["max_ms"] == pytest.approx(1.02)
    assert s["iqr_rel"] == pytest.approx((s["p75_ms"] - s["p25_ms"]) / 1.0)
    assert stats.quantile([1.0, 2.0, 3.0, 4.0], 0.5) == pytest.approx(2.5)
    with pytest.raises(ValueError):
        stats.summarize([])


def test_spread_of_round_medians_and_agreement_of_methods():
    assert stats.spread([1.0, 1.01, 0.99]) == pytest.approx(0.02)
    assert stats.spread([1.0]) is None
    assert stats.agreement(1.0, 1.03) == pytest.approx(0.03)
    assert stats.agreement(1.03, 1.0) == pytest.approx(0.03)
    assert stats.agreement(None, 1.0) is None


FLUSH = "reduce_kernel<512, 1, at::native::ReduceOp<float, sum_functor>>"


def _records(launches, flush_ns=85_000, gap_ns=3_000):
    """Profiler records as the GPU leaves them: a flush, then each launch's kernels, in order."""
    out, t = [], 0
    for kernels in launches:
        out.append((FLUSH, t, t + flush_ns))
        t += flush_ns + gap_ns
        for name, dur in kernels:
            out.append((name, t, t + dur))
            t += dur + 500
    return out


def test_profiler_records_split_into_launches_between_flushes():
    recs = _records([[("copy_p0", 21_000)], [("copy_p0", 22_000)],
                     [("nvjet_gemm", 30_000), ("splitk_reduce", 2_000)], [("nvjet_gemm", 31_000), ("splitk_reduce", 2_000)]])
    kernel, cublas = stats.split_launches(recs, {FLUSH}, [2, 2])
    assert kernel == pytest.approx([0.021, 0.022])
    # a call of several kernels is timed whole: first start to last end, the gap between them included
    assert cublas == pytest.approx([0.0325, 0.0335])


def test_profiler_records_that_do_not_match_the_launches_are_refused():
    recs = _records([[("copy_p0", 21_000)], [], [("copy_p0", 21_000)]])  # one launch left no record
    with pytest.raises(ValueError, match="recorded 2 launches between flushes, not 3"):
        stats.split_launches(recs, {FLUSH}, [3])
    with pytest.raises(ValueError):
        stats.split_launches(_records([[("copy_p0", 21_000)]] * 4), {FLUSH}, [2, 1])


def test_contender_headline_is_the_profiler_where_it_ran_else_events():
    raw = {"events": [[0.0245, 0.0247, 0.0248], [0.0246, 0.0246, 0.0249], [0.0244, 0.0247, 0.0246]],
           "profiler": [[0.0211, 0.0210, 0.0212], [0.0211, 0.0211, 0.0213], [0.0209, 0.0211, 0.0211]],
           "graph": [[0.0313, 0.0314]]}
    s = bench.summarize_contender(raw)
    assert s["headline"] == "profiler" and s["median_ms"] == pytest.approx(0.0211)
    assert s["round_medians_ms"] == pytest.approx([0.0211, 0.0211, 0.0211]) and s["spread"] == pytest.approx(0.0)
    assert s["agreement"] == pytest.approx((0.0246 - 0.0211) / 0.0211)  # events vs profiler, same launches
    assert s["graph_agreement"] == pytest.approx((0.03135 - 0.0211) / 0.0211)
    assert s["profiler_error"] is None and s["method"].startswith("profiler")
    s = bench.summarize_contender(dict(raw, profiler=[]), "the profiler recorded no GPU activity")
    assert s["headline"] == "events" and s["median_ms"] == pytest.approx(0.0246)
    assert s["profiler"] is None and s["profiler_error"] == "the profiler recorded no GPU activity"
    assert s["agreement"] == pytest.approx((0.03135 - 0.0246) / 0.0246)  # events vs graphs then
    assert s["round_medians_ms"] == pytest.approx([0.0247, 0.0246, 0.0246])


def test_throughput_copy_counts_read_and_write_gemm_counts_2mnk():
    c = stats.throughput("copy", {"M": 4096, "N": 4096, "elem_bytes": 2}, 0.025, 3350)
    assert c["gbs"] == pytest.approx(2 * 4096 * 4096 * 2 / 25e-6 / 1e9)
    assert c["pct_of_peak"] == pytest.approx(100 * c["gbs"] / 3350)
    g = stats.throughput("gemm", {"M": 8192, "N": 8192, "K": 8192}, 1.6, 989.4)
    assert g["tflops"] == pytest.approx(2 * 8192 ** 3 / 1.6e-3 / 1e12)
    with pytest.raises(ValueError):
        stats.throughput("conv", {}, 1.0, 1.0)


def test_out_of_resources_keeps_the_real_text_required_bytes_and_limit():
    f = stats.classify_launch_error("OutOfResources", OOR)
    assert f["status"] == "out_of_resources" and f["resource"] == "shared memory"
    assert (f["required"], f["limit"]) == (262176, 232448)
    assert f["error"].startswith("OutOfResources: out of resource: shared memory, Required: 262176")


def test_other_launch_failures_become_statuses():
    ill = stats.classify_launch_error("RuntimeError", "Triton Error [CUDA]: an illegal memory access was encountered")
    assert ill["status"] == "illegal_address"
    uns = stats.classify_launch_error("RuntimeError", "CUDA error: no kernel image is available for execution")
    assert uns["status"] == "unsupported"
    other = stats.classify_launch_error("ValueError", "pointer argument cannot be accessed from Triton\n(cpu tensor?)")
    assert other["status"] == "launch_error" and "\n" not in other["error"]


def test_every_suite_case_has_a_recipe_or_a_stated_reason_not_to_launch():
    plan = build_plan(load_config().gpu("h100"), {"name": "local"}).to_json()
    for case in plan["cases"]:
        recipe, why = launch.recipe_for(case)
        key = (case["family"], case["kernel"]["function"])
        assert recipe is not None or key in launch.NO_RECIPE, case["id"]
        if case["control"] in ("P0", "gemm") and case["family"] != "inductor":  # Inductor times its own
            assert recipe is not None and recipe.bench, case["id"]


def _gpu_record():
    contender = {"method": "profiler", "headline": "profiler", "median_ms": 0.03,
                 "round_medians_ms": [0.03, 0.0301, 0.0299],
                 "events": stats.summarize([0.032, 0.0331, 0.0329]), "profiler": stats.summarize([0.03, 0.0301, 0.0299]),
                 "profiler_error": None, "graph_agreement": 0.01, "spread": 0.0067,
                 "graph_median_ms": 0.0297, "graph": stats.summarize([0.0297]), "graph_error": None,
                 "agreement": 0.01, "gbs": 2200.0, "pct_of_peak": 65.7}
    return {
        "id": "host_descriptor.p0", "family": "host_descriptor", "control": "P0", "status": "ok",
        "artifacts": {"bench": "cases/host_descriptor.p0/bench.json"}, "verdict": "tma", "expect": "tma",
        "met": True, "reason": "SASS has UTMALDG",
        "gpu": {"status": "ok", "device": "NVIDIA H100 80GB HBM3", "check_size": {"M": 4096, "N": 4096},
                "correctness": {"ok": True, "elements": 4096 * 4096, "unwritten": 0, "mismatched": 0,
                                "max_abs_err": 0.0, "rel_fro_err": 0.0, "dtype": "float16",
                                "tolerance": stats.tolerance("float16", exact=True)},
                "determinism": {"runs": 5, "distinct": 1, "deterministic": True, "sha256": "ab" * 32},
                "bench": [{"size": {"M": 4096, "N": 4096, "elem_bytes": 2}, "baseline_name": "torch.copy_",
                           "kernel": contender, "baseline": contender, "ratio_to_baseline": 1.0,
                           "nvml": {"available": True, "throttled": True, "throttled_for": ["sw_power_cap"],
                                    "throttle_reasons_seen": ["sw_power_cap"]}}]},
    }


def _results(case):
    return {"format": 1, "harness": "0.1.0", "triton": "3.6.0", "target": {"backend": "cuda", "arch": 90},
            "started": "2026-11-23T12:00:00Z", "finished": "2026-11-23T12:01:00Z", "wall_s": 60.0,
            "workers": 1, "mode": "gpu", "cases": [case]}


def test_results_schema_takes_gpu_records_and_refuses_bad_ones():
    case = _gpu_record()
    assert problems("results.json", json.loads(json.dumps(_results(case)))) == []
    oor = dict(case, gpu={"status": "out_of_resources", "device": "NVIDIA H100 80GB HBM3",
                          **stats.classify_launch_error("OutOfResources", OOR)})
    assert problems("results.json", _results(oor)) == []
    bad = dict(case, gpu=dict(case["gpu"], status="fast"))
    assert any("gpu" in p and "status" in p for p in problems("results.json", _results(bad)))
    row = case["gpu"]["bench"][0]
    bad = dict(case, gpu=dict(case["gpu"], bench=[dict(row, kernel=dict(row["kernel"], headline="fastest"))]))
    assert any("headline" in p for p in problems("results.json", _results(bad)))
    bad = dict(case, gpu=dict(case["gpu"], required="262176"))
    assert any("required" in p for p in problems("results.json", _results(bad)))
