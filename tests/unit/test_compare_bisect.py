"""Bisect's parts that need no index or compiler: the range, the release list, the stack a release
gets, and the search itself over every position of the change (the captures go through the real
spine, with an executor whose harness answers by version; tests/integration runs real stacks)."""

from __future__ import annotations

import json
import tarfile

import pytest

from reprokit.compare.metric import parse_metric
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.options import BundleOptions, HostEnv, Listener
from reprokit.records import CaseRecord
from reprokit.run.bisect import (
    PackageIndex,
    Releases,
    bisect,
    list_releases,
    max_captures,
    parse_range,
    scan,
    stack_for,
)
from tests.helpers.scripted_executor import ScriptedExecutor

CASE = "block_ptr.p0"  # a case of the suite: bisect plans it as a capture would
INDEX = ["3.9.0", "3.8.0", "3.7.1", "3.7.0", "3.6.0", "3.5.1", "3.5.0", "3.4.0", "3.3.1", "3.3.0", "3.2.0",
         "3.1.0", "3.0.0", "2.3.1"]


def test_ranges():
    assert parse_range("3.0.0..3.9.0") == ("3.0.0", "3.9.0")
    for bad in ("3.0", "3.9.0..3.0.0", "a..b", ""):
        with pytest.raises(UsageError):
            parse_range(bad)


class Index(PackageIndex):
    """A package index that answers from lists: pip's wheels for the target Python, and every
    release (or the error of an index that cannot be reached)."""

    def __init__(self, wheels, python, everything):
        self._wheels, self._python, self._everything = wheels, python, everything

    def wheels(self, python):
        return list(self._wheels), self._python

    def releases(self):
        if isinstance(self._everything, Exception):
            raise self._everything
        return list(self._everything)


def test_releases_in_range_and_those_without_a_wheel_are_named():
    r = list_releases("3.0.0", "3.9.0", "python", Index([v for v in INDEX if v != "3.9.0"], "3.10.4",
                                                        INDEX + ["4.0.0rc1"]))
    assert r.usable[0] == "3.0.0" and r.usable[-1] == "3.8.0" and len(r.usable) == 12
    assert r.skipped == ("3.9.0",) and r.python == "3.10.4" and r.note is None
    with pytest.raises(UsageError, match="no Triton release from 3.0.1 to 3.0.9"):
        list_releases("3.0.1", "3.0.9", "python", Index(INDEX, "3.11", INDEX))
    with pytest.raises(UsageError, match=r"3\.9\.0 have no wheel for Python 3\.10"):
        list_releases("3.9.0", "3.9.9", "python", Index(INDEX[1:], "3.10", INDEX))

    r = list_releases("3.0.0", "3.9.0", "python", Index(INDEX, "3.11", OSError("network unreachable")))
    assert len(r.usable) == 13 and r.skipped == () and "network unreachable" in r.note


def test_a_release_stacks_toml_pins_uses_that_stack_else_its_own_on_an_older_base():
    cfg = load_config()
    assert stack_for("3.0.0", cfg).name == "triton-3.0-cu129"
    own = stack_for("3.3.0", cfg)
    assert own.name == "triton-3.3.0" and own.triton == "3.3.0" and own.torch is None
    assert own.base_image == cfg.stack("triton-3.2-cu129").base_image


def _bisect(tmp_path, versions, script, **kw):
    """bisect over the real spine (plan, capture folder, results, bundles), the harness scripted."""
    host = HostEnv(tmp=tmp_path)
    executor = ScriptedExecutor(script, host)
    r = bisect(CASE, load_config().gpu("h100"), Releases(tuple(versions), (), "3.11"), load_config(), executor,
               BundleOptions(out_dir=tmp_path / "out", environ={}), **kw)
    return r, executor.ran


def _triton_of(bundle) -> str:
    """The Triton a packed bundle's results.json names (its scripted records are not the oracle's
    own on any IR, so verify would refuse it: read the member itself)."""
    with tarfile.open(bundle) as t:
        member = next(m for m in t.getmembers() if m.name.endswith("/results.json"))
        return json.load(t.extractfile(member))["triton"]


class Steps(Listener):
    def __init__(self):
        self.heard = []

    def step(self, step):
        self.heard.append(step)


@pytest.mark.parametrize("change_at", range(1, 13))
def test_the_search_finds_every_change_point_within_the_bound(tmp_path, change_at):
    versions = tuple(sorted(INDEX[:-1], key=lambda v: tuple(map(int, v.split(".")))))

    def script(stack, case):
        after = versions.index(stack.triton) >= change_at
        return {"status": "unsupported", "verdict": "unsupported"} if after else {"status": "ok", "verdict": "tma"}

    steps = Steps()
    r, calls = _bisect(tmp_path, versions, script, listener=steps)
    assert (r.last_same, r.first_changed) == (versions[change_at - 1], versions[change_at])
    assert len(calls) == len(set(calls)) == len(r.steps) <= max_captures(len(versions)) == 6
    assert [s.version for s in steps.heard] == calls and steps.heard[0].same_as_first is None
    assert sorted(_triton_of(p) for p in (tmp_path / "out").iterdir()) == sorted(
        [versions[change_at - 1], versions[change_at]])
    assert r.answer.startswith(f"{CASE} on h100: first changed in Triton {versions[change_at]} (unsupported/unsupported)")


def test_no_change_in_the_range_says_so(tmp_path):
    r, _ = _bisect(tmp_path, ("3.0.0", "3.1.0", "3.2.0"), lambda stack, case: {"status": "ok", "verdict": "tma",
                                                                                   "met": True})
    assert r.first_changed is None and len(r.steps) == 2 and "ok/tma on every release tested" in r.answer
    assert "--scan captures every release and would settle it" in r.answer


def test_a_scan_captures_every_release_and_names_each_transition(tmp_path):
    """The tf32x3 pattern (triton#11526) behind an API the first releases lack: every release is
    a point, none dropped, and the answer names each transition with its numbers."""
    smem = {"3.4.0": 1536, "3.5.0": 1536, "3.7.1": 1536, "3.8.0": 3072, "3.9.0": 1536}
    versions = ("3.0.0", "3.3.1", *smem)

    def script(stack, case):
        if stack.triton not in smem:
            return {"status": "unsupported", "verdict": "unsupported", "error": f"triton {stack.triton} lacks tl.x"}
        return {"status": "ok", "verdict": "no-tma", "metadata": {"shared_bytes": smem[stack.triton]}}

    steps = Steps()
    executor = ScriptedExecutor(script, HostEnv(tmp=tmp_path))
    r = scan(CASE, load_config().gpu("h100"), Releases(versions, (), "3.11"), load_config(), executor,
             BundleOptions(out_dir=tmp_path / "out", environ={}), listener=steps, metric=parse_metric("smem"), jobs=3)
    assert [p.version for p in r.points] == list(versions) and sorted(executor.ran) == sorted(versions)
    assert [p.status for p in r.points[:2]] == ["unsupported", "unsupported"]
    assert r.points[0].error == "triton 3.0.0 lacks tl.x"
    assert r.answer == ("block_ptr.p0 on h100: unsupported on 3.0.0; runs from 3.4.0 (smem 1536), regressed in 3.8.0 "
                        "(smem 1536 -> 3072), fixed in 3.9.0 (smem 3072 -> 1536)")
    assert len(r.bundles) == len(versions) and len(steps.heard) == len(versions)
    assert sorted(_triton_of(p) for p in (tmp_path / "out").iterdir()) == sorted(versions)


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


def test_a_metric_built_by_hand_is_whole_or_refused():
    """value() reads a level and an op: a Metric that lacks one is refused when it is built, not
    answered with None (a tma metric of no level would read as "no TMA")."""
    from reprokit.compare.metric import Metric

    for kind, level, op, words in (("tma", None, None, "names its IR level"), ("op", "ptx", None, "names its op"),
                                   ("op", None, "mma", "names its IR level"), ("speed", None, None, "not one of")):
        with pytest.raises(ValueError, match=words):
            Metric(kind, level, op)
    assert Metric("tma", "ptx").label == "tma:ptx" and Metric("regs").label == "regs"


@pytest.mark.parametrize("threshold,first_changed", [(None, "3.5.0"), (10, "3.6.0")])
def test_bisect_on_registers_finds_the_release_where_they_moved(tmp_path, threshold, first_changed):
    from reprokit.compare.metric import parse_metric

    regs = {"3.4.0": 127, "3.5.0": 120, "3.6.0": 94, "3.7.1": 94, "3.8.0": 94}

    def script(stack, case):
        return {"status": "ok", "verdict": "tma", "met": True, "metadata": {"registers": regs[stack.triton]}}

    r, _ = _bisect(tmp_path, tuple(regs), script, metric=parse_metric("regs", threshold))
    assert r.first_changed == first_changed and r.metric == "regs"
    assert r.answer.startswith(f"{CASE} on h100: first changed in Triton {first_changed} (regs {regs[first_changed]})")
    assert [s.value for s in r.steps][:2] == [127, 94]
