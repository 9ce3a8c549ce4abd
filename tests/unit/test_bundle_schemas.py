"""The bundle schemas: valid Draft 2020-12, shipped in the package, matching the capture format,
and reporting a violation by JSON path and reason."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator

from reprokit.bundle import schemas
from reprokit.bundle.reader import verify
from tests.helpers.fake_capture import make_capture

GOLDEN = Path(__file__).resolve().parents[2] / "bundles" / "golden"


@pytest.mark.parametrize("filename", sorted(schemas.SCHEMA_FILES.values()))
def test_schema_is_valid_draft_2020_12(filename):
    schema = schemas.load_schema(filename)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_every_schema_file_is_one_the_reader_knows():
    # The wheel carries this folder (tests/integration/test_wheel.py checks it does).
    shipped = {p.name for p in schemas._schema_dir().iterdir() if p.name.endswith(".json")}
    assert shipped == set(schemas.SCHEMA_FILES.values())


@pytest.mark.parametrize("mode", ["compile-only", "gpu"])
def test_capture_documents_follow_their_schemas(tmp_path, mode):
    cap = make_capture(tmp_path / "cap", mode=mode)
    for doc in ("plan.json", "results.json", "env.json"):
        assert schemas.problems(doc, json.loads((cap / doc).read_text())) == [], doc


def test_violation_names_the_json_path_and_the_reason(tmp_path):
    cap = make_capture(tmp_path / "cap")
    results = json.loads((cap / "results.json").read_text())
    results["cases"][2]["met"] = "yes"
    del results["cases"][3]["verdict"]
    results["surprise"] = 1
    problems = schemas.problems("results.json", results)
    assert "results.json: $.cases[2].met: 'yes' is not of type 'boolean', 'null'" in problems
    assert "results.json: $.cases[3]: 'verdict' is a required property" in problems
    assert any(p.startswith("results.json: $: Additional properties are not allowed ('surprise'") for p in problems)
    plan = json.loads((cap / "plan.json").read_text())
    plan["cases"][0]["id"] = "../escape"
    assert any(p.startswith("plan.json: $.cases[0].id: '../escape' does not match") for p in
               schemas.problems("plan.json", plan))


def test_free_form_facts_stay_open(tmp_path):
    cap = make_capture(tmp_path / "cap")
    env = json.loads((cap / "env.json").read_text())
    env["knobs"]["new_group"] = {"anything": [1, 2]}
    env["os"]["kernel_cmdline"] = "quiet"
    results = json.loads((cap / "results.json").read_text())
    results["cases"][1]["tma_ops"]["sass"] = {"UTMALDG": 1}
    results["cases"][1]["benchmark"] = {"gbs": 2600.0}       # a gpu-mode measurement
    assert schemas.problems("env.json", env) == [] and schemas.problems("results.json", results) == []


def test_golden_bundles_still_verify():
    golden = sorted(GOLDEN.rglob("*.tgz"))
    assert golden, f"no golden bundle under {GOLDEN}"
    for path in golden:
        assert verify(path) == [], path
