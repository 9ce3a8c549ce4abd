"""What a report dwells on: the cases worth a maintainer's time, found on the comparison grid.

A case is interesting when a compiler crashed or hung on it, when a verdict missed its
expectation, when the compiler rejected it where no rejection was expected, when its verdict
moved across the bundles, or when a metric moved (TMA ops per level, registers, spills, shared
memory: the grid's "metric" class). An expected rejection (a negative control refused as its
case says) is the compiler doing its job, not a finding. A verdict that moved only between
`unsupported` and one other verdict is an API appearing or disappearing: those are listed per
family, not dwelt on.
"""

from __future__ import annotations

from dataclasses import dataclass

from reprokit.compare.grid import Grid, Row

# Kinds, most telling first: a section's order and what survives when a body must be shortened.
KINDS = ("crash", "not met", "rejected", "moved", "metric")


# triton-lang/triton's issue templates a finding is filed with, in the order a report gives them:
# a compiler that fails or gives wrong results is a bug; a correct compile that misses what was
# expected of its code (no TMA, more registers) is bad codegen; a kernel that got slower is a
# performance issue. docs/report.md names the templates' commit.
TEMPLATES = ("bug", "bad_codegen", "performance")
_BROKEN = ("crash", "timeout", "compile_error", "error", "harness_error")


@dataclass(frozen=True)
class Finding:
    case: str
    kinds: tuple        # subset of KINDS, in KINDS order
    row: Row

    @property
    def rank(self) -> int:
        return KINDS.index(self.kinds[0])

    @property
    def template(self) -> str:
        """Which of TEMPLATES this finding is filed with."""
        cells = [c for c in self.row.cells if c.present]
        if {"crash", "rejected"} & set(self.kinds):
            return "bug"
        if any(c.status in _BROKEN or c.correct is False or "outputs" in c.moved or c.gpu_status not in (None, "ok")
               for c in cells):
            return "bug"
        if any("time" in c.moved for c in cells) and not any(c.change == "verdict" for c in cells):
            return "performance"
        return "bad_codegen"


def _api_only(row: Row) -> bool:
    """Verdicts differ only by `unsupported` against one other verdict: an API came or went."""
    verdicts = {c.verdict for c in row.cells if c.present}
    return "unsupported" in verdicts and len(verdicts - {"unsupported"}) <= 1


def kinds_of(row: Row) -> tuple:
    cells = [c for c in row.cells if c.present]
    kinds = set()
    if any(c.status in ("crash", "timeout") for c in cells):
        kinds.add("crash")
    if any(c.met is False and c.status not in ("crash", "timeout") for c in cells):
        kinds.add("not met")
    if any(c.verdict == "rejected" and c.met is not True for c in cells):
        kinds.add("rejected")
    changes = {c.change for c in row.cells}
    if "verdict" in changes and not _api_only(row):
        kinds.add("moved")
    elif "metric" in changes and not _api_only(row):
        kinds.add("metric")
    return tuple(k for k in KINDS if k in kinds)


def by_template(found) -> list[tuple[str, list[Finding]]]:
    """(template, its findings in the given order) for each template that has any, in TEMPLATES order."""
    return [(tpl, [f for f in found if f.template == tpl]) for tpl in TEMPLATES
            if any(f.template == tpl for f in found)]


def findings(grid: Grid) -> list[Finding]:
    """Interesting cases, most telling first, grid order within a kind."""
    out = [Finding(r.case, k, r) for r in grid.rows if (k := kinds_of(r))]
    order = {r.case: i for i, r in enumerate(grid.rows)}
    return sorted(out, key=lambda f: (f.rank, order[f.case]))


@dataclass(frozen=True)
class ApiChange:
    family: str
    supported: tuple    # column labels where some case of the family compiled
    unsupported: tuple  # (column label, the stack's own words), where every case of it was unsupported


def api_changes(grid: Grid) -> list[ApiChange]:
    """Families whose support differs across the columns."""
    fams: dict = {}
    for r in grid.rows:
        if r.family:
            fams.setdefault(r.family, []).append(r)
    out = []
    for fam, rows in fams.items():
        sup, uns = [], []
        for i, col in enumerate(grid.columns):
            cells = [r.cells[i] for r in rows if r.cells[i].present]
            if not cells:
                continue
            if all(c.status == "unsupported" for c in cells):
                uns.append((col.label, next((c.error for c in cells if c.error), "unsupported")))
            else:
                sup.append(col.label)
        if sup and uns:
            out.append(ApiChange(fam, tuple(sup), tuple(uns)))
    return out
