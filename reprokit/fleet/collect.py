"""Collecting a fleet: every finished task's bundle verified by the one safe reader, the shards
of one (stack, GPU profile) merged into one column, one grid across machines, and every task
that did not deliver named with its reason.

Written into the fleet folder, each whole or not at all: grid.json (the grid as data, with
every task's status) and report.md (the maintainer report over the verified bundles).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from reprokit.compare.grid import Column, Grid, compare
from reprokit.compare.sources import ResultSet, open_result_set
from reprokit.errors import BundleInvalid, BundleUnusable
from reprokit.fleet import state
from reprokit.fleet.status import TaskStatus, status
from reprokit.options import Report, quiet
from reprokit.plan import Plan
from reprokit.report import render, write


@dataclass(frozen=True)
class Collected:
    statuses: tuple          # TaskStatus, one per task
    grid: Grid | None        # None when no task delivered a valid bundle
    problems: tuple          # one line per task that is not done, or whose bundle failed to verify
    bundles: tuple           # the verified bundles, in column order

    @property
    def complete(self) -> bool:
        return not self.problems

    def to_dict(self) -> dict:
        return {"complete": self.complete, "tasks": [s.to_dict() for s in self.statuses],
                "problems": list(self.problems), "bundles": [str(b) for b in self.bundles],
                "grid": self.grid.to_dict() if self.grid else None}


def collect(fleet: state.Fleet, report: Report = quiet) -> Collected:
    statuses = status(fleet)
    problems: list[str] = []
    columns: dict[str, list[ResultSet]] = {}  # one column per stack@profile, from its shards
    failed: list[Column] = []
    bundles: list[Path] = []
    for st in statuses:
        task = fleet.task(st.index)
        key = f"{task.stack['name']}@{task.profile['key']}"
        if st.state != "done":
            problems.append(f"task {st.index} ({st.label}): {st.state}" + (f": {st.reason}" if st.reason else ""))
            failed.append(Column.failed(key if task.shard[1] == 1 else f"{key}#{task.shard[0]}", st.label,
                                        f"{st.state}: {st.reason or ''}".strip(": "), task.stack.get("triton")))
            continue
        if st.bundle is None:  # a record that ended well but names no bundle: nothing to verify
            problems.append(f"task {st.index} ({st.label}): done, but its record names no bundle")
            failed.append(Column.failed(key, st.label, "done without a bundle", task.stack.get("triton")))
            continue
        bundle = Path(st.bundle)
        try:
            rs = open_result_set(bundle, key=key, label=key)
        except (BundleInvalid, BundleUnusable) as e:
            problems.append(f"task {st.index} ({st.label}): its bundle does not verify: {e}")
            failed.append(Column.failed(key, st.label, f"bundle does not verify: {e}", task.stack.get("triton")))
            continue
        if rs.parent != fleet.plan_sha256:
            problems.append(f"task {st.index} ({st.label}): its bundle names parent {str(rs.parent)[:12]}, "
                            f"not the fleet's plan {fleet.plan_sha256[:12]}")
            continue
        report(f"task {st.index} ({st.label}): verified {bundle.name}")
        columns.setdefault(key, []).append(rs)
        bundles.append(bundle)
    sets = [merge_shards(parts) for parts in columns.values()]
    grid = compare(sets, failed=failed) if sets else None
    done = Collected(tuple(statuses), grid, tuple(problems), tuple(bundles))
    state.write_json(fleet.dir / "grid.json", done.to_dict())
    if bundles:
        _write_report(fleet.dir / "report.md", bundles)
    return done


def merge_shards(parts: list[ResultSet]) -> ResultSet:
    """One column from the shards of one (stack, profile): their cases in plan order (a gate
    that several shards ran once), each case's IR read from the shard that ran it."""
    if len(parts) == 1:
        return parts[0]
    by_id, readers = {}, {}
    for rs in parts:
        for c in rs.cases:
            if c.id not in by_id:
                by_id[c.id] = c
                readers[c.id] = rs
    order = [c["id"] for c in parts[0].plan.get("cases", [])]
    order += sorted(set(by_id) - set(order))
    cases = [by_id[i] for i in order if i in by_id]

    def read(rel: str):
        parts_of = rel.split("/")
        owner = readers.get(parts_of[1]) if len(parts_of) > 1 and parts_of[0] == "cases" else parts[0]
        return owner._read(rel) if owner else None

    first = parts[0]
    return replace(first, results=first.results.with_cases(cases),
                   plan=Plan.from_json(first.plan).with_cases(
                       {c["id"]: c for rs in parts for c in rs.plan.get("cases", [])}.values()).to_json(),
                   path=None, sha256=None, _read=read, _norm={})


def _write_report(path: Path, bundles: list[Path]) -> None:
    write(render(bundles, "md", mixed_profiles=True), path)


__all__ = ["Collected", "TaskStatus", "collect", "merge_shards"]
