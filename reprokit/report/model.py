"""A report's content, independent of its format: the bundles and their facts, the comparison
grid over them, the interesting cases and the API changes, and the per-case material (IR
excerpts, crash evidence) the renderers show."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from reprokit.compare.grid import Cell, Grid, compare
from reprokit.compare.normalise import LEVELS
from reprokit.compare.sources import ResultSet
from reprokit.compare.timing import DEFAULT
from reprokit.harness import minimal, reproducer
from reprokit.records import CaseRecord
from reprokit.report.excerpts import Excerpt, case_excerpts
from reprokit.report.findings import ApiChange, Finding, api_changes, findings
from reprokit.report.inputs import Facts, open_inputs


@dataclass(frozen=True)
class Report:
    facts: tuple         # Facts per bundle, in the order given (the grid's columns)
    bundles: tuple       # reprokit.bundle.reader.Bundle, same order
    grid: Grid
    findings: tuple      # Finding
    api: tuple           # ApiChange
    newest: Facts | None = None   # --newest: a replay of the first bundle on the newest release
    newest_grid: Grid | None = None   # the first bundle against that replay
    _memo: dict = field(default_factory=dict, repr=False, compare=False)   # excerpts and scripts, made once

    def newest_cell(self, case_id: str) -> Cell | None:
        """The case in the newest release's bundle, judged against the first bundle."""
        if self.newest_grid is None:
            return None
        try:
            return self.newest_grid.cell(case_id, self.newest_grid.columns[1].key)
        except KeyError:
            return None

    def fixed_in(self, fnd: Finding) -> str | None:
        """The newest release, where it no longer shows what made the case a finding; else None."""
        cell = self.newest_cell(fnd.case)
        if cell is None or not cell.present or self.newest is None:
            return None
        base, last = fnd.row.cells[0], fnd.row.cells[-1]
        still = {
            "crash": cell.status in ("crash", "timeout"),
            "not met": cell.met is False,
            "rejected": cell.verdict == "rejected" and cell.met is not True,
            # a move holds while the newest shows the moved verdict, or yet another than the first bundle's
            "moved": cell.verdict == last.verdict or (base.present and cell.verdict != base.verdict),
            # a metric holds while the newest differs from the first bundle in any metric
            "metric": bool(cell.metrics),
        }
        return None if any(still[k] for k in fnd.kinds) else self.newest.triton

    def _once(self, key: tuple, make):
        if key not in self._memo:
            self._memo[key] = make()
        return self._memo[key]

    @property
    def profile(self) -> str:
        return ", ".join(dict.fromkeys(f"{f.profile_name} ({f.profile}, {f.arch})" for f in self.facts))

    @property
    def profile_key(self) -> str:
        return ", ".join(dict.fromkeys(f"{f.profile}, {f.arch}" for f in self.facts))

    def plan_case(self, case_id: str) -> dict:
        """The case's definition, from the first bundle whose plan has it."""
        for b in self.bundles:
            for c in b.plan.get("cases", []):
                if c["id"] == case_id:
                    return c
        return {}

    def record(self, i: int, case_id: str) -> CaseRecord | None:
        return self.bundles[i].records.case(case_id)

    def member(self, i: int, rel: str | None) -> bytes | None:
        if not rel:
            return None
        try:
            return self.bundles[i].read(rel)
        except KeyError:
            return None

    def excerpts(self, i: int, case_id: str) -> list[Excerpt]:
        rec = self.record(i, case_id)
        if not rec or rec.status != "ok":
            return []
        return self._once(("excerpts", i, case_id), lambda: case_excerpts(rec.artifacts, lambda rel: self.member(i, rel)))

    def standalone(self, i: int, case_id: str) -> Standalone | None:
        return self._once(("standalone", i, case_id), lambda: standalone(self.bundles[i], case_id))

    def focus(self, fnd: Finding) -> int | None:
        """The column a finding's reproducer comes from: the first that crashed, else the newest
        where the expectation failed, was rejected, or (for a move) the case compiled."""
        cells = list(enumerate(fnd.row.cells))
        tests = {"crash": lambda c: c.status in ("crash", "timeout"), "not met": lambda c: c.met is False,
                 "rejected": lambda c: c.verdict == "rejected"}
        hit = [i for i, c in cells if c.present and tests.get(fnd.kinds[0], lambda c: c.status != "unsupported")(c)]
        if not hit:
            return None
        return hit[0] if fnd.kinds[0] == "crash" else hit[-1]

    def reproducer_mlir(self, i: int, case_id: str) -> str | None:
        rec = self.record(i, case_id)
        data = self.member(i, rec.artifacts.get("reproducer") if rec else None)
        return None if data is None else data.decode("utf-8", "replace")


@dataclass(frozen=True)
class Standalone:
    text: str
    source: str      # "bundle": the file the bundle carries; "made": from its plan.json and kernels/
    path: str        # where it is (or would be) in the bundle
    minimal: str | None = None  # the case's minimal.py: its kernel and compile only, what an issue embeds


def standalone(bundle, case_id: str) -> Standalone | None:
    """The case's standalone reproducer (a Python file that needs only Triton): the one the bundle
    carries, else made from the bundle's own plan and kernel sources (older bundles); None when
    the case has none (a CUDA C++ case, a kernel file that is not plain Python)."""
    rec = bundle.records.case(case_id)
    arts = rec.artifacts if rec else {}
    rel, small = arts.get(reproducer.ARTIFACT), arts.get(minimal.ARTIFACT)
    if rel and rel in bundle.data and small and small in bundle.data:
        return Standalone(bundle.read_text(rel), "bundle", rel, bundle.read_text(small))
    case = next((c for c in bundle.plan.get("cases", []) if c["id"] == case_id), None)
    kernel = f"kernels/{((case or {}).get('kernel') or {}).get('file')}"
    if case is None or kernel not in bundle.data:
        return None
    scripts = reproducer.Reproducers(bundle.plan, lambda name: bundle.read_text(f"kernels/{name}"),
                                     triton_version=bundle.records.triton)
    try:
        # None for a CUDA C++ case: replay rebuilds it from kernels/, not a Python script
        text = scripts.text(case_id, rec.to_json() if rec else None)  # the harness's code reads plain JSON
        small_text = scripts.minimal(case_id)
    except (ValueError, SyntaxError):
        return None
    if text is None or small_text is None:  # a declared call has no minimal script to embed
        return None
    if rel and rel in bundle.data:  # a bundle from before minimal scripts: its own full one, a minimal made now
        return Standalone(bundle.read_text(rel), "bundle", rel, small_text)
    return Standalone(text, "made", f"cases/{case_id}/{reproducer.FILE_NAME}", small_text)


def build(paths: Sequence[Path], *, mixed_profiles: bool = False, timing_options=None,
          newest: Path | None = None) -> Report:
    inp = open_inputs(list(paths) + ([newest] if newest else []), mixed_profiles=mixed_profiles)
    bundles, fs = list(inp.bundles), list(inp.facts)
    sets = [ResultSet.from_bundle(b, label=f.label) for b, f in zip(bundles, fs)]
    newest_facts = newest_grid = None
    if newest:
        newest_facts, newest_rs = fs.pop(), sets.pop()
        bundles.pop()
        newest_grid = compare([sets[0], newest_rs], timing_options=timing_options or DEFAULT)
    grid = compare(sets, timing_options=timing_options or DEFAULT)
    return Report(tuple(fs), tuple(bundles), grid, tuple(findings(grid)), tuple(api_changes(grid)),
                  newest_facts, newest_grid)


def tma_text(cell: Cell) -> str:
    """TMA ops per level as the terminal grid shows them: 'ttir/ttgir/llir/ptx/sass'."""
    tma = dict(cell.tma)
    return "/".join(str(tma.get(lv, "-")) for lv in LEVELS) if tma else ""


__all__ = ["ApiChange", "Excerpt", "Facts", "Finding", "Report", "Standalone", "build", "standalone", "tma_text"]
