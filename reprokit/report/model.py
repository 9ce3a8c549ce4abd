"""A report's content, independent of its format: the bundles and their facts, the comparison
grid over them, the interesting cases and the API changes, and the per-case material (IR
excerpts, crash evidence) the renderers show."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from reprokit.compare.grid import Cell, Grid, compare
from reprokit.compare.sources import ResultSet
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

    def record(self, i: int, case_id: str) -> dict | None:
        return next((c for c in self.bundles[i].results["cases"] if c["id"] == case_id), None)

    def member(self, i: int, rel: str | None) -> bytes | None:
        if not rel:
            return None
        try:
            return self.bundles[i].read(rel)
        except KeyError:
            return None

    def excerpts(self, i: int, case_id: str) -> list[Excerpt]:
        rec = self.record(i, case_id)
        return case_excerpts(rec, lambda rel: self.member(i, rel)) if rec and rec.get("status") == "ok" else []

    def reproducer_mlir(self, i: int, case_id: str) -> str | None:
        rec = self.record(i, case_id) or {}
        data = self.member(i, (rec.get("artifacts") or {}).get("reproducer"))
        return None if data is None else data.decode("utf-8", "replace")


def build(paths: Sequence[Path], *, mixed_profiles: bool = False) -> Report:
    inp = open_inputs(paths, mixed_profiles=mixed_profiles)
    grid = compare([ResultSet.from_bundle(b, label=f.label) for b, f in zip(inp.bundles, inp.facts)])
    return Report(inp.facts, inp.bundles, grid, tuple(findings(grid)), tuple(api_changes(grid)))


def tma_text(cell: Cell) -> str:
    """TMA ops per level as the terminal grid shows them: 'ttir/ttgir/llir/ptx/sass'."""
    from reprokit.compare.normalise import LEVELS

    tma = dict(cell.tma)
    return "/".join(str(tma.get(lv, "-")) for lv in LEVELS) if tma else ""


__all__ = ["ApiChange", "Excerpt", "Facts", "Finding", "Report", "build", "tma_text"]
