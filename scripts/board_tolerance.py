"""The cross-board tolerance, measured: how far each case's time moves between GPU bundles of one
plan made on different boards (one bundle per lease), absolute and per baseline.

    python scripts/board_tolerance.py bundles/boards/*.tgz [--json]

For every case and benchmarked size that all bundles timed, by one method they all have (the
profiler's, else the events'): the kernel's median and its ratio to the same run's baseline in
each bundle, and their spread over bundles ((max - min) / median: what two of these boards differ
by). Per kind of case (copy, gemm, call; reprokit.compare.boards.kind) the largest spread, absolute
and per baseline, is what
reprokit.compare.boards.TOLERANCES must cover; docs/gpu.md ("Across boards") takes its table
from this output. Bundles of one board count once (the board identity in env.json); a bundle
without one (--share) is refused, since it cannot say which board it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from reprokit.compare import boards, timing
from reprokit.compare.grid import size_key as size_key_of
from reprokit.compare.sources import ResultSet, open_result_set


def _median(raw: dict | None, method: str) -> float | None:
    side = timing.side_from_raw(raw, method) if raw else None
    return side.median if side is not None else None


def measure(sets: list[ResultSet]) -> dict:
    """{kind: {"absolute": max stray, "per_baseline": max stray or None, "cases": [...]}}."""
    per_kind: dict = {}
    for case in sets[0].cases:
        runs = [{size_key_of(r.get("size") or {}): r for r in rs.bench_runs(case.id)} for rs in sets]
        if not all(runs):
            continue
        for size_key in sorted(set.intersection(*(set(r) for r in runs))):
            raws = [r[size_key].get("raw") or {} for r in runs]
            method = next((m for m in ("profiler", "events")
                           if all(_median(raw.get("kernel"), m) for raw in raws)), None)
            if method is None:
                continue
            kernel = [_median(raw["kernel"], method) for raw in raws]
            base = [_median(raw.get("baseline"), method) for raw in raws]
            per = [k / b for k, b in zip(kernel, base)] if all(base) else None
            kind = boards.kind(runs[0][size_key].get("size") or {}, raws[0])
            # The spread (max - min) / median: what two of these boards can differ by.
            stray_abs = boards.spread(kernel)
            stray_per = boards.spread(per) if per else None
            entry = per_kind.setdefault(kind, {"absolute": 0.0, "per_baseline": None, "cases": []})
            entry["absolute"] = max(entry["absolute"], stray_abs)
            if stray_per is not None:
                entry["per_baseline"] = max(entry["per_baseline"] or 0.0, stray_per)
            entry["cases"].append({"case": case.id, "size": size_key, "method": method,
                                   "absolute": round(stray_abs, 5),
                                   "per_baseline": round(stray_per, 5) if stray_per is not None else None})
    for entry in per_kind.values():
        entry["absolute"] = round(entry["absolute"], 5)
        if entry["per_baseline"] is not None:
            entry["per_baseline"] = round(entry["per_baseline"], 5)
    return dict(sorted(per_kind.items()))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bundles", nargs="+", type=Path)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    sets, seen = [], {}
    for path in args.bundles:
        rs = open_result_set(path)
        if rs.mode != "gpu":
            raise SystemExit(f"{path}: a {rs.mode} bundle has no times")
        if rs.board is None:
            raise SystemExit(f"{path}: records no board identity (made with --share?): it cannot count as a board")
        if rs.board in seen:
            print(f"{path}: the same board as {seen[rs.board]}: counted once", file=sys.stderr)
            continue
        seen[rs.board] = path
        sets.append(rs)
    if len(sets) < 2:
        raise SystemExit(f"{len(sets)} board(s): a tolerance needs bundles from at least two boards")
    result = {"boards": len(sets), "bundles": [str(p) for p in seen.values()], "kinds": measure(sets),
              "tolerances": {k: {"absolute": t.absolute, "per_baseline": t.per_baseline}
                             for k, t in sorted(boards.TOLERANCES.items())}}
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{len(sets)} boards")
    for kind, e in result["kinds"].items():
        tol = boards.TOLERANCES[kind]
        print(f"{kind:5} largest spread: absolute {100 * e['absolute']:.2f}% (tolerance {100 * tol.absolute:.0f}%), "
              f"per baseline " + (f"{100 * e['per_baseline']:.2f}%" if e["per_baseline"] is not None else "-")
              + (f" (tolerance {100 * tol.per_baseline:.0f}%)" if tol.per_baseline is not None else "")
              + f"; {len(e['cases'])} case sizes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
