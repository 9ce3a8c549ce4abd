"""`reprokit reduce`'s GPU predicates on the device, one stack (this interpreter's Triton, as
`make test-gpu` runs with EXECUTOR=local): a planted bug in a traced matmul keeps `wrong` (the
harness against the outputs the trace recorded), a planted slowdown in the suite's tensor-descriptor
copy keeps `slower` (against the time the bundle recorded, both as ratios to their run's torch
copy). Each reduction is capped by a time limit, rechecked from a clean run and bundled; the
figures and the reduced bundles land under $OUT when it is set."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.executors import local_stack, make_executor
from reprokit.gpu import HostGpus, gpu_options
from reprokit.options import BundleOptions
from reprokit.plan import Plan
from reprokit.reduce import driver
from reprokit.reduce.predicate import parse
from reprokit.run.replay import write_kernels, write_tensors
from tests.helpers.runs import host

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "bundles" / "examples"


def _subject(bundle_name: str, case_id: str, plant, tmp: Path) -> driver.Subject:
    b = open_bundle(EXAMPLES / bundle_name)
    kernels = tmp / "kernels"
    plan = Plan.from_json(b.plan, kernels=kernels)
    case = plan.case(case_id).to_json()
    kernels.mkdir()
    write_kernels(b, kernels)
    file = case.get("file") or case["kernel"]["file"]
    src = (kernels / file).read_text()
    planted = plant(src)
    assert planted != src, "the plant did not take"
    (kernels / file).write_text(planted)
    tensors = tmp / "tensors"
    kept = write_tensors(b, plan.only([case_id]), tensors)
    return driver.Subject(case_id, plan, case, kernels, plan.profile, b.sha256, tensors if kept else None,
                          b.records.case(case_id))


def _reduce(subject: driver.Subject, spec: str, threshold, tmp: Path) -> driver.Reduction:
    h = host()
    gpu = gpu_options(subject.profile, "gpu", HostGpus.for_mode("gpu", os.environ.get("CUDA_VISIBLE_DEVICES")),
                      allow_mismatch=True)
    stack = local_stack()
    pred = parse(spec, (stack.name,), threshold, "crash")
    settings = driver.Settings(gpu, workers=1, batch=2, time_limit_s=float(os.environ.get("REDUCE_GPU_LIMIT", "240")),
                               work=tmp / "cache")
    with make_executor("local", h, with_torch=True) as ex:
        r = driver.reduce(subject, [stack], pred, ex, settings)
        r = driver.recheck_and_bundle(subject, [stack], r, ex, settings, BundleOptions.from_host(h, tmp / "out"))
    out = os.environ.get("OUT")
    if out:
        Path(out).mkdir(parents=True, exist_ok=True)
        with open(Path(out) / f"reduce-{spec}.json", "w") as f:
            json.dump(r.to_dict(), f, indent=1)
        for b in r.bundles:  # the reduced bundles, to commit beside the figures
            shutil.copy2(b, Path(out) / f"reduce-{spec}-{Path(b).name}")
    return r


def test_a_planted_bug_stays_wrong_the_same_way_while_the_kernel_shrinks(tmp_path):
    """Every element of c off by the planted 1.0: the reduced kernel must write the very bytes the
    planted one wrote (an emptied kernel is wrong too, but leaves c as memory was: on the H100 the
    looser predicate once reduced this case to `pass`). Little of a matmul can go without changing
    them: the lines do, the planted bug stays."""
    planted = "c_desc.store([offs_am, offs_bn], (accumulator + 1.0).to(dtype))"
    subject = _subject("h100-trace-tensors-triton-3.6.0.tgz", "matmul_kernel_descriptor_persistent.1",
                       lambda s: s.replace("c_desc.store([offs_am, offs_bn], accumulator.to(dtype))", planted),
                       tmp_path)
    r = _reduce(subject, "wrong", None, tmp_path)
    assert r.reduced.lines < r.original.lines and r.reduced.nodes <= r.original.nodes, r.line()
    assert planted in r.state.source
    (path,) = r.bundles
    rec = open_bundle(path).records.case(subject.case_id)
    assert rec.gpu.get("status") == "wrong"
    assert {k: (v.get("reference") or {}).get("match") for k, v in rec.gpu["outputs"].items()} == {"c_ptr": "differs"}


def test_a_planted_slowdown_stays_slower_while_the_kernel_shrinks(tmp_path):
    body = "    d.store([pm * BM, pn * BN], s.load([pm * BM, pn * BN]))\n"
    slow = "    for _ in range(32):\n        d.store([pm * BM, pn * BN], s.load([pm * BM, pn * BN]))\n"
    subject = _subject("h100-gpu-triton-3.6.0.tgz", "tensor_descriptor.p0", lambda s: s.replace(body, slow, 1),
                       tmp_path)
    r = _reduce(subject, "slower", 1.0, tmp_path)
    assert r.reduced.nodes <= r.original.nodes, r.line()
    (path,) = r.bundles
    rec = open_bundle(path).records.case(subject.case_id)
    assert rec.gpu.get("status") == "ok"   # still copies correctly: only slower
