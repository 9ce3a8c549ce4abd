"""A GPU sweep's plumbing on a CPU machine: real Triton 3.5 compiles of the reduced gemm-configs
grid in a pinned venv, the real harness, records, resume, condensing, answers, bundle and printed
table; only the GPU part (launch.run_on_gpu, the launch and timing of one point) is stood in for,
planted through sitecustomize as the negative-control tests plant theirs. The stand-in launches
nothing: it takes the shared memory the real compile of the point reported, fails a point
that needs more than the profile allows with the driver's own wording (classified by the real
stats.classify_launch_error), and times the others from a model through the real
bench.summarize_contender. It logs every point it ran, so a resume that measures a point again
is seen."""

from __future__ import annotations

import json
import os
import re

import pytest

from reprokit.bundle import schemas
from reprokit.bundle.reader import open_bundle
from reprokit.commands.sweep import answer_rows
from reprokit.config import load_config
from reprokit.executors.venv import VenvExecutor
from reprokit.options import BundleOptions, GpuOptions, HostEnv
from reprokit.sweep.run import SweepOptions, run_sweep
from reprokit.sweep.spec import load_spec

pytestmark = pytest.mark.triton
STACK = "triton-3.5-cu130"

PLANT = r'''
import json, os, re
import reprokit.harness.kinds.launch as launch
from reprokit.harness import bench, stats

def _ms(p, n):
    # A model, not a measurement: bigger tiles and more stages are faster, up to a point.
    work = 2.0 * n ** 3
    eff = min(0.9, 0.1 * (p["BM"] * p["BN"]) ** 0.25 / 4 * (1 + 0.1 * p["num_stages"]) * p["BK"] ** 0.1)
    return work / (eff * 989.4e12) * 1e3

def _contender(ms):
    rounds = [[ms * (1 + 0.001 * ((i * 7 + r) % 5)) for i in range(6)] for r in range(3)]
    raw = {"events": rounds, "profiler": [], "graph": [], "reached": [True] * 3, "noise": [0.002] * 3,
           "elapsed_s": [0.01] * 3, "spin_cycles": 40000, "spin_event_ms": [[0.02] * 6] * 3,
           "discarded": [[], [], []]}
    return bench.summarize_contender(raw, "not run: the budget times by CUDA events only", {"flush_l2": True})

def run_on_gpu(case, plan, kernels_dir, case_dir, aot):
    with open(os.environ["FAKE_GPU_LOG"], "a") as f:
        f.write(case["id"] + "\n")
    shared = _SHARED[0]
    limit = plan["profile"]["smem_per_block"]
    out = {"status": "ok", "device": "NVIDIA H100 80GB HBM3 (stand-in)", "check_size": {"M": 2000, "N": 2000, "K": 2000}}
    if shared > limit:
        out.update(stats.classify_launch_error("OutOfResources", f"out of resource: shared memory, Required: {shared}, Hardware limit: {limit}. Reducing block sizes or `num_stages` may help."))
        return out
    p = case["sweep"]["params"]
    rows = []
    for n in launch.SWEEP_GEMM_SIZES:
        size = {"M": n, "N": n, "K": n}
        row = {"size": size, "baseline_name": "cublas (torch.matmul)", "kernel": _contender(_ms(p, n)),
               "baseline": _contender(work_ms := 2.0 * n ** 3 / 700e12 * 1e3)}
        for who in ("kernel", "baseline"):
            row[who].update(stats.throughput("gemm", size, row[who]["median_ms"], plan["profile"]["fp16_tflops"]))
        row["ratio_to_baseline"] = row["baseline"]["median_ms"] / row["kernel"]["median_ms"]
        rows.append(row)
    with open(os.path.join(case_dir, "bench.json"), "w") as f:
        json.dump({"case": case["id"], "unit": "ms", "runs": [{"size": r["size"]} for r in rows]}, f)
    out["bench"] = rows
    out["gpu_s"] = 0.1
    return out

import reprokit.harness.case as case_mod

_SHARED = [None]
_real_on_gpu = case_mod._on_gpu

def _on_gpu(case, plan, kernels_dir, case_dir, rec):
    _SHARED[0] = rec["metadata"]["shared_bytes"]  # what the real compile of this point needs
    return _real_on_gpu(case, plan, kernels_dir, case_dir, rec)

launch.run_on_gpu = run_on_gpu
case_mod._on_gpu = _on_gpu
'''


@pytest.fixture
def planted(tmp_path, monkeypatch):
    site = tmp_path / "plant"
    site.mkdir()
    (site / "sitecustomize.py").write_text(PLANT)
    log = tmp_path / "gpu.log"
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(site), os.environ.get("PYTHONPATH")])))
    monkeypatch.setenv("FAKE_GPU_LOG", str(log))
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1700000000")
    return log


def _sweep(tmp_path, workers=2):
    cfg = load_config()
    host = HostEnv.from_environ(os.environ)
    profile = cfg.gpu("h100")
    gpu = GpuOptions(profile, "gpu", host={"index": 0, "name": "NVIDIA H100 80GB HBM3", "capability": 90,
                                           "memory_total": 85520809984})
    opts = SweepOptions(work=tmp_path / "work", workers=workers, gpus=("h100",), stacks=(STACK,), reduced=True,
                        mode="gpu", gpu=(gpu,))
    (outcome,) = run_sweep(load_spec("gemm-configs"), cfg, opts, BundleOptions.from_host(host, tmp_path / "out"),
                           VenvExecutor(host=host))
    assert outcome.ok, outcome.error
    return outcome


def test_gpu_sweep_launches_every_compiled_point_keeps_launch_errors_answers_and_resumes(tmp_path, planted,
                                                                                          stack_ready):
    stack_ready(STACK)
    first = _sweep(tmp_path)
    work = tmp_path / "work" / "gemm-configs-reduced-gpu" / f"{STACK}-h100"
    records = {p.parent.name: json.loads(p.read_text()) for p in (work / "cases").glob("*/record.json")}
    compiled = sorted(i for i, r in records.items() if r["status"] == "ok")
    ran = planted.read_text().split()
    # Every point that compiled went to the GPU, once; no other point did.
    assert sorted(ran) == compiled and len(compiled) >= 15
    assert first.ran == len(records)

    a = first.answers
    assert not schemas.problems("sweep.json", a)
    g = next(g for g in a["groups"] if g["group"] == "gemm_tensor_descriptor")
    m = g["gpu"]
    named = {n["name"]: n for n in m["named"]}
    # The proposal's aggressive configs need more shared memory than an H100 block has: the
    # launch error is their record, with the figures the driver's message gave.
    for name, need in (("aggressive-128x128x128", 262176), ("aggressive-256x128x128", 393248)):
        assert named[name]["status"] == "out_of_resources", named[name]
        assert named[name]["required"] == need and named[name]["limit"] == 232448
        assert "Required: %d, Hardware limit: 232448" % need in named[name]["error"]
    assert named["conservative"]["status"] == "ok"
    assert set(named["conservative"]["sizes"]) == {"4096x4096x4096", "8192x8192x8192"}
    oor = next(f for f in m["failures"] if f["status"] == "out_of_resources")
    assert oor["count"] == m["statuses"]["out_of_resources"] and oor["resource"] == "shared memory"
    # The best config per size is the highest fraction of cuBLAS among the timed points.
    timed = {i: r["gpu"]["bench"] for i, r in records.items() if (r.get("gpu") or {}).get("bench")}
    for b in m["best"]:
        n = int(b["size"].split("x")[0])
        fracs = {i: next(row["ratio_to_baseline"] for row in rows if row["size"]["M"] == n) for i, rows in timed.items()}
        assert b["timed"] == len(fracs) and b["best"]["id"] == max(fracs, key=lambda i: (fracs[i], i))
        assert abs(b["best"]["of_cublas"] - fracs[b["best"]["id"]]) < 1e-4
    text = m["proposal"]["answer"]
    assert "cannot launch: aggressive-128x128x128 (out_of_resources: shared memory 262176 > 232448)" in text
    assert "no aggressive config launches" in text
    cols, rows = answer_rows([a])
    shown = dict(rows)
    assert shown["gemm_tensor_descriptor: aggressive-256x128x128 at 8192x8192x8192"] == [
        "out_of_resources: shared memory 393248 > 232448"]
    assert re.fullmatch(r"\d+\.\d% of cuBLAS \(\d+ TFLOP/s\)",
                        shown["gemm_tensor_descriptor: conservative at 4096x4096x4096"][0])

    # The bundle carries every point's GPU record and raw samples, and the same answers.
    b = open_bundle(first.bundle)
    assert json.loads(b.read("sweep.json")) == a
    rec = {c["id"]: c for c in b.results["cases"]}
    for i in timed:
        assert rec[i]["gpu"]["bench"] and rec[i]["artifacts"]["bench"] == f"cases/{i}/bench.json"

    # Resume: points whose records are gone run again, on the GPU too; the others are not redone.
    gone = compiled[:3]
    for i in gone:
        (work / "cases" / i / "record.json").unlink()
    planted.write_text("")
    second = _sweep(tmp_path)
    assert sorted(planted.read_text().split()) == sorted(gone)
    assert second.ran == 3
    assert second.answers["groups"] == a["groups"]
