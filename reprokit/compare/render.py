"""The grid for a terminal: a rich table (cases down, columns across, moved cells marked) and
one plain line per change, which the verbs print. Markdown and html belong to reprokit.report."""

from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from reprokit.compare.grid import Cell, Grid, moved_summary
from reprokit.compare.normalise import LEVELS

STYLE = {"tma": "green", "no-tma": "yellow", "rejected": "cyan", "crashed": "red", "error": "red",
         "timeout": "red", "unsupported": "dim", "inconclusive": "magenta"}
_CLASS_WORDS = {"verdict": "verdict or status", "metric": "metric", "ir": "IR only"}
_SHORT = {"shared_bytes": "smem", "registers": "regs", "spill_stores": "spills", "spill_loads": "spills",
          "gpu_status": "gpu", "correct": "correct", "time": "time"}


def cell_text(cell: Cell, *, baseline: bool) -> str:
    if not cell.present:
        return "[red]absent[/]" if cell.moved else "-"
    verdict = cell.verdict or "?"
    text = f"[{STYLE.get(verdict, 'white')}]{escape(verdict)}[/]"
    if cell.status not in ("ok", "unsupported") and cell.status != verdict:
        text += f" [dim]({escape(cell.status or '?')})[/]"
    tma = dict(cell.tma)
    if "sass" in tma or "ptx" in tma:
        text += f" [dim]{'/'.join(str(tma.get(lv, '-')) for lv in LEVELS)}[/]"
    if cell.gpu_status not in (None, "ok"):
        text += f" [red]gpu:{escape(cell.gpu_status)}[/]"
    elif cell.correct is False:
        text += " [red]wrong[/]"
    if cell.time_ratio is not None:
        text += f" x{cell.time_ratio:.2f}"
        if not baseline and cell.time_label:
            style = {"SLOWER": "red", "FASTER": "green", "AMBIGUOUS": "magenta"}.get(cell.time_label, "dim")
            text += f" [{style}]{cell.time_label}[/]"
    if not baseline and cell.moved:
        what = moved_summary(cell)
        text = f"[bold]*[/] {text}" + (f" [yellow]{escape(what)}[/]" if what else "")
    return text


def grid_table(grid: Grid, title: str | None = None, *, only_moved: bool = False) -> Table:
    t = Table(title=title, caption="cells: verdict, TMA ops per level (" + "/".join(LEVELS) + "); "
                                   "* moved against the first column, with the numbers that moved")
    t.add_column("case", no_wrap=True)
    for col in grid.columns:
        # Which board measured a column against the first: a time is only labelled on one board.
        board = f" [dim]({col.board_relation})[/]" if col.board_relation not in (None, "same board") else ""
        t.add_column(escape(col.label) + board + ("" if not col.error else " [red](failed)[/]"))
    for r in grid.rows:
        if only_moved and not r.moved:
            continue
        t.add_row(r.case, *[cell_text(c, baseline=(i == 0)) for i, c in enumerate(r.cells)])
    return t


def change_lines(grid: Grid) -> list[str]:
    """One line per column after the first: what moved, then its verdict changes and families."""
    out = []
    for col, ch in zip(grid.columns[1:], grid.changes()):
        if col.error:
            out.append(f"{col.label}: could not run: {col.error}")
            continue
        if col.times_against not in (None, grid.columns[0].key):
            out.append(f"{col.label}: times judged against {col.times_against}, measured on the same board")
        elif col.board_relation not in (None, "same board"):
            out.append(f"{col.label}: {col.board_relation} than {grid.columns[0].label}: its times are judged "
                       "only against the cross-board tolerance (docs/gpu.md)")
        if not ch.moved_cases:
            out.append(f"{col.label}: nothing moved ({len(grid.rows)} cases)")
            continue
        classes = dict(ch.by_change)
        line = (f"{col.label}: {len(ch.moved_cases)} of {len(grid.rows)} cases moved ("
                + ", ".join(f"{n} {_CLASS_WORDS[k]}" for k, n in classes.items()) + ")")
        if ch.verdicts:
            line += "; verdicts: " + ", ".join(f"{c} {a or 'absent'}->{b or 'absent'}" for c, a, b in ch.verdicts)
        if ch.became_unsupported:
            line += "; became unsupported: " + ", ".join(ch.became_unsupported)
        if ch.became_supported:
            line += "; became supported: " + ", ".join(ch.became_supported)
        out.append(line)
    return out


def ops_lines(grid: Grid, column: int = 1, levels=LEVELS) -> list[str]:
    """Per moved case and level: the ops added and removed in `column` against the first."""
    out = []
    for r in grid.rows:
        cell = r.cells[column]
        by_level: dict = {}
        for d in cell.ops:
            if d.level in levels:
                by_level.setdefault(d.level, []).append(d)
        for lv in levels:
            if lv not in by_level:
                continue
            added = [f"+{d.delta} {d.op}" for d in by_level[lv] if d.delta > 0]
            removed = [f"-{-d.delta} {d.op}" for d in by_level[lv] if d.delta < 0]
            out.append(f"{r.case} {lv}: " + ", ".join(added + removed))
    return out
