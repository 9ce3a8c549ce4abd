"""Loading the bundle JSON Schemas from the installed package and validating documents against them."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from reprokit.config import defaults_root
from reprokit.errors import MissingDependency

TRACE_DOC = "trace/trace.json"  # a trace bundle's record of its program, written and read as the others
# Document name (as the file appears in a bundle) -> schema file in schemas/.
SCHEMA_FILES = {
    "manifest.json": "manifest.schema.json",
    "plan.json": "plan.schema.json",
    "results.json": "results.schema.json",
    "env.json": "env.schema.json",
    "sweep.json": "sweep.schema.json",
    TRACE_DOC: "trace.schema.json",
}
_MAX_REPORTED = 20
_MAX_REASON = 200


def _schema_dir() -> Path:
    # The checkout's schemas/, or the wheel's copy of it (reprokit.config.defaults_root).
    return defaults_root() / "schemas"


def load_schema(filename: str) -> dict:
    """One schema file of the packaged defaults' schemas/, parsed."""
    return json.loads(_schema_dir().joinpath(filename).read_text(encoding="utf-8"))


def _jsonschema():
    """jsonschema and referencing, imported when a document is first validated: the verbs that
    never validate (capture, stacks, --help) run on a GPU host that lacks them."""
    try:
        from jsonschema import Draft202012Validator
        from referencing import Registry, Resource
    except ImportError as e:
        raise MissingDependency(e.name or "jsonschema", "validates bundle documents") from None
    return Draft202012Validator, Registry, Resource


@lru_cache(maxsize=None)
def _registry():
    _, Registry, Resource = _jsonschema()
    resources_ = []
    for filename in SCHEMA_FILES.values():
        schema = load_schema(filename)
        resources_.append((schema["$id"], Resource.from_contents(schema)))
    return Registry().with_resources(resources_)


@lru_cache(maxsize=None)
def validator(document: str):
    """The validator (jsonschema's Draft202012Validator) for a bundle document such as 'results.json'."""
    Draft202012Validator, _, _ = _jsonschema()
    schema = load_schema(SCHEMA_FILES[document])
    return Draft202012Validator(schema, registry=_registry())


def problems(document: str, data: object) -> list[str]:
    """One line per schema violation: '<document>: <JSON path>: <reason>', in path order."""
    try:
        errors = sorted(validator(document).iter_errors(data), key=lambda e: [str(p) for p in e.absolute_path])
    except RecursionError:
        return [f"{document}: nested too deeply to validate"]
    out = []
    for err in errors[:_MAX_REPORTED]:
        reason = err.message
        if len(reason) > _MAX_REASON:
            reason = reason[: _MAX_REASON - 3] + "..."
        out.append(f"{document}: {err.json_path}: {reason}")
    if len(errors) > _MAX_REPORTED:
        out.append(f"{document}: ... and {len(errors) - _MAX_REPORTED} more schema violations")
    return out


def consistency_problems(plan: dict, results: dict, present: set[str]) -> list[str]:
    """What schema-valid plan and results name that `present` (paths in the bundle) lacks.

    A bundle replays from its own kernel sources, and its results point at its own IR files.
    """
    out = set()
    for c in plan.get("cases", []):
        # a declared call names its file itself (docs/user-cases.md); the suite's cases under `kernel`
        src = f"kernels/{c.get('file') or c['kernel']['file']}"
        if src not in present:
            out.add(f"plan.json: case {c['id']} names kernel source {src}, which is missing")
    for i, c in enumerate(results.get("cases", [])):
        for kind, path in sorted(c.get("artifacts", {}).items()):
            if path not in present:
                out.add(f"results.json: $.cases[{i}].artifacts.{kind}: {path} is missing")
    return sorted(out)
