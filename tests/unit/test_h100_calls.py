"""Declared calls run on the lab H100 in GPU mode (triton 3.6.0, torch 2.11.0): the harness
compiled each from the specialisation the release's JIT derived on stand-ins, then launched it
through the JIT with seeded inputs. The recorded run (tests/unit/data/h100-calls) holds to the
schemas, and says what the derivation is worth: the JIT's own cubin on the GPU was the cubin
compiled ahead of time, for every case."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema

from reprokit.harness.kinds.callgpu import compare_outputs

DATA = Path(__file__).resolve().parent / "data" / "h100-calls"
SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def _load(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def test_the_recorded_run_holds_to_the_schemas():
    for name in ("plan", "results"):
        jsonschema.validate(_load(name), json.loads((SCHEMAS / f"{name}.schema.json").read_text()))


def test_every_jit_cubin_on_the_gpu_was_the_one_compiled_from_the_derived_specialisation():
    cases = _load("results")["cases"]
    assert [c["id"] for c in cases] == ["add", "mm.cfg0", "mm.cfg1", "sm"]
    for c in cases:
        g = c["gpu"]
        assert g["status"] == "ok" and g["jit_cubin"]["same_as_compiled"] is True, c["id"]
        assert g["determinism"]["deterministic"] is True and g["determinism"]["runs"] == 3
        assert g["bench"][0]["kernel"]["headline"] == "profiler"


def test_outputs_expectations_and_autotune_configs():
    by = {c["id"]: c for c in _load("results")["cases"]}
    assert list(by["add"]["gpu"]["outputs"]) == ["out_ptr"] and list(by["mm.cfg0"]["gpu"]["outputs"]) == ["c_desc"]
    # two configs of one GEMM, same inputs from the seed: the same bytes out
    assert compare_outputs(by["mm.cfg0"]["gpu"]["outputs"], by["mm.cfg1"]["gpu"]["outputs"]) == {"c_desc": "exact"}
    assert by["mm.cfg1"]["call"]["autotune"]["kwargs"]["BLOCK_N"] == 256
    assert by["mm.cfg0"]["met"] is True and by["mm.cfg0"]["expect_seen"]["sass:UTMALDG"] >= 1
    assert by["sm"]["met"] is None and by["sm"]["verdict"] == "no-tma"  # block pointers, no expectation
    assert "out_ptr" not in by["sm"]["call"]["divisibility"]  # declared 8-byte aligned
    # 2 * 4096^3 flops: the 128x256x64 config beats the 128x128x64 one on this GPU
    tflops = {cid: 2 * 4096 ** 3 / (by[cid]["gpu"]["bench"][0]["kernel"]["median_ms"] * 1e-3) / 1e12
              for cid in ("mm.cfg0", "mm.cfg1")}
    assert tflops["mm.cfg1"] > tflops["mm.cfg0"] > 100
