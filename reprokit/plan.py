"""The plan: what a capture is asked to run, as one frozen value that every source builds.

A source (the control suite, a project's declared cases, a sweep, a traced program, a reduced
case) builds a `Plan` beside itself; every verb runs one (capture, execute, run_stacks, replay,
bisect, the fleet's shards). A plan changes only by its methods, each giving a new plan:
`for_stack` (the stack it runs on now), `with_gpu` (the GPU checked, and the mode), `select`
(case globs), `only` (case ids), `one_pass` (a sweep's plan replayed as one pass), `shard`.

`to_json()` is the harness's contract (plan.json, schemas/plan.schema.json); `from_json()` reads
it back into the same Plan, and migrates the formats before this one:

    1  the first format: no `source` (it is inferred from the suite's name)
    2  `source`: which kind of source built the plan

Where the kernel sources are on this host (`kernels`) and a trace's kept tensors (`tensors`)
travel with the plan but are not part of it: they are not written, and not compared.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Iterable, Iterator, Mapping

from reprokit.config import GpuProfile
from reprokit.errors import BundleUnusable, UsageError
from reprokit.options import GpuOptions

FORMAT = 2
FORMATS = (1, 2)
# Which kind of source built a plan (a replay or a fleet shard derives one, and keeps its source).
SOURCES = ("suite", "project", "sweep", "trace", "reduce")
# What the JIT launches with when a call names neither (Triton's NVIDIA defaults, CUDAOptions).
DEFAULT_WARPS, DEFAULT_STAGES = 4, 3


def freeze(value: Any) -> Any:
    """A JSON value that cannot change: mappings read-only, lists tuples, all the way down."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value: Any) -> Any:
    """The JSON form of a frozen value (plain dicts and lists, new objects the caller may change)."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


@dataclass(frozen=True)
class Case:
    """One case of a plan, as the harness reads it (docs/capture-format.md): the typed fields the
    host decides by, and the whole record, read-only, for the rest (`case["call"]`, `case.get`)."""

    data: Mapping[str, Any]

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Case:
        if not isinstance(record.get("id"), str):
            raise UsageError(f"a plan case has no id: {dict(record)!r:.80}")
        return cls(freeze(record))

    @property
    def id(self) -> str:
        return str(self.data["id"])

    @property
    def kind(self) -> str:
        """`call` for a declared or traced call, else the suite's own case (`triton`)."""
        return str(self.data.get("kind") or "triton")

    @property
    def kernel_file(self) -> str:
        return str(self.data.get("file") or self.data["kernel"]["file"])

    @property
    def trace_n(self) -> int | None:
        """The traced specialisation's number, for a case a trace recorded."""
        n = (self.data.get("trace") or {}).get("n")
        return n if isinstance(n, int) and not isinstance(n, bool) else None

    def __getitem__(self, key: str) -> Any:
        return self.data[key]

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = thaw(self.data)
        return out


@dataclass(frozen=True)
class Plan:
    """What one capture runs: the cases, the GPU options (profile, mode, the GPU checked), the
    stack's pins (None until `for_stack` names the stack it runs on), and the source's facts."""

    source: str
    suite: str
    gpu: GpuOptions
    cases: tuple[Case, ...]
    stack: Mapping[str, Any] | None = None
    problem: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    sass: bool = True
    timeout_s: float = 300.0
    sweep: Mapping[str, Any] | None = None
    resumable: bool = False
    reproducers: bool = True                  # false: a reduction's candidate runs (records only)
    reduced: Mapping[str, Any] | None = None  # what `reprokit reduce` left (docs/reduce.md)
    kernels: Path | None = field(default=None, compare=False)
    tensors: Path | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        if self.source not in SOURCES:
            raise UsageError(f"a plan's source {self.source!r} is not one of {', '.join(SOURCES)}")
        ids = [c.id for c in self.cases]
        if len(set(ids)) != len(ids):
            dup = sorted({i for i in ids if ids.count(i) > 1})
            raise UsageError(f"a plan names case {dup[0]} twice")

    @classmethod
    def build(cls, source: str, suite: str, gpu: GpuOptions, cases: Iterable[Mapping[str, Any]], **kw: Any) -> Plan:
        """A new plan from a source's case records (dicts, as the harness reads them)."""
        for key in ("stack", "problem", "sweep", "reduced"):
            if kw.get(key) is not None:
                kw[key] = freeze(kw[key])
        return cls(source, suite, gpu, tuple(Case.of(c) for c in cases), **kw)

    # -- what it is ---------------------------------------------------------------------------

    @property
    def profile(self) -> GpuProfile:
        return self.gpu.profile

    @property
    def mode(self) -> str:
        return self.gpu.mode

    @property
    def ids(self) -> list[str]:
        return [c.id for c in self.cases]

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def case(self, case_id: str) -> Case | None:
        return next((c for c in self.cases if c.id == case_id), None)

    # -- derived plans ------------------------------------------------------------------------

    def for_stack(self, pins: Mapping[str, Any]) -> Plan:
        """This plan on the stack whose pins these are."""
        return replace(self, stack=freeze(pins))

    def with_gpu(self, gpu: GpuOptions) -> Plan:
        """This plan for `gpu`'s profile and mode, recording the GPU it checked (a replayed plan
        gets this host's record, never the recording host's)."""
        return replace(self, gpu=gpu)

    def with_files(self, kernels: Path | None = None, tensors: Path | None = None) -> Plan:
        """This plan with its kernel sources (and a trace's kept tensors) at these host paths."""
        return replace(self, kernels=Path(kernels) if kernels else self.kernels,
                       tensors=Path(tensors) if tensors else self.tensors)

    def select(self, globs: str | None, *, what: str = "the plan") -> Plan:
        """Only the cases whose id matches one of the comma-separated globs (all when empty); a
        gated case keeps its gate, so that its verdict can still be judged."""
        if not globs:
            return self
        pats = [p.strip() for p in globs.split(",") if p.strip()]
        keep = {c.id for c in self.cases if any(fnmatch.fnmatchcase(c.id, p) for p in pats)}
        if not keep:
            have = ", ".join(self.ids[:6]) + ("..." if len(self.cases) > 6 else "")
            raise UsageError(f"--cases {globs!r} matches no case of {what} (it has {have})")
        keep |= {c.get("gated_by") for c in self.cases if c.id in keep and c.get("gated_by")}
        return self.only(keep)

    def only(self, ids: Iterable[str | None]) -> Plan:
        """Only the cases with these ids, in the plan's order."""
        wanted = set(ids)
        return replace(self, cases=tuple(c for c in self.cases if c.id in wanted))

    def with_cases(self, cases: Iterable[Case | Mapping[str, Any]]) -> Plan:
        """The same plan over other case records (a sweep's merged shards, a reduced case)."""
        return replace(self, cases=tuple(c if isinstance(c, Case) else Case.of(c) for c in cases))

    def records_only(self, sass: bool) -> Plan:
        """A plan whose run needs only the cases' records (a reduction's candidates): no MLIR
        reproducer reruns, no reproducer.py, and SASS only when `sass`."""
        return replace(self, reproducers=False, sass=sass)

    def reduced_to(self, case: Mapping[str, Any], reduced: Mapping[str, Any]) -> Plan:
        """The plan of a reduced case: its one case, `reduced` saying what was reduced and how."""
        return replace(self.with_cases([case]), source="reduce", reduced=freeze(reduced))

    def one_pass(self) -> Plan:
        """A plan the harness runs once over a fresh folder (a replayed sweep's is resumable)."""
        return replace(self, resumable=False)

    def shard(self, index: int, count: int) -> Plan:
        """Shard `index` of `count` (1-based): cases dealt round-robin, so each gets a mix, and
        each gate kept beside what it gates."""
        if count == 1:
            return self
        keep = {c.id for i, c in enumerate(self.cases) if i % count == index - 1}
        keep |= {c.get("gated_by") for c in self.cases if c.id in keep and c.get("gated_by")}
        return self.only(keep)

    def unsharded(self, cases: Iterable[Case | Mapping[str, Any]]) -> Plan:
        """The whole sweep again, from its shards' cases in grid order."""
        if self.sweep is None:
            raise UsageError("only a sweep's plan is made whole from shards")
        return replace(self.with_cases(cases), sweep=freeze({**thaw(self.sweep), "shard": None}))

    # -- the JSON edge ------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        """plan.json: the harness's contract (schemas/plan.schema.json)."""
        if self.stack is None:
            raise UsageError("a plan is written only once it names its stack (Plan.for_stack)")
        doc: dict[str, Any] = {
            "format": FORMAT, "source": self.source, "suite": self.suite, "mode": self.mode,
            "profile": self.profile.to_dict(), "stack": thaw(self.stack), "problem": thaw(self.problem),
            "sass": self.sass, "timeout_s": float(self.timeout_s), "cases": [c.to_json() for c in self.cases],
        }
        if self.gpu.record() is not None:
            doc["gpu"] = self.gpu.record()
        if self.sweep is not None:
            doc["sweep"] = thaw(self.sweep)
        if self.resumable:
            doc["resumable"] = True
        if not self.reproducers:
            doc["reproducers"] = False
        if self.reduced is not None:
            doc["reduced"] = thaw(self.reduced)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], *, where: str = "plan.json", kernels: Path | None = None,
                  tensors: Path | None = None) -> Plan:
        """The Plan a plan.json describes (this format or an older one, migrated). BundleUnusable
        for a format this reprokit does not read."""
        doc = migrate(doc, where)
        gpu_rec = doc.get("gpu") or {}
        host = gpu_rec.get("host")
        gpu = GpuOptions(GpuProfile.from_dict(doc["profile"], where=f"{where}: GPU profile"), doc["mode"],
                         host=freeze(host) if host else None, mismatch=tuple(gpu_rec.get("mismatch") or ()),
                         allow_mismatch=bool(gpu_rec.get("allow_mismatch", False)),
                         lock_clocks=gpu_rec.get("lock_clocks"))
        return cls.build(doc["source"], doc["suite"], gpu, doc["cases"], stack=doc.get("stack"),
                         problem=doc.get("problem") or {}, sass=bool(doc.get("sass", True)),
                         timeout_s=float(doc["timeout_s"]), sweep=doc.get("sweep"),
                         resumable=bool(doc.get("resumable", False)), reproducers=bool(doc.get("reproducers", True)),
                         reduced=doc.get("reduced"), kernels=kernels, tensors=tensors)


def infer_source(doc: Mapping[str, Any]) -> str:
    """A format-1 plan's source, from what its builders wrote: a sweep's `sweep:` suite and grid,
    the trace's `trace` suite, the control suite's cases (no `kind`), else a project's calls."""
    if doc.get("sweep") is not None or str(doc.get("suite", "")).startswith("sweep:"):
        return "sweep"
    if doc.get("suite") == "trace":
        return "trace"
    if any(isinstance(c, Mapping) and c.get("kind") == "call" for c in doc.get("cases") or ()):
        return "project"
    return "suite"


def migrate(doc: Mapping[str, Any], where: str = "plan.json") -> dict[str, Any]:
    """A plan.json of any format this reprokit reads, as the current format (a new dict)."""
    fmt = doc.get("format")
    lo, hi = FORMATS
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise BundleUnusable(f"{where}: format {fmt!r} is not a plan format (reads {lo}..{hi})")
    if fmt < lo:
        raise BundleUnusable(f"{where}: plan format {fmt} is too old for this reprokit (reads {lo}..{hi})")
    if fmt > hi:
        raise BundleUnusable(f"{where}: plan format {fmt} is newer than this reprokit understands "
                             f"(reads {lo}..{hi}); upgrade reprokit")
    out = dict(doc)
    if fmt == 1:
        out["source"] = infer_source(doc)
        out["format"] = 2
    return out
