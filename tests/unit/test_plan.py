"""The typed plan (reprokit/plan.py): every source builds one, its JSON reads back as the same
Plan, derived plans come from its methods, and plan.json files of the older format still read."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from types import MappingProxyType

import jsonschema
import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.config import load_config
from reprokit.errors import BundleUnusable, UsageError
from reprokit.options import GpuOptions
from reprokit.plan import FORMAT, Plan, migrate
from reprokit.suite import build_plan
from reprokit.sweep import spec as sweep_spec
from reprokit.userspec import plan as userplan
from reprokit.userspec.project import load as load_project

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "bundles" / "examples"
SCHEMA = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
PINS = {"name": "triton-3.6-cu130", "triton": "3.6.0"}


def _round_trip(plan: Plan) -> dict:
    doc = plan.to_json()
    jsonschema.validate(doc, SCHEMA)
    again = Plan.from_json(json.loads(json.dumps(doc)))
    assert again == plan
    assert again.to_json() == doc
    return doc


def _suite():
    return build_plan(load_config().gpu("h100"), PINS, only="block_ptr.*,tensor_descriptor.p0")


def _project():
    proj = load_project(ROOT / "tests" / "data" / "persistent_matmul" / "reprokit.toml")
    return userplan.build_plan(proj, load_config().gpu("h100"), PINS)


def _sweep():
    spec = sweep_spec.load_spec(next((ROOT / "kernels" / "sweeps").glob("*.toml")))
    return sweep_spec.build_sweep_plan(spec, load_config().gpu("h100"), PINS, reduced=True, shard=(1, 2))


def _trace():
    return Plan.from_json(open_bundle(EXAMPLES / "h100-trace-triton-3.6.0.tgz").plan)


@pytest.mark.parametrize("build,source", [(_suite, "suite"), (_project, "project"), (_sweep, "sweep"),
                                          (_trace, "trace")])
def test_every_source_builds_a_plan_that_reads_back_as_itself(build, source):
    plan = build().for_stack(PINS)
    doc = _round_trip(plan)
    assert doc["format"] == FORMAT and doc["source"] == source and len(plan) > 0


def test_a_replay_and_a_fleet_shard_are_derived_by_methods_and_read_back():
    recorded = Plan.from_json(open_bundle(EXAMPLES / "triton-3.5-cu130-h100.tgz").plan)
    gpu = GpuOptions(recorded.profile, "gpu", host=MappingProxyType({"index": 0, "name": "NVIDIA H100 80GB HBM3"}))
    replayed = recorded.select("tensor_descriptor.*").with_gpu(gpu).for_stack({"name": "other", "triton": "3.9.0"})
    doc = _round_trip(replayed)
    assert doc["mode"] == "gpu" and doc["gpu"]["host"]["index"] == 0 and doc["stack"]["triton"] == "3.9.0"
    assert all(i.startswith("tensor_descriptor.") or i in recorded.ids for i in replayed.ids)
    shards = [recorded.shard(i, 3) for i in (1, 2, 3)]
    for s in shards:
        _round_trip(s)
        assert all(not c.get("gated_by") or c["gated_by"] in s.ids for c in s.cases)
    assert set().union(*(s.ids for s in shards)) == set(recorded.ids)
    # the recorded plan is untouched by every derivation
    assert recorded == Plan.from_json(open_bundle(EXAMPLES / "triton-3.5-cu130-h100.tgz").plan)


def test_a_plan_and_its_cases_cannot_be_changed():
    plan = _suite()
    with pytest.raises(AttributeError):
        plan.mode = "gpu"  # type: ignore[misc]
    with pytest.raises(TypeError):
        plan.cases[0].data["id"] = "x"  # type: ignore[index]
    with pytest.raises(TypeError):
        plan.cases[0]["kernel"]["file"] = "x"
    doc = plan.for_stack(PINS).to_json()
    doc["cases"][0]["id"] = "changed"   # the JSON is the caller's own copy
    assert plan.cases[0].id != "changed"


def test_a_format_1_plan_migrates_with_its_source_inferred():
    # plan.json of bundles written before format 2 (the 3.0 suite example, the H100 trace example)
    for name, source in (("format1-suite.json", "suite"), ("format1-trace.json", "trace")):
        old = json.loads((ROOT / "tests" / "data" / "plans" / name).read_text())
        assert old["format"] == 1 and "source" not in old
        plan = Plan.from_json(old)
        assert plan.source == source and plan.ids == [c["id"] for c in old["cases"]]
        jsonschema.validate(plan.to_json(), SCHEMA)
    project = {**_project().for_stack(PINS).to_json(), "format": 1}
    del project["source"]
    assert migrate(project)["source"] == "project"


def test_plans_of_unknown_formats_and_unnamed_stacks_are_refused_in_one_line():
    doc = _suite().for_stack(PINS).to_json()
    with pytest.raises(BundleUnusable, match="newer than this reprokit"):
        Plan.from_json({**doc, "format": FORMAT + 1})
    with pytest.raises(BundleUnusable, match="too old"):
        Plan.from_json({**doc, "format": 0})
    with pytest.raises(BundleUnusable, match="not a plan format"):
        Plan.from_json({**doc, "format": "2"})
    with pytest.raises(UsageError, match="names its stack"):
        build_plan(load_config().gpu("h100"), only="block_ptr.p0").to_json()
    with pytest.raises(UsageError, match="twice"):
        _suite().with_cases([*_suite().cases, _suite().cases[0]])


def test_the_harness_reads_the_format_the_host_writes():
    from reprokit import harness

    assert harness.PLAN_FORMAT == FORMAT


# The one place outside reprokit/plan.py that builds a plan document: inside the stack, the
# harness expands a declared call's autotuned case into one case per config (the JSON contract
# it reads, not the host's Plan).
_IN_STACK_BUILDERS = {("reprokit/harness/kinds/callcase.py", "expand_plan")}


def _plan_writes(path: Path):
    """(function, line, how) for each write of a plan's key in `path`: `plan[k] = ...`, `del
    plan[k]`, `{**plan, ...}`, `plan.pop/update/setdefault/clear/popitem(...)`, on a name `plan`
    or an attribute `.plan`."""
    def is_plan(node):
        return (isinstance(node, ast.Name) and node.id == "plan") or \
            (isinstance(node, ast.Attribute) and node.attr == "plan")

    def visit(node, func):
        for child in ast.iter_child_nodes(node):
            inner = child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else func
            how = None
            if isinstance(child, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
                targets = child.targets if isinstance(child, (ast.Assign, ast.Delete)) else [child.target]
                if any(isinstance(t, ast.Subscript) and is_plan(t.value) for t in targets):
                    how = "plan[...]"
            elif isinstance(child, ast.Dict) and any(k is None and is_plan(v) for k, v in zip(child.keys, child.values)):
                how = "{**plan}"
            elif isinstance(child, ast.Call) and isinstance(child.func, ast.Attribute) and is_plan(child.func.value) \
                    and child.func.attr in ("pop", "update", "setdefault", "clear", "popitem"):
                how = f"plan.{child.func.attr}"
            if how:
                yield inner, child.lineno, how
            yield from visit(child, inner)

    yield from visit(ast.parse(path.read_text()), None)


def test_no_module_but_the_plans_own_builders_writes_a_plan_key():
    writes = []
    for path in sorted((ROOT / "reprokit").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel == "reprokit/plan.py":
            continue
        writes += [(rel, func, line, how) for func, line, how in _plan_writes(path)
                   if (rel, func) not in _IN_STACK_BUILDERS]
    assert writes == []


def test_the_plan_write_finder_finds_each_form(tmp_path):
    src = tmp_path / "m.py"
    src.write_text("def f(plan, x):\n    plan['gpu'] = 1\n    del plan['a']\n    y = {**plan, 'b': 2}\n"
                   "    x.plan.pop('c')\n    plan.update(d=1)\n    other = {**x}\n")
    assert [(f, how) for f, _, how in _plan_writes(src)] == [
        ("f", "plan[...]"), ("f", "plan[...]"), ("f", "{**plan}"), ("f", "plan.pop"), ("f", "plan.update")]
