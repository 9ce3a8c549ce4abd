"""Generated kernels (Inductor's) on the host: the records the listener writes become plan cases
(autotune candidates and the chosen one marked), the plan and results schemas take them, the
oracle never judges a capture reprokit failed as the compiler's, the TTIR digest ignores where a
kernel was compiled from, the compile-listener slot keeps every tool in the chain, and a replay
runs only the chosen configs unless asked."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from reprokit.common import oracle
from reprokit.harness.toolbox import ttir_digest
from reprokit.plan import Plan
from reprokit.records import CaseRecord
from reprokit.run.replay import winners
from reprokit.trace import generated
from reprokit.trace.inprogram import listen

ROOT = Path(__file__).resolve().parents[2]


def compiled(seq: int, key: str, kernel: str, xblock: int, warps: int, path: str = "/tmp/ab/cabc.py") -> dict:
    """A `compiled` record as reprokit.trace.inprogram.listen writes it."""
    return {"type": "compiled", "seq": seq, "key": key, "kernel": kernel, "file": "generated/cabc.py",
            "helpers": ["generated/_inductor_runtime/triton_helpers.py"], "source": {"path": path, "line": 12},
            "signature": {"in_ptr0": "*fp32", "xnumel": "i32", "XBLOCK": "constexpr"},
            "constants": [[[2], xblock]], "attrs": [[[0], [["tt.divisibility", 16]]]],
            "options": {"num_warps": warps, "sanitize_overflow": False},
            "target": {"backend": "cuda", "arch": 90, "warp_size": 32},
            "digests": {"ttir": "a" * 64, "cubin": "b" * 64}, "cache_hit": False, "pid": 7}


RECORDS = [
    {"type": "start", "triton": "3.6.0"},
    compiled(1, "K1", "triton_poi_fused_0", 1024, 4),
    # a max-autotune template choice: its own kernel, compiled and benchmarked, never launched
    compiled(4, "K4", "triton_tem_fused_mm_2", 64, 4, path="/tmp/cd/ccde.py"),
    # a reduction autotuned over two configs: both compiled (candidates), the second chosen
    compiled(2, "K2", "triton_red_fused_1", 8, 2),
    compiled(3, "K3", "triton_red_fused_1", 64, 8),
    # the main process loading a compile worker's result again: the same cache key, one case
    {**compiled(1, "K1", "triton_poi_fused_0", 1024, 4), "cache_hit": True, "pid": 8},
    {"type": "generated_launch", "kernel": "triton_poi_fused_0", "source": {"path": "/tmp/ab/cabc.py", "line": 12},
     "key": "K1", "configs": 1, "chosen": {"kwargs": {"XBLOCK": 1024}, "num_warps": 4}},
    {"type": "generated_launch", "kernel": "triton_red_fused_1", "source": {"path": "/tmp/ab/cabc.py", "line": 12},
     "key": "K3", "configs": 2, "chosen": {"kwargs": {"XBLOCK": 64}, "num_warps": 8}},
    # each process's launch counts at its exit, by cache key
    {"type": "generated_launches", "launches": {"K1": 10, "K3": 4}},
    {"type": "generated_launches", "launches": {"K3": 1}},
]


def test_generated_records_become_cases_with_the_chosen_config_marked():
    cases = generated.cases(RECORDS, {"triton_poi_fused_0.1"}, "3.6.0", 300.0, (4, 3))
    assert [c["id"] for c in cases] == ["triton_poi_fused_0.2", "triton_tem_fused_mm_2.1", "triton_red_fused_1.1",
                                         "triton_red_fused_1.2"]
    poi, tem, red_a, red_b = cases
    assert tem["trace"]["candidate"] is True and tem["trace"]["launched"] is False
    assert "candidate" not in poi["trace"] and "candidate" not in red_a["trace"]
    assert poi["trace"]["launched"] is True and "autotune" not in poi["trace"]
    assert red_a["trace"]["autotune"] == {"configs": 2, "chosen": False} and red_a["trace"]["launched"] is False
    assert red_b["trace"]["autotune"] == {"configs": 2, "chosen": True} and red_b["trace"]["launched"] is True
    assert [c["trace"]["launches"] for c in cases] == [10, 0, 0, 5]
    assert (red_a["num_warps"], red_a["num_stages"]) == (2, 3) and red_b["num_warps"] == 8
    assert red_b["generated"]["options"] == {"sanitize_overflow": False}  # warps are the case's own
    assert poi["trace"]["digests"] == {"ttir": "a" * 64, "cubin": "b" * 64} and poi["trace"]["triton"] == "3.6.0"


def test_a_plan_of_generated_cases_is_valid_and_a_replay_keeps_the_chosen_configs():
    schema = json.loads((ROOT / "schemas" / "plan.schema.json").read_text())
    cases = generated.cases(RECORDS, set(), "3.6.0", 300.0, (4, 3))
    plan = {"format": 2, "source": "trace", "suite": "trace", "mode": "compile-only",
            "stack": {"name": "trace-x", "triton": "3.6.0"},
            "profile": {"key": "h100", "name": "H100", "capability": 90, "arch": "sm_90", "sm_count": 132,
                        "smem_per_block": 232448, "mem_bandwidth_gbs": 3350.0, "fp16_tflops": 989.0},
            "timeout_s": 300.0, "cases": cases}
    jsonschema.validate(plan, schema)
    bad = json.loads(json.dumps(plan))
    bad["cases"][0]["trace"]["digests"]["ttir"] = "not a digest"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)
    assert winners(Plan.from_json(plan))[0].ids == ["triton_poi_fused_0.1", "triton_red_fused_1.2"]
    # a chosen config the capture found too big for the profile: the kernel's config that fits runs
    # instead (and only another config of that kernel); where none fits, the choice stands
    fits = {"triton_red_fused_1.2": False, "triton_red_fused_1.1": True, "triton_poi_fused_0.1": True}
    kept, instead = winners(Plan.from_json(plan), fits)
    assert kept.ids == ["triton_poi_fused_0.1", "triton_red_fused_1.1"]
    assert instead == (("triton_red_fused_1.2", "triton_red_fused_1.1"),)
    kept, instead = winners(Plan.from_json(plan), {**fits, "triton_red_fused_1.1": False})
    assert kept.ids == ["triton_poi_fused_0.1", "triton_red_fused_1.2"] and instead == ()


@pytest.mark.parametrize("status", ["not_reproduced", "capture_failed"])
@pytest.mark.parametrize("kind", ["generated", "call"])
def test_a_capture_reprokit_failed_is_its_own_verdict_never_the_compilers(status, kind):
    case = {"id": "k.1", "kind": kind, "family": "k", "control": kind, "expect": "tma" if kind == "call" else None}
    why = "the capture's ttir differs from the program's own compile"
    got = oracle.judge(case, {"status": status, "error": why, "tma": {"ttir": 0}}, None, "3.6.0")
    assert got == {"verdict": status, "met": None, "reason": why}
    rec = CaseRecord.from_json({"id": "k.1", "family": "k", "control": kind, "status": status, "artifacts": {},
                                **got, "expect": None})
    assert rec.status == status and rec.verdict == status


_TTIR = """#loc = loc("{path}":12:0)
module {{
  tt.func public @k(%arg0: !tt.ptr<f32> {{tt.divisibility = 16 : i32}} loc("{path}":12:0)) attributes {{noinline = false}} {{
    %0 = tt.get_program_id x : i32 loc(#loc1)
    tt.return loc(#loc2)
  }} loc(#loc)
}} loc(#loc)
#loc1 = loc("{path}":13:{col})
#loc2 = loc("{path}":14:4)
"""


def test_the_ttir_digest_ignores_where_the_kernel_was_compiled_from():
    here = ttir_digest(_TTIR.format(path="/tmp/torchinductor_root/ab/cabc.py", col=24))
    there = ttir_digest(_TTIR.format(path="kernels/generated/cabc.py", col=8))
    assert here == there
    assert ttir_digest(_TTIR.format(path="x.py", col=1).replace("get_program_id x", "get_program_id y")) != here


class _Knobs:
    """What knobs.compilation is to the slot: an object whose class holds the descriptor."""


def test_the_compile_listener_slot_keeps_every_tool_in_the_chain(capsys):
    heard: list = []
    slot = listen._Slot(lambda **kw: heard.append(("reprokit", kw["src"])))
    _Knobs.listener = slot  # type: ignore[attr-defined]
    knobs = _Knobs()
    knobs.listener(src="a")
    assert heard == [("reprokit", "a")]

    def other(**kw):
        heard.append(("other", kw["src"]))

    knobs.listener = other  # a tool that replaces the slot's value
    knobs.listener(src="b")
    assert heard[1:] == [("other", "b"), ("reprokit", "b")]
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1 and "single slot" in lines[0] and "other" in lines[0]

    found = knobs.listener

    def chaining(**kw):  # a tool that wraps what it found, as reprokit does
        heard.append(("chaining", kw["src"]))
        found(**kw)

    knobs.listener = chaining
    knobs.listener(src="c")
    assert heard[3:] == [("chaining", "c"), ("other", "c"), ("reprokit", "c")]  # nobody called twice
    assert capsys.readouterr().err == ""  # chaining is no clash
    knobs.listener = None  # a tool removing its own: reprokit stays
    knobs.listener(src="d")
    assert heard[6:] == [("reprokit", "d")]


def test_caching_autotuner_is_wrapped_when_triton_is_first_imported_by_inductors_own_module(tmp_path):
    """Inductor's triton_heuristics imports triton at its top: the recorder installs while that
    module is half made (in sys.modules, no CachingAutotuner yet). The watch must wrap the class
    once the module is done, at the next import, not give up (then no launch is heard)."""
    import subprocess
    import sys
    import textwrap

    runtime = tmp_path / "site" / "torch" / "_inductor" / "runtime"
    runtime.mkdir(parents=True)
    for pkg in (runtime.parent.parent, runtime.parent, runtime):
        (pkg / "__init__.py").write_text("")
    (tmp_path / "site" / "fake_triton.py").write_text(
        "from reprokit.trace.inprogram import listen\nlisten._watch_inductor()  # as recorder.install at triton's import\n")
    (runtime / "triton_heuristics.py").write_text(textwrap.dedent("""
        import fake_triton  # the first import of triton, from here
        class CachingAutotuner:
            def run(self, *args, **kwargs):
                return "ran"
    """))
    script = textwrap.dedent("""
        import sys
        from torch._inductor.runtime import triton_heuristics as th
        half = getattr(th.CachingAutotuner.run, "_reprokit_wrapped", False)
        import colorsys  # any later import
        print(half, getattr(th.CachingAutotuner.run, "_reprokit_wrapped", False), th.CachingAutotuner().run())
    """)
    import os

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])}
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=False)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["False", "True", "ran"]


def test_a_benchmark_modules_harness_imports_are_bound_to_none_line_for_line():
    """Inductor's benchmark modules import torch._dynamo.testing and a CUDA-only stream getter for
    their get_args()/call(), never for the kernel: the capture binds those names to None on the
    same lines (torch._dynamo's import registers operators and can fail half-way; a CPU torch has
    no _cuda_getCurrentRawStream), and every other line stays as it was."""
    from reprokit.harness.kinds.generated import _BENCH_IMPORT, _unbound

    text = ("import triton\n"
            "from torch._dynamo.testing import rand_strided\n"
            "from torch._C import _cuda_getCurrentRawStream as get_raw_stream\n"
            "from torch._C import _a, _b as bee\n"
            "from torch._dynamo.testing_other import x\n"
            "import torch\n")
    out = _BENCH_IMPORT.sub(_unbound, text)
    lines = out.splitlines()
    assert len(lines) == len(text.splitlines())
    assert lines[0] == "import triton" and lines[4:] == text.splitlines()[4:]
    scope: dict = {}
    exec("\n".join(lines[1:4]), scope)  # noqa: S102 - the rewritten lines alone, nothing imported
    assert {k: scope[k] for k in ("rand_strided", "get_raw_stream", "_a", "bee")} == dict.fromkeys(
        ("rand_strided", "get_raw_stream", "_a", "bee"))


def test_threads_of_one_process_copy_one_helper_without_clashing(tmp_path):
    """max-autotune precompiles from a pool of threads in the program: two compiles that carry
    the same helper at once must both succeed, and leave the whole file (once named by the
    process alone, one thread's rename took the other's temp file away: FileNotFoundError)."""
    import threading

    src = tmp_path / "helper.py"
    src.write_bytes(b"x = 1\n" * 200_000)
    dest = tmp_path / "out" / "helper.py"
    errors = []

    def copy():
        try:
            for _ in range(20):
                listen._copy(str(src), str(dest))
        except OSError as e:
            errors.append(e)

    threads = [threading.Thread(target=copy) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == [] and dest.read_bytes() == src.read_bytes()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["helper.py"]


def test_an_inductor_kernel_autotuned_at_its_first_launch_counts_every_config(monkeypatch):
    """Inductor clears a tuner's `configs` once compiled; its first launch benchmarks one launcher
    per config and keeps the best. The launch record counts the launchers it held before, so the
    dropped configs read as that kernel's autotune (not chosen), not as unrelated candidates."""
    import types

    events = []
    monkeypatch.setattr(listen, "_STATE", {"event": events.append})

    class Launcher:
        def __init__(self, key, block):
            self.cache_hash, self.config = key, types.SimpleNamespace(kwargs={"XBLOCK": block}, num_warps=4,
                                                                       num_stages=1)

    class CachingAutotuner:
        def __init__(self):
            self.fn, self.configs = types.SimpleNamespace(__name__="triton_poi_fused_0", fn=None), None
            self.launchers = [Launcher("KEY_A", 512), Launcher("KEY_B", 1024)]

        def run(self, *args, **kwargs):
            self.launchers = self.launchers[1:]  # autotuned: the best kept

    module = types.SimpleNamespace(CachingAutotuner=CachingAutotuner)
    listen._wrap_caching_autotuner(module)
    tuner = CachingAutotuner()
    tuner.run(stream=0)
    tuner.run(stream=0)
    (launch,) = [e for e in events if e["type"] == "generated_launch"]
    assert launch["configs"] == 2 and launch["key"] == "KEY_B" and launch["chosen"]["kwargs"] == {"XBLOCK": 1024}
    assert listen._STATE["launches"] == {"KEY_B": 2}
    records = [{"type": "compiled", "seq": i + 1, "key": k, "kernel": "triton_poi_fused_0", "file": "generated/c.py",
                "helpers": [], "source": {"path": None, "line": 3}, "signature": {}, "constants": [], "attrs": [],
                "options": {}, "target": {}, "digests": {}} for i, k in enumerate(("KEY_A", "KEY_B"))]
    cases = generated.cases(records + events + [{"type": "generated_launches", "launches": {"KEY_B": 2}}],
                            set(), "3.6.0", 60.0, (4, 3))
    assert [(c["trace"].get("autotune"), c["trace"].get("candidate")) for c in cases] == [
        ({"configs": 2, "chosen": False}, None), ({"configs": 2, "chosen": True}, None)]
