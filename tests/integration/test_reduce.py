"""`reprokit reduce` on real compiles: the control suite's 3.0 crash case (experimental_descriptor.p1,
SIGABRT in TritonGPUAttrDefs.cpp.inc on Triton 3.0.0) is the one reduction CI runs; the rest reuse
its cache: a rerun resumes with no compile, a killed run resumes to the same kernel, --time-limit
keeps the best so far. A predicate that never held writes nothing. The verdict and metric
predicates are judged on real compiles of an original and one candidate (the big reductions are
`make bench-reduce`'s), and `bisect --scan` lists every transition of the tf32x3 case."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.compare.metric import parse_metric
from reprokit.config import load_config
from reprokit.executors.venv import VenvExecutor
from reprokit.options import BundleOptions, GpuOptions
from reprokit.plan import Plan
from reprokit.reduce import driver
from reprokit.reduce.cache import Cache
from reprokit.reduce.candidates import State
from reprokit.reduce.predicate import parse
from reprokit.run.bisect import Releases, scan
from reprokit.run.replay import write_kernels
from reprokit.userspec.plan import build_plan, project_run, stage_kernels
from reprokit.userspec.project import load
from tests.helpers.runs import host

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
BUNDLE = ROOT / "bundles" / "examples" / "triton-3.0-cu129-h100.tgz"
CASE = "experimental_descriptor.p1"


def reprokit(*args, cwd: Path, wait: bool = True):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "reprokit", *map(str, args)]
    if not wait:
        return subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=1200)


def _reduce(cwd: Path, cache: Path, out: Path, *more):
    return reprokit("reduce", BUNDLE, "--case", CASE, "--workers", "2", "--work", cache, "--out", out, "--json",
                    *more, cwd=cwd)


@pytest.fixture(scope="module")
def reduced(tmp_path_factory, stack_ready):
    stack_ready("triton-3.0-cu129")
    work = tmp_path_factory.mktemp("reduce")
    p = _reduce(work, work / "cache", work / "out")
    assert p.returncode == 0, p.stderr
    return work, json.loads(p.stdout)


def _cut_cache(src: Path, dest: Path, left: int) -> int:
    """A finished reduction's cache less its last `left` entries, as a kill would leave it (a torn
    last line); the number of whole entries kept."""
    dest.mkdir()
    lines = (src / "cache.jsonl").read_text().splitlines(keepends=True)
    keep = len(lines) - left
    (dest / "cache.jsonl").write_text("".join(lines[:keep]) + lines[keep][:25])
    return keep


def test_the_crash_case_shrinks_and_its_bundle_still_crashes_the_same_way(reduced):
    work, r = reduced
    o, z = r["original"], r["reduced"]
    assert (o["lines"], o["nodes"]) == (6, 47)
    # at most half its size: the load made a zero block of its shape and type, the crash kept
    assert 2 * z["lines"] <= o["lines"] and 2 * z["nodes"] <= o["nodes"], r["line"]
    assert "tl.zeros([1, 4], tl.float16)" in r["kernel"], r["kernel"]
    assert r["line"].startswith(f"from 6 lines / 47 AST nodes to {z['lines']} / {z['nodes']} in ")
    assert r["line"].endswith(f" s, {r['compiles']} compiles") and r["compiles"] > 0
    (path,) = r["bundles"]
    b = open_bundle(Path(path))   # verifies sums, schemas and the recounted verdict
    assert b.manifest["parent"] == hashlib.sha256(BUNDLE.read_bytes()).hexdigest()
    rec = b.records.case(CASE)
    assert (rec.status, rec.signal) == ("crash", "SIGABRT")
    assert "UNREACHABLE executed at" in rec.error and "TritonGPUAttrDefs.cpp.inc:385" in rec.error
    red = b.plan["reduced"]
    assert (red["from"], red["to"]) == (o, z)
    assert b.read_text(f"kernels/{red['file']}") == r["kernel"]
    assert "reproducer.py" in " ".join(rec.artifacts.values())   # the full reproducer, made by the harness
    p = reprokit("report", path, "--out", work / "issue.md", cwd=work)
    assert p.returncode == 0, p.stderr
    issue = (work / "issue.md").read_text()
    assert f"#### Reduced `{CASE}`" in issue and r["kernel"].strip() in issue


def test_a_rerun_resumes_from_the_cache_with_no_compile(reduced, tmp_path):
    work, r = reduced
    p = _reduce(work, work / "cache", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    again = json.loads(p.stdout)
    assert again["compiles"] == 0 and again["kernel"] == r["kernel"] and again["steps"] == r["steps"]


def test_a_killed_reduce_resumes_to_the_same_kernel(reduced, tmp_path):
    work, r = reduced
    kept = _cut_cache(work / "cache", tmp_path / "cache", 8)
    proc = reprokit("reduce", BUNDLE, "--case", CASE, "--workers", "2", "--work", tmp_path / "cache",
                    "--out", tmp_path / "out", "--json", cwd=tmp_path, wait=False)
    deadline = time.monotonic() + 600
    # killed once it has compiled something of its own past what it was given (and the torn line)
    while len((tmp_path / "cache" / "cache.jsonl").read_text().splitlines()) < kept + 2 and proc.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    os.killpg(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=120) == 128 + signal.SIGTERM
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tgz"))
    p = _reduce(tmp_path, tmp_path / "cache", tmp_path / "out")
    assert p.returncode == 0, p.stderr
    again = json.loads(p.stdout)
    assert again["kernel"] == r["kernel"] and again["steps"] == r["steps"]
    assert again["cached"] > kept and again["compiles"] < 8


def test_time_limit_stops_with_the_best_so_far(reduced, tmp_path):
    """A clock that moves one second per look: the search stops at its sixth look, on what the
    cache (the first half of the full run's) already knew, and keeps the best found by then."""
    work, r = reduced
    _cut_cache(work / "cache", tmp_path / "cache", len((work / "cache" / "cache.jsonl").read_text().splitlines()) // 2)
    b = open_bundle(BUNDLE)
    kernels = tmp_path / "kernels"
    kernels.mkdir()
    write_kernels(b, kernels)
    plan = Plan.from_json(b.plan, kernels=kernels)
    case = plan.case(CASE).to_json()
    profile = load_config().gpu("h100")
    subject = driver.Subject(CASE, plan, case, kernels, profile, b.sha256)
    settings = driver.Settings(GpuOptions(profile, "compile-only"), workers=2, time_limit_s=6, work=tmp_path / "cache")
    ticks = iter(range(10_000))
    got = driver.reduce(subject, [load_config().stack("triton-3.0-cu129")], parse(None, ("triton-3.0-cu129",), None,
                        "crash"), VenvExecutor(host=host()), settings, clock=lambda: float(next(ticks)))
    assert got.stopped == "time limit" and got.compiles == 0
    assert r["reduced"]["nodes"] <= got.reduced.nodes < got.original.nodes
    assert list(got.steps) == r["steps"][:len(got.steps)]   # the same path, cut short


def test_a_predicate_that_never_held_exits_7_and_writes_nothing(tmp_path, stack_ready):
    stack_ready("triton-3.0-cu129")
    p = reprokit("reduce", BUNDLE, "--case", "experimental_descriptor.p0", "--predicate", "crash",
                 "--work", tmp_path / "cache", "--out", tmp_path / "out", cwd=tmp_path)
    assert p.returncode == 7, p.stderr
    assert p.stderr.strip().splitlines()[-1].startswith("reprokit: experimental_descriptor.p0: the predicate (crash) "
                                                        "does not hold on the original")
    assert not (tmp_path / "out").exists()


def _project_subject(tmp_path: Path, name: str, case: str) -> driver.Subject:
    project = load(ROOT / "tests" / "data" / name / "reprokit.toml")
    profile = load_config().gpu("h100")
    stage_kernels(project, tmp_path / "kernels")
    plan = build_plan(project, profile, only=case, kernels=tmp_path / "kernels")
    return driver.Subject(case, plan, plan.case(case).to_json(), tmp_path / "kernels", profile)


def _judge(subject, stacks, spec, threshold, states, tmp_path):
    """The predicate learnt on the original, then judged on each state, from real compiles."""
    pred = parse(spec, tuple(s.name for s in stacks), threshold, "crash")
    settings = driver.Settings(GpuOptions(subject.profile, "compile-only"), workers=2, work=tmp_path / "cache")
    cache = Cache(settings.work)
    try:
        ev = driver.Evaluator(subject, stacks, pred, VenvExecutor(host=host()), settings, cache)
        learnt = pred.learn(ev.observe([states[0]], None)[0])
        assert not isinstance(learnt, str), learnt
        ev.predicate = learnt
        return learnt, [o is not None and learnt.holds(o) for o in ev.observe(states, learnt)]
    finally:
        cache.close()


def test_the_metric_predicate_on_real_compiles(tmp_path, stack_ready):
    stacks = [stack_ready("triton-3.7-cu130"), stack_ready("triton-3.8-cu130")]
    subject = _project_subject(tmp_path, "tf32x3", "dot.tf32x3")
    src = (subject.kernels / "dot_tf32x3.py").read_text()
    one_stage = json.loads(State.of(src, dict(subject.case)).case)
    one_stage["call"]["options"]["num_stages"] = 1   # no pipelining: no shared memory to move
    states = [State.of(src, dict(subject.case)), State.of(src, one_stage)]
    learnt, holds = _judge(subject, stacks, "metric:smem", 1000, states, tmp_path)
    assert (learnt.target["before"], learnt.target["after"]) == (1536, 3072)
    assert holds == [True, False]


def test_the_verdict_predicate_on_real_compiles(tmp_path, stack_ready):
    stacks = [stack_ready("triton-3.0-cu129")]
    b = open_bundle(BUNDLE)
    (tmp_path / "kernels").mkdir()
    write_kernels(b, tmp_path / "kernels")
    plan = Plan.from_json(b.plan, kernels=tmp_path / "kernels")
    case = plan.case("experimental_descriptor.p0").to_json()
    subject = driver.Subject(case["id"], plan, case, tmp_path / "kernels", load_config().gpu("h100"), b.sha256)
    src = (tmp_path / "kernels" / "copy_experimental_descriptor.py").read_text()
    no_store = src.replace("    tl._experimental_descriptor_store(dst_desc, x, [pm * BM, pn * BN])\n", "")
    learnt, holds = _judge(subject, stacks, "verdict", None, [State.of(src, case), State.of(no_store, case)], tmp_path)
    assert learnt.target["verdicts"] == ("tma",)
    assert holds == [True, False]   # without the store nothing is loaded either: no TMA left


def test_a_scan_lists_every_transition_of_the_tf32x3_case(tmp_path, stack_ready):
    names = ("triton-3.5-cu130", "triton-3.6-cu130", "triton-3.7-cu130", "triton-3.8-cu130", "triton-3.9-cu132")
    versions = tuple(stack_ready(n).triton for n in names)
    profile = load_config().gpu("h100")
    project = load(ROOT / "tests" / "data" / "tf32x3" / "reprokit.toml")
    with project_run(project, GpuOptions(profile, "compile-only"), tmp_path, only="dot.tf32x3") as plan:
        r = scan("dot.tf32x3", profile, Releases(versions, (), "3"), load_config(), VenvExecutor(host=host()),
                 BundleOptions.from_host(host(), tmp_path / "out"), metric=parse_metric("smem"), plan=plan, jobs=3)
    assert {p.version: p.value for p in r.points} == {"3.5.0": 1536, "3.6.0": 1536, "3.7.1": 1536, "3.8.0": 3072,
                                                      "3.9.0": 1536}
    assert r.answer == ("dot.tf32x3 on h100: smem 1536 on 3.5.0; regressed in 3.8.0 (smem 1536 -> 3072), "
                        "fixed in 3.9.0 (smem 3072 -> 1536)")
    assert len(r.bundles) == len(r.points) == 5 and all(Path(b).is_file() for b in r.bundles)
    p = reprokit("report", *r.bundles, "--out", tmp_path / "issue.md", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    issue = (tmp_path / "issue.md").read_text()
    assert "#### Across releases" in issue
    assert "regressed in 3.8.0 (smem 1536 -> 3072); fixed in 3.9.0 (smem 3072 -> 1536)" in issue
