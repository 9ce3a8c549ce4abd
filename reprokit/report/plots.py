"""Plots of what differs across the columns of a report, as PNG bytes for the html page: TMA ops
per level, shared memory and registers per case, and GPU times when the bundles have them.

matplotlib is imported here only (the html path), with the Agg backend and no metadata that
changes between runs, so the same bundles give the same bytes with the same matplotlib.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass

from reprokit.compare.grid import Grid
from reprokit.compare.normalise import LEVELS
from reprokit.errors import MissingDependency


@dataclass(frozen=True)
class Plot:
    key: str
    title: str
    png: bytes
    alt: str


def matplotlib_pyplot():
    """matplotlib.pyplot on the Agg backend; MissingDependency (exit 2) naming the extra when it is missing."""
    try:
        import matplotlib
    except ImportError:
        raise MissingDependency("matplotlib", "draws the plots of --format html", "html") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": 8, "axes.titlesize": 9, "figure.dpi": 100, "svg.hashsalt": "reprokit",
                         "axes.spines.top": False, "axes.spines.right": False})
    return plt


def _png(plt, fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _differs(values: list) -> bool:
    return len(set(values)) > 1


def _series(grid: Grid, get) -> tuple[list[str], list[list]]:
    """Cases whose value differs across the columns, and per column the values (None = none)."""
    cases: list[str] = []
    cols: list[list] = [[] for _ in grid.columns]
    for r in grid.rows:
        vals = [get(c) if c.present else None for c in r.cells]
        if _differs(vals) and any(v is not None for v in vals):
            cases.append(r.case)
            for i, v in enumerate(vals):
                cols[i].append(v)
    return cases, cols


def tma_heatmap(plt, grid: Grid, labels: list[str]) -> Plot | None:
    """Cases whose TMA counts differ: one block of LEVELS columns per stack, counts written in."""
    cases = [r for r in grid.rows if _differs([c.tma if c.present else None for c in r.cells])]
    if not cases:
        return None
    n_cols = len(grid.columns) * len(LEVELS)
    data = [[math.nan] * n_cols for _ in cases]
    for y, r in enumerate(cases):
        for i, c in enumerate(r.cells):
            for j, lv in enumerate(LEVELS):
                v = c.tma_at(lv) if c.present else None
                if v is not None:
                    data[y][i * len(LEVELS) + j] = v
    fig, ax = plt.subplots(figsize=(1.2 + 0.32 * n_cols + 2.5, 0.8 + 0.26 * len(cases)))
    cmap = plt.get_cmap("Greens").with_extremes(bad="#e8e8e8")
    peak = max((v for row in data for v in row if not math.isnan(v)), default=1) or 1
    ax.imshow(data, aspect="auto", cmap=cmap, vmin=0, vmax=peak * 2, interpolation="nearest")
    for y, row in enumerate(data):
        for x, v in enumerate(row):
            ax.text(x, y, "-" if math.isnan(v) else str(int(v)), ha="center", va="center", fontsize=7,
                    color="#777" if math.isnan(v) else "black")
    ax.set_xticks(range(n_cols), [lv for _ in grid.columns for lv in LEVELS], rotation=90, fontsize=7)
    ax.set_yticks(range(len(cases)), [r.case for r in cases], fontsize=7)
    from matplotlib.transforms import blended_transform_factory

    above = blended_transform_factory(ax.transData, ax.transAxes)   # x in columns, y just over the axes
    for i, label in enumerate(labels):
        ax.text(i * len(LEVELS) + (len(LEVELS) - 1) / 2, 1.01, label, ha="center", va="bottom", fontsize=8,
                fontweight="bold", transform=above)
        if i:
            ax.axvline(i * len(LEVELS) - 0.5, color="white", linewidth=3)
    ax.set_title("TMA data-movement ops per IR level (- : no IR: unsupported, crashed or rejected)", pad=16)
    for s in ax.spines.values():
        s.set_visible(False)
    return Plot("tma", "TMA ops per level, per stack", _png(plt, fig),
                f"heatmap of TMA op counts for {len(cases)} cases whose counts differ across {len(labels)} stacks")


def _bars(plt, key: str, title: str, unit: str, cases: list[str], cols: list[list], labels: list[str],
          limit: float | None = None, limit_label: str = "") -> Plot:
    n = len(labels)
    height = 0.8 / n
    fig, ax = plt.subplots(figsize=(7.5, 0.9 + 0.22 * n * len(cases)))
    colors = plt.get_cmap("tab10").colors
    for i, (label, vals) in enumerate(zip(labels, cols)):
        ys = [y + (i - (n - 1) / 2) * height for y in range(len(cases))]
        xs = [v if v is not None else 0 for v in vals]
        bars = ax.barh(ys, xs, height=height * 0.95, label=label, color=colors[i % len(colors)])
        for b, v in zip(bars, vals):
            ax.text(b.get_width(), b.get_y() + b.get_height() / 2, f" {v:g}" if v is not None else " n/a",
                    va="center", fontsize=6, color="black" if v is not None else "#888")
    if limit:
        ax.axvline(limit, color="#c00", linestyle="--", linewidth=1)
        ax.text(limit, -0.7, f" {limit_label}", color="#c00", fontsize=7, va="bottom")
    ax.set_yticks(range(len(cases)), cases, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel(unit)
    ax.set_title(title)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)
    return Plot(key, title, _png(plt, fig), f"bar chart: {title} for {len(cases)} cases across {n} stacks")


def plots(grid: Grid, labels: list[str], smem_limit: int | None) -> list[Plot]:
    """Every plot of something that differs across the columns; [] when nothing does."""
    plt = matplotlib_pyplot()
    out = []
    tma = tma_heatmap(plt, grid, labels)
    if tma:
        out.append(tma)
    cases, cols = _series(grid, lambda c: c.shared_bytes)
    if cases:
        out.append(_bars(plt, "smem", "Shared memory per block", "bytes", cases, cols, labels,
                         limit=smem_limit, limit_label=f"GPU limit {smem_limit} B" if smem_limit else ""))
    cases, cols = _series(grid, lambda c: c.registers)
    if cases:
        out.append(_bars(plt, "registers", "Registers per thread", "registers", cases, cols, labels))
    cases, cols = _series(grid, lambda c: None if c.time_s is None else round(c.time_s * 1e6, 3))
    if cases:
        out.append(_bars(plt, "time", "GPU time per launch (median)", "microseconds", cases, cols, labels))
    return out
