"""results.json is parsed once at the edges into typed records: a malformed record is refused
there with the case and field named, and what the harness wrote passes through unchanged."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.errors import HarnessError
from reprokit.records import CaseRecord, RecordInvalid, Results, parse_results

GOLDEN = sorted((Path(__file__).resolve().parents[2] / "bundles" / "golden").rglob("*.tgz"))[0]


@pytest.fixture(scope="module")
def bundle():
    return open_bundle(GOLDEN)


def test_a_bundle_is_parsed_once_on_open_and_round_trips(bundle):
    assert isinstance(bundle.records, Results) and bundle.records.ids == tuple(c["id"] for c in bundle.results["cases"])
    assert bundle.records.to_json() == bundle.results
    rec = bundle.records.case("block_ptr.p0")
    assert rec.verdict == "no-tma" and rec.expect == "tma" and rec.met is False and rec.fits is True


def test_records_are_frozen_and_a_misspelt_field_fails_loudly(bundle):
    rec = bundle.records.cases[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.verdict = "tma"
    with pytest.raises(AttributeError):
        rec.verdit  # noqa: B018 - the typo is the point
    with pytest.raises(TypeError):
        rec.artifacts["x"] = "y"


@pytest.mark.parametrize("edit,message", [
    (lambda c: c.update(verdict="maybe"), "case 'block_ptr.p0': verdict is 'maybe', not one of"),
    (lambda c: c.update(status=None), "case 'block_ptr.p0': status is None"),
    (lambda c: c.update(met="yes"), "case 'block_ptr.p0': met is 'yes', not true, false or null"),
    (lambda c: c.pop("reason"), "case 'block_ptr.p0': reason is None, not a string"),
    (lambda c: c.update(launch={"shared_bytes": 1}), "case 'block_ptr.p0': launch is"),
    (lambda c: c.update(artifacts=["kernel.ptx"]), "case 'block_ptr.p0': artifacts is list, not an object"),
])
def test_a_malformed_record_is_refused_naming_the_case_and_field(bundle, edit, message):
    doc = json.loads(json.dumps(bundle.results))
    edit(next(c for c in doc["cases"] if c["id"] == "block_ptr.p0"))
    with pytest.raises(RecordInvalid, match=message.replace("(", r"\(").replace(")", r"\)")):
        Results.from_json(doc)


def test_the_capture_edge_says_which_run_gave_the_bad_document():
    with pytest.raises(HarnessError, match="^triton-3.6-cu130 under venv: results.json: results.json: cases is dict"):
        parse_results({"triton": "3.6.0", "mode": "compile-only", "cases": {}}, HarnessError, "triton-3.6-cu130 under venv")


def test_selections_keep_plan_order_and_the_rest_of_the_document(bundle):
    ids = list(reversed(bundle.records.ids[:2]))
    only = bundle.records.only(ids)
    assert only.ids == bundle.records.ids[:2] and only.triton == bundle.records.triton
    assert only.to_json()["started"] == bundle.results["started"]
    assert [c.id for c in only.cases] == [c["id"] for c in only.to_json()["cases"]]
    assert CaseRecord.from_json(only.cases[0].to_json()) == only.cases[0]
