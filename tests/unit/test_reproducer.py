"""Standalone reproducers as text: the full one probes the release it runs on, the minimal one
writes the compile of the recording release literally; the oracle's patterns inlined; the same
text every time; made for an older bundle from its plan."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from reprokit.common import oracle
from reprokit.config import load_config
from reprokit.harness.minimal import minimal_source
from reprokit.harness.reproducer import Reproducers, form_for_version, reproducer_source
from reprokit.suite import build_plan

KERNELS = Path(__file__).resolve().parents[2] / "kernels"
GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"


@pytest.fixture(scope="module")
def plan():
    return build_plan(load_config().gpu("h100"), {"name": "triton-3.6-cu130", "triton": "3.6.0"}).to_json()


def _case(plan, cid):
    return next(c for c in plan["cases"] if c["id"] == cid)


def _make(plan, cid, **kw):
    case = _case(plan, cid)
    return reproducer_source(case, plan, (KERNELS / case["kernel"]["file"]).read_text(), **kw)


def _assigned(text: str, name: str):
    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == name:
            return ast.literal_eval(node.value)
    raise AssertionError(f"{name} is not assigned")


def _call(text: str, fn: str) -> str:
    return re.search(rf"def {fn}\(\):.*?\n\n", text, re.S).group(0)


def _minimal(plan, cid, form):
    case = _case(plan, cid)
    return minimal_source(case, plan, (KERNELS / case["kernel"]["file"]).read_text(), form=form)


def test_the_script_is_python_with_no_reprokit_import(plan):
    text = _make(plan, "tensor_descriptor.p0")
    tree = ast.parse(text)
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert not [m for m in imported if m and m.startswith("reprokit")]
    assert {"triton", "triton.language", "triton.compiler", "triton.backends.compiler"} <= imported
    # The kernel module is carried verbatim.
    assert (KERNELS / "copy_tensor_descriptor.py").read_text().rstrip() in text


def test_the_oracle_patterns_are_inlined_unchanged(plan):
    text = _make(plan, "host_descriptor.p1")
    assert _assigned(text, "_MOVE") == oracle._MOVE
    assert _assigned(text, "_SETUP") == oracle._SETUP
    assert _assigned(text, "_COMMENT") == oracle._COMMENT


def test_the_full_script_hands_data_to_a_probe_not_one_release_form(plan):
    text = _make(plan, "block_ptr.p0", triton_version="3.0.0")
    call = _call(text, "_source_0")
    assert "_make_source(copy_p0, {'M': 'i32', 'N': 'i32', 'dst': '*fp16', 'src': '*fp16'}," in call
    assert "constexprs={'BM': 128, 'BN': 128}" in call and "divisible_by_16=['src', 'dst', 'M', 'N']" in call
    assert "AttrsDescriptor" not in call and "def _make_source(fn, signature, constexprs, divisible_by_16):" in text
    assert text == _make(plan, "block_ptr.p0", triton_version="3.0.0", form="hints")  # form no longer matters


def test_the_minimal_script_writes_each_release_form_literally(plan):
    constexprs = _minimal(plan, "block_ptr.p0", "constexprs")
    assert ("{'src': '*fp16', 'dst': '*fp16', 'M': 'i32', 'N': 'i32', 'BM': 'constexpr', 'BN': 'constexpr'}"
            in constexprs)
    assert "constexprs={'BM': 128, 'BN': 128}" in constexprs and "(3,): [['tt.divisibility', 16]]" in constexprs
    hints = _minimal(plan, "block_ptr.p0", "hints")
    assert "{'src': '*fp16', 'dst': '*fp16', 'M': 'i32', 'N': 'i32'}," in hints
    assert "constants={'BM': 128, 'BN': 128}" in hints and "AttrsDescriptor.from_hints({0: 16, 1: 16, 2: 16, 3: 16})" in hints
    index = _minimal(plan, "block_ptr.p0", "index")
    assert "{0: '*fp16', 1: '*fp16', 2: 'i32', 3: 'i32', 4: 'constexpr', 5: 'constexpr'}" in index
    assert "constants={4: 128, 5: 128}" in index and "AttrsDescriptor(divisible_by_16={0, 1, 2, 3})" in index
    # No divisibility hints at all (host descriptors) is an empty set in the 3.0 form.
    assert "divisible_by_16=set()" in _minimal(plan, "host_descriptor.p0", "index")
    assert [form_for_version(v) for v in ("3.0.0", "3.1.0", "3.2.0", "3.3.1", "3.9.0", "4.0.0", None)] == \
        ["index", "index", "hints", "constexprs", "constexprs", "constexprs", "constexprs"]


def test_every_rejection_travels_with_the_releases_it_names(plan):
    rules = _case(plan, "host_descriptor.p1")["reject"]
    assert len(rules) == 2
    (step,) = _assigned(_make(plan, "host_descriptor.p1", triton_version="3.0.0"), "_SPEC")["steps"]
    # The script checks each rule against the Triton it runs on, so a bundle of one release
    # still judges a rejection on another.
    assert step["reject"] == [{k: r[k] for k in ("triton", "pass", "message") if r.get(k)} for r in rules]
    case = {k: v for k, v in _case(plan, "host_descriptor.p1").items() if k != "reject"}
    text = reproducer_source(case, plan, (KERNELS / "copy_host_descriptor.py").read_text())
    assert _assigned(text, "_SPEC")["steps"][0]["reject"] is None  # a plan from before rules were named


def test_the_release_check_and_the_error_reading_are_the_harness_own(plan):
    from reprokit.harness import toolbox

    text = _make(plan, "host_descriptor.p1")
    space = {"re": re}
    exec(compile(text[text.index("_CLAUSE = re.compile"):text.index("def _source_0")], "inlined", "exec"), space)
    for version, spec in (("3.3.1", ">=3.3"), ("3.2.0", ">=3.3"), ("3.4.0", ">=3.4,<3.7"), ("3.7.1", ">=3.4,<3.7")):
        assert space["version_in"](version, spec) == oracle.version_in(version, spec)
    err = RuntimeError("at 4:8:\ndef k():\n    ^")
    err.__cause__ = ValueError("error: block shape must have at least 16 columns")
    assert space["one_line"](err) == toolbox.one_line(err) == "error: block shape must have at least 16 columns"


def test_the_astsource_the_script_builds_is_the_harness_own_function(plan):
    """One ASTSource builder: the script's `_make_source` is astsource.make_source, the function
    compat.make_source calls, to the byte (renamed); reproducer.py writes no second copy."""
    import inspect

    from reprokit.harness import astsource, reproducer

    text = _make(plan, "host_descriptor.p1")
    ours = inspect.getsource(astsource.make_source).replace("def make_source(", "def _make_source(", 1)
    assert ours in text and text.count("def _make_source(") == 1
    assert "ASTSource(" not in inspect.getsource(reproducer)
    assert "astsource.make_source(fn, signature, constexprs, divisible_by_16)" in Path(
        reproducer.__file__).with_name("compat.py").read_text()  # compat imports Triton: read, not imported


def test_minimal_scripts_are_short_and_carry_only_what_the_kernel_uses(plan):
    for case in plan["cases"]:
        if case.get("language", "triton") != "triton":
            continue
        text = _minimal(plan, case["id"], "constexprs")
        compile(text, "minimal.py", "exec")
        assert len(text.splitlines()) <= 80, (case["id"], len(text.splitlines()))
        defs = re.findall(r"^def (\w+)", text, re.M)
        assert case["kernel"]["function"] in defs
        assert "reprokit" not in text and "_SPEC" not in text


def test_a_gated_case_compiles_its_gate_first(plan):
    text = _make(plan, "block_ptr.p2")
    spec = _assigned(text, "_SPEC")
    assert [s["id"] for s in spec["steps"]] == ["block_ptr.p0", "block_ptr.p2"]
    assert "copy_p0," in _call(text, "_source_0") and "copy_p2_stress," in _call(text, "_source_1")


def test_the_recorded_result_is_what_the_script_compares_against(plan):
    rec = {"id": "host_descriptor.p1", "status": "compile_error", "verdict": "rejected", "tma": {},
           "error": "TMA copies must have between 1 and 5 coordinates", "stderr_tail": "not kept"}
    text = _make(plan, "host_descriptor.p1", result=rec)
    assert _assigned(text, "_SPEC")["recorded"] == {k: rec[k] for k in ("status", "verdict", "tma")}
    assert "recorded verdict rejected" in text.split('"""')[1]
    assert _assigned(_make(plan, "host_descriptor.p1"), "_SPEC")["recorded"] is None


def test_the_same_inputs_give_the_same_text(plan):
    assert _make(plan, "tensor_descriptor.gemm-128x256x64-w8-s3") == _make(plan, "tensor_descriptor.gemm-128x256x64-w8-s3")


def test_a_plan_entry_that_does_not_fit_its_kernel_is_refused(plan):
    case = dict(_case(plan, "block_ptr.p0"), signature={"src": "*fp16", "dst": "*fp16", "M": "i32"})
    with pytest.raises(ValueError, match="no type for N"):
        reproducer_source(case, plan, (KERNELS / "copy_block_ptr.py").read_text())
    case = dict(_case(plan, "block_ptr.p0"), kernel={"file": "copy_block_ptr.py", "function": "nope"})
    with pytest.raises(ValueError, match="no function 'nope'"):
        reproducer_source(case, plan, (KERNELS / "copy_block_ptr.py").read_text())
    with pytest.raises(ValueError, match="unknown ASTSource form"):
        _minimal(plan, "block_ptr.p0", "3.0")


def test_an_older_bundle_gets_one_per_case_from_its_plan_and_kernels():
    from reprokit.bundle.reader import open_bundle

    (path,) = sorted((GOLDEN / "h100-triton-3.0.0").glob("*.tgz"))
    b = open_bundle(path)
    assert not [m for m in b.members if m.endswith("reproducer.py")]  # made before reproducers existed
    from reprokit.report.model import standalone

    made = {c["id"]: standalone(b, c["id"]) for c in b.plan["cases"]}
    assert all(m is not None and m.source == "made" for m in made.values())
    scripts = {cid: m.text for cid, m in made.items()}
    assert sorted(scripts) == sorted(c["id"] for c in b.plan["cases"])
    text = scripts["experimental_descriptor.p0"]
    scripts_of = Reproducers(b.plan, lambda n: b.read_text(f"kernels/{n}"), triton_version=b.results["triton"])
    assert "AttrsDescriptor(divisible_by_16=" in scripts_of.minimal("experimental_descriptor.p0")  # 3.0's form
    assert _assigned(text, "_SPEC")["recorded"]["verdict"] == "tma"
    for t in scripts.values():
        compile(t, "reproducer.py", "exec")


def test_cases_that_are_not_triton_kernels_get_none(plan):
    cuda = dict(_case(plan, "block_ptr.p0"), id="cuda_tma.p0", language="cuda")
    with pytest.raises(ValueError, match="cuda case, not a Triton kernel"):
        reproducer_source(cuda, plan, "__global__ void k() {}")
    mixed = {**plan, "cases": [*plan["cases"][:1], cuda]}
    kernels = {plan["cases"][0]["kernel"]["file"]: (KERNELS / plan["cases"][0]["kernel"]["file"]).read_text()}
    scripts = Reproducers(mixed, kernels.__getitem__)
    assert scripts.text("cuda_tma.p0") is None and scripts.text(plan["cases"][0]["id"]) is not None


def test_launch_shares_the_gpu_runs_code_and_says_what_it_cannot_launch(plan):
    import inspect

    from reprokit.harness import stats
    from reprokit.harness.kinds import launch

    text = _make(plan, "tensor_descriptor.p0")
    spec = _assigned(text, "_LAUNCH")
    assert spec["recipe"]["kind"] == "copy" and spec["size"] == {"M": 4096, "N": 4096}
    assert spec["case"]["constexprs"] == {"BM": 128, "BN": 128}
    # the GPU run's own check, inputs and launch-error reading, inlined (module names dropped)
    for fn in (launch.check, launch.determinism, stats.classify_launch_error):
        assert f"def {fn.__name__}(" in text
    assert "class Bound:" in text and not re.search(r"\bstats\.\w+\(", text)
    assert 'tol = tolerance("float16", exact=exact)' in text
    assert inspect.getsource(launch.check).count("stats.tolerance") == 1
    gemm = _assigned(_make(plan, "tensor_descriptor.gemm-128x128x64-w8-s4"), "_LAUNCH")
    assert gemm["recipe"]["kind"] == "gemm" and gemm["size"] == {"M": 2000, "N": 2000, "K": 2000}
    assert "negative control" in _assigned(_make(plan, "host_descriptor.p1"), "_LAUNCH")["none"]
    # every kind of launch code parses with Python 3.9's grammar, and carries only what it runs
    from reprokit.harness import reprolaunch

    for kind in ("suite", "call", "none"):
        ast.parse(reprolaunch.script(kind), feature_version=(3, 9))
    assert "def launch_and_check(" in reprolaunch.script("call") and "class Bound:" not in reprolaunch.script("call")
    assert "def check(" not in reprolaunch.script("none")
    ast.parse(text, feature_version=(3, 9))


def test_a_declared_calls_reproducer_carries_its_jit_specialisation_and_its_gpu_outputs():
    import json

    data = Path(__file__).resolve().parent / "data" / "h100-calls"
    plan = json.loads((data / "plan.json").read_text())
    records = json.loads((data / "results.json").read_text())["cases"]
    made = Reproducers.from_dir(plan, str(Path(__file__).resolve().parents[1] / "data" / "usercases"))
    for rec in records:
        text = made.text(rec["id"], rec)
        spec = _assigned(text, "_LAUNCH")
        assert spec["recorded"]["outputs"] == rec["gpu"]["outputs"] and spec["recorded"]["seed"] == 0
        assert spec["function"] == next(c for c in plan["cases"] if c["id"] == rec["id"])["function"]
        assert list(spec["call"]["call"]["args"]) == list(next(c for c in plan["cases"] if c["id"] == rec["id"])["call"]["args"])
        step = _assigned(text, "_SPEC")["steps"][0]
        assert step["num_warps"] == rec["call"]["options"]["num_warps"]
        assert made.minimal(rec["id"]) is None  # the JIT's specialisation is no literal compile
        assert made.text(rec["id"], {k: v for k, v in rec.items() if k != "call"}) is None
