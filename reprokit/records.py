"""A harness run's results as the host sees them: frozen, typed records, parsed once at the edges.

The harness writes results.json as plain JSON (it runs inside a stack, on the standard library
alone). The host turns it into a `Results` of `CaseRecord`s at the two places it comes in: when
a capture's harness finishes (reprokit.run.capture) and when a bundle is opened (reprokit.bundle.
reader). Everything after (grid, report, sweep answers, fleet collect, the meaning check) reads
fields, so a misspelt field is an AttributeError at once rather than a silent `.get` None.

What a record holds beyond the fields typed here (GPU measurements, Inductor's facts, ptxas
arguments, ...) stays in `raw`, the record exactly as the harness wrote it: the writer and the
merges of sweeps and fleets pass that on byte for byte.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields, replace
from types import MappingProxyType
from typing import Any, Iterable, Literal, Mapping, get_args

from reprokit.errors import ReprokitError

Status = Literal["ok", "unsupported", "compile_error", "crash", "timeout", "harness_error", "not_reproduced",
                 "capture_failed"]
Verdict = Literal["tma", "no-tma", "rejected", "crashed", "timeout", "unsupported", "inconclusive", "error",
                  "not_reproduced", "capture_failed"]
Mode = Literal["compile-only", "gpu"]
STATUSES: tuple[str, ...] = get_args(Status)
VERDICTS: tuple[str, ...] = get_args(Verdict)

_EMPTY: Mapping[str, Any] = MappingProxyType({})
# The keys every record has (results.schema.json), written even when null or empty.
_REQUIRED = frozenset({"id", "family", "control", "status", "artifacts", "verdict", "expect", "met", "reason"})


class RecordInvalid(ReprokitError):
    """A results document that does not have the shape the harness writes; the edge that parsed
    it raises its own error class (a capture's harness error, a bundle's invalidity) instead."""


def _frozen(value: object, where: str) -> Mapping[str, Any]:
    if value is None:
        return _EMPTY
    if not isinstance(value, dict):
        raise RecordInvalid(f"{where} is {type(value).__name__}, not an object")
    return MappingProxyType(dict(value))


def _str(doc: Mapping[str, Any], key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str):
        raise RecordInvalid(f"{where}: {key} is {value!r}, not a string")
    return value


def _opt_str(doc: Mapping[str, Any], key: str, where: str) -> str | None:
    value = doc.get(key)
    if value is not None and not isinstance(value, str):
        raise RecordInvalid(f"{where}: {key} is {value!r}, not a string or null")
    return value


def _one_of(doc: Mapping[str, Any], key: str, allowed: tuple[str, ...], where: str) -> Any:
    value = doc.get(key)
    if value not in allowed:
        raise RecordInvalid(f"{where}: {key} is {value!r}, not one of {', '.join(allowed)}")
    return value


@dataclass(frozen=True)
class Launch:
    """Whether the compiled kernel fits the profile's shared memory per block."""

    fits: bool
    shared_bytes: int | None
    limit: int | None

    @classmethod
    def from_json(cls, doc: object, where: str) -> Launch | None:
        if doc is None:
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("fits"), bool):
            raise RecordInvalid(f"{where}: launch is {doc!r}, not an object with a boolean `fits`")
        return cls(doc["fits"], doc.get("shared_bytes"), doc.get("limit"))


@dataclass(frozen=True)
class CaseRecord:
    """One case's result: what the harness's oracle judged, and the facts behind it."""

    id: str
    family: str
    control: str
    status: Status
    verdict: Verdict
    expect: str | None           # tma, no-tma; a declared call's own (sass:OP, regs<=N, ...) or None
    met: bool | None
    reason: str
    error: str | None = None
    failing_pass: str | None = None
    signal: str | None = None
    stderr_tail: str | None = None
    artifacts: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    tma: Mapping[str, int | None] = field(default_factory=lambda: _EMPTY)
    tma_ops: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: _EMPTY)
    metadata: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    ir_sha256: Mapping[str, str] = field(default_factory=lambda: _EMPTY)
    launch: Launch | None = None
    gpu: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)
    raw: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def from_json(cls, doc: object) -> CaseRecord:
        if not isinstance(doc, dict):
            raise RecordInvalid(f"a case record is {type(doc).__name__}, not an object")
        where = f"case {doc.get('id')!r}"
        met = doc.get("met")
        if met is not None and not isinstance(met, bool):
            raise RecordInvalid(f"{where}: met is {met!r}, not true, false or null")
        artifacts = _frozen(doc.get("artifacts"), f"{where}: artifacts")
        if not all(isinstance(v, str) for v in artifacts.values()):
            raise RecordInvalid(f"{where}: an artifact path is not a string")
        return cls(id=_str(doc, "id", where), family=_str(doc, "family", where), control=_str(doc, "control", where),
                   status=_one_of(doc, "status", STATUSES, where), verdict=_one_of(doc, "verdict", VERDICTS, where),
                   expect=_opt_str(doc, "expect", where), met=met,
                   reason=_str(doc, "reason", where), error=_opt_str(doc, "error", where),
                   failing_pass=_opt_str(doc, "failing_pass", where), signal=_opt_str(doc, "signal", where),
                   stderr_tail=_opt_str(doc, "stderr_tail", where), artifacts=artifacts,
                   tma=_frozen(doc.get("tma"), f"{where}: tma"),
                   tma_ops=_frozen(doc.get("tma_ops"), f"{where}: tma_ops"),
                   metadata=_frozen(doc.get("metadata"), f"{where}: metadata"),
                   ir_sha256=_frozen(doc.get("ir_sha256"), f"{where}: ir_sha256"),
                   launch=Launch.from_json(doc.get("launch"), where),
                   gpu=_frozen(doc.get("gpu"), f"{where}: gpu"), raw=MappingProxyType(dict(doc)))

    def to_json(self) -> dict[str, Any]:
        """The record as the harness wrote it (one made here, not parsed: its fields)."""
        if self.raw:
            return dict(self.raw)
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            optional = f.name not in _REQUIRED
            if f.name == "raw" or (optional and (value is None or (isinstance(value, Mapping) and not value))):
                continue
            out[f.name] = asdict(value) if isinstance(value, Launch) else (
                dict(value) if isinstance(value, Mapping) else value)
        return out

    @property
    def is_harness_error(self) -> bool:
        """Failed in reprokit's own code, not in the compiler: a fault of ours, not a result."""
        return self.status == "harness_error"

    @property
    def fits(self) -> bool | None:
        return None if self.launch is None else self.launch.fits

    @property
    def gpu_status(self) -> str | None:
        status = self.gpu.get("status")
        return status if isinstance(status, str) else None

    def outcome(self) -> tuple[str, str]:
        """(status, verdict): what a bisection or a sweep's answer compares."""
        return self.status, self.verdict


@dataclass(frozen=True)
class Results:
    """A harness run's results.json: the Triton that ran, the mode, and one record per case, in plan order."""

    triton: str
    mode: Mode
    cases: tuple[CaseRecord, ...]
    raw: Mapping[str, Any] = field(default_factory=lambda: _EMPTY)

    @classmethod
    def from_json(cls, doc: object) -> Results:
        if not isinstance(doc, dict):
            raise RecordInvalid(f"results.json is {type(doc).__name__}, not an object")
        cases = doc.get("cases")
        if not isinstance(cases, list):
            raise RecordInvalid(f"results.json: cases is {type(cases).__name__}, not a list")
        return cls(triton=_str(doc, "triton", "results.json"),
                   mode=_one_of(doc, "mode", ("compile-only", "gpu"), "results.json"),
                   cases=tuple(CaseRecord.from_json(c) for c in cases), raw=MappingProxyType(dict(doc)))

    def to_json(self) -> dict[str, Any]:
        """results.json as written, with these cases (a merge or a selection may have changed them)."""
        return {**self.raw, "cases": [c.to_json() for c in self.cases]}

    def case(self, case_id: str) -> CaseRecord | None:
        return next((c for c in self.cases if c.id == case_id), None)

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(c.id for c in self.cases)

    def harness_errors(self) -> list[str]:
        """Ids of the cases that failed in the harness itself."""
        return [c.id for c in self.cases if c.is_harness_error]

    def only(self, ids: Iterable[str]) -> Results:
        """These results with only the cases named, in their order here."""
        keep = set(ids)
        return replace(self, cases=tuple(c for c in self.cases if c.id in keep))

    def with_cases(self, cases: Iterable[CaseRecord]) -> Results:
        return replace(self, cases=tuple(cases))


def parse_results(doc: object, error: type[ReprokitError], where: str) -> Results:
    """Results.from_json at an edge: a malformed document is that edge's error, naming `where`."""
    try:
        return Results.from_json(doc)
    except RecordInvalid as e:
        raise error(f"{where}: results.json: {e}") from None
