"""Merging the shard bundles of one sweep (same spec, grid, stack and GPU) into one bundle.

A shard bundle keeps the IR of every one of its points, since which points lie on a boundary is
known only once all shards are in. The merge lays the shards' records and files out as one work
folder in grid order (shard k of n holds points k-1, k-1+n, ...) and packs it exactly as an
unsharded run is packed, so the merged bundle has the same bytes as the unsharded one.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from reprokit import locks
from reprokit.bundle.reader import open_bundle
from reprokit.errors import UsageError
from reprokit.options import BundleOptions, Origin
from reprokit.plan import Plan
from reprokit.sweep.run import pack


def _identity(plan: dict) -> dict:
    grid = {k: v for k, v in plan["sweep"].items() if k != "shard"}
    return {"grid": grid, "stack": plan["stack"], "profile": plan["profile"], "mode": plan["mode"]}


def merge_shards(paths: list, bundle: BundleOptions, tmp_root: Path) -> tuple[Path, dict]:
    """One bundle from all shards of one sweep; it carries the first shard's time and facts."""
    bundles = [open_bundle(Path(p)) for p in paths]
    for b in bundles:
        if not (b.plan.get("sweep") or {}).get("shard"):
            raise UsageError(f"{b.path}: not a shard of a sweep (its plan has no sweep shard)")
    first = bundles[0]
    ident = _identity(first.plan)
    count = first.plan["sweep"]["shard"]["count"]
    by_index = {}
    for b in bundles:
        if _identity(b.plan) != ident:
            raise UsageError(f"{b.path}: a shard of another sweep, grid, stack or GPU than {first.path}")
        idx = b.plan["sweep"]["shard"]["index"]
        if b.plan["sweep"]["shard"]["count"] != count or idx in by_index:
            raise UsageError(f"{b.path}: shard {idx}/{b.plan['sweep']['shard']['count']} repeats or does not "
                             f"belong with {count} shards")
        by_index[idx] = b
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise UsageError(f"shards {', '.join(map(str, missing))} of {count} are missing")
    shards = [by_index[i] for i in range(1, count + 1)]
    total = first.plan["sweep"]["points"]
    cases, records = [], []
    for i in range(total):
        b = shards[i % count]
        cases.append(b.plan["cases"][i // count])
        records.append(b.results["cases"][i // count])
    plan = Plan.from_json(first.plan, where=f"{first.path}: plan.json").unsharded(cases).to_json()
    results = {**shards[0].results, "cases": records}
    with locks.scratch(tmp_root, "merge") as tmp:
        work = Path(tmp) / "work"
        (work / "cases").mkdir(parents=True)
        for b in shards:
            for rel in b.data:
                if rel.startswith(("kernels/", "cases/")):
                    dest = work / rel
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(b.read(rel))
        for name, doc in (("plan.json", plan), ("results.json", results), ("env.json", shards[0].env)):
            (work / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
        m = first.manifest
        origin = Origin(stack=m["stack"], profile=m["profile"], executor=m["executor"], mode=m["mode"])
        return pack(work, origin, dataclasses.replace(bundle, source_date_epoch=m["source_date_epoch"]), tmp_root)
