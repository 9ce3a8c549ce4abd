"""Bisect's parts that need no index or compiler: the range, the release list, the stack a release
gets, and the search itself over every position of the change (the captures come from a runner
that answers by version; tests/integration runs the real one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.options import BundleOptions
from reprokit.records import CaseRecord, Results
from reprokit.run.bisect import Releases, bisect, list_releases, max_captures, parse_range, stack_for
from reprokit.run.stacks import StackOutcome

INDEX = ["3.9.0", "3.8.0", "3.7.1", "3.7.0", "3.6.0", "3.5.1", "3.5.0", "3.4.0", "3.3.1", "3.3.0", "3.2.0",
         "3.1.0", "3.0.0", "2.3.1"]


def test_ranges():
    assert parse_range("3.0.0..3.9.0") == ("3.0.0", "3.9.0")
    for bad in ("3.0", "3.9.0..3.0.0", "a..b", ""):
        with pytest.raises(UsageError):
            parse_range(bad)


def test_releases_in_range_and_those_without_a_wheel_are_named():
    r = list_releases("3.0.0", "3.9.0", "python", pip_versions=lambda py: ([v for v in INDEX if v != "3.9.0"], "3.10.4"),
                      all_versions=lambda url: INDEX + ["4.0.0rc1"])
    assert r.usable[0] == "3.0.0" and r.usable[-1] == "3.8.0" and len(r.usable) == 12
    assert r.skipped == ("3.9.0",) and r.python == "3.10.4" and r.note is None
    with pytest.raises(UsageError, match="no Triton release from 3.0.1 to 3.0.9"):
        list_releases("3.0.1", "3.0.9", "python", pip_versions=lambda py: (INDEX, "3.11"),
                      all_versions=lambda url: INDEX)
    with pytest.raises(UsageError, match=r"3\.9\.0 have no wheel for Python 3\.10"):
        list_releases("3.9.0", "3.9.9", "python", pip_versions=lambda py: (INDEX[1:], "3.10"),
                      all_versions=lambda url: INDEX)

    def offline(url):
        raise OSError("network unreachable")

    r = list_releases("3.0.0", "3.9.0", "python", pip_versions=lambda py: (INDEX, "3.11"), all_versions=offline)
    assert len(r.usable) == 13 and r.skipped == () and "network unreachable" in r.note


def test_a_release_stacks_toml_pins_uses_that_stack_else_its_own_on_an_older_base():
    cfg = load_config()
    assert stack_for("3.0.0", cfg).name == "triton-3.0-cu129"
    own = stack_for("3.3.0", cfg)
    assert own.name == "triton-3.3.0" and own.triton == "3.3.0" and own.torch is None
    assert own.base_image == cfg.stack("triton-3.2-cu129").base_image


@pytest.mark.parametrize("change_at", range(1, 13))
def test_the_search_finds_every_change_point_within_the_bound(tmp_path, change_at):
    versions = tuple(sorted(INDEX[:-1], key=lambda v: tuple(map(int, v.split(".")))))
    calls = []

    def run(stacks, executor, options, bundle, progress=None):
        (stack,) = stacks
        v = stack.triton
        calls.append(v)
        out = Path(bundle.out_dir)
        out.mkdir(parents=True)
        path = out / f"{stack.name}.tgz"
        path.write_bytes(v.encode())
        after = versions.index(v) >= change_at
        case = CaseRecord("x.p0", "x", "P0", "unsupported" if after else "ok", "unsupported" if after else "tma",
                          "tma", None, "")
        return [StackOutcome(stack.name, path, Results(v, "compile-only", (case,)), None)]

    steps = []
    r = bisect("x.p0", load_config().gpu("h100"), Releases(versions, (), "3.11"), load_config(), None,
               BundleOptions(out_dir=tmp_path / "out"), on_step=steps.append, run=run)
    assert (r.last_same, r.first_changed) == (versions[change_at - 1], versions[change_at])
    assert len(calls) == len(set(calls)) == len(r.steps) <= max_captures(len(versions)) == 6
    assert [s.version for s in steps] == calls and steps[0].same_as_first is None
    assert sorted(p.read_bytes().decode() for p in (tmp_path / "out").iterdir()) == sorted(
        [versions[change_at - 1], versions[change_at]])
    assert r.answer.startswith(f"x.p0 on h100: first changed in Triton {versions[change_at]} (unsupported/unsupported)")


def test_no_change_in_the_range_says_so(tmp_path):
    def run(stacks, executor, options, bundle, progress=None):
        out = Path(bundle.out_dir)
        out.mkdir(parents=True)
        (out / "b.tgz").write_bytes(b"x")
        case = CaseRecord("x.p0", "x", "P0", "ok", "tma", "tma", True, "")
        return [StackOutcome(stacks[0].name, out / "b.tgz", Results("3.0.0", "compile-only", (case,)), None)]

    r = bisect("x.p0", load_config().gpu("h100"), Releases(("3.0.0", "3.1.0", "3.2.0"), (), "3.11"), load_config(),
               None, BundleOptions(out_dir=tmp_path / "o"), run=run)
    assert r.first_changed is None and len(r.steps) == 2 and "ok/tma on every release tested" in r.answer


def test_metrics_read_what_a_compile_shows():
    from reprokit.compare.metric import parse_metric
    from reprokit.errors import UsageError

    rec = CaseRecord("m.p0", "m", "P0", "ok", "tma", "tma", True, "", tma={"ptx": 2, "sass": 3},
                     metadata={"registers": 127, "shared_bytes": 1024, "spill_stores": 2, "spill_loads": 1})
    assert parse_metric("verdict").value(rec) == ("ok", "tma")
    assert parse_metric("regs").value(rec) == 127 and parse_metric("smem").value(rec) == 1024
    assert parse_metric("spills").value(rec) == 3 and parse_metric("tma:sass").value(rec) == 3
    ir = "cp.async.bulk.wait_group 0;\ncp.async.bulk.wait_group 0;\n"
    op = parse_metric("op:cp.async.bulk.wait_group@ptx")
    assert (op.level, op.op) == ("ptx", "cp.async.bulk.wait_group") and op.value(rec, lambda lv: ir) == 2
    assert parse_metric("regs").value(CaseRecord("m.p0", "m", "P1", "compile_error", "rejected", "no-tma", True, "")) is None
    m = parse_metric("regs", 8)
    assert m.same(127, 120) and not m.same(127, 94) and not m.same(127, None)
    for bad, words in (("speed", "expected verdict"), ("tma:cubin", "unknown IR level"), ("op:mma", "expected")):
        with pytest.raises(UsageError, match=words):
            parse_metric(bad)
    with pytest.raises(UsageError, match="numeric"):
        parse_metric("verdict", 1)


@pytest.mark.parametrize("threshold,first_changed", [(None, "3.5.0"), (10, "3.6.0")])
def test_bisect_on_registers_finds_the_release_where_they_moved(tmp_path, threshold, first_changed):
    from reprokit.compare.metric import parse_metric

    regs = {"3.4.0": 127, "3.5.0": 120, "3.6.0": 94, "3.7.1": 94, "3.8.0": 94}
    versions = tuple(regs)

    def run(stacks, executor, options, bundle, progress=None):
        (stack,) = stacks
        out = Path(bundle.out_dir)
        out.mkdir(parents=True)
        (out / f"{stack.name}.tgz").write_bytes(stack.triton.encode())
        case = CaseRecord("m.p0", "m", "P0", "ok", "tma", "tma", True, "", metadata={"registers": regs[stack.triton]})
        return [StackOutcome(stack.name, out / f"{stack.name}.tgz", Results(stack.triton, "compile-only", (case,)), None)]

    r = bisect("m.p0", load_config().gpu("h100"), Releases(versions, (), "3.11"), load_config(), None,
               BundleOptions(out_dir=tmp_path / "out"), run=run, metric=parse_metric("regs", threshold))
    assert r.first_changed == first_changed and r.metric == "regs"
    assert r.answer.startswith(f"m.p0 on h100: first changed in Triton {first_changed} (regs {regs[first_changed]})")
    assert [s.value for s in r.steps][:2] == [127, 94]
