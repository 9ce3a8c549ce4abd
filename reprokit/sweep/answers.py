"""Answers from a sweep's cells, for one stack and GPU profile: sweep.json in its bundle.

One-at-a-time groups: per axis, the smallest change from the base (the family's P0) that flips
the verdict or the status, on each side of the base value in the axis's order, with the error
or failing pass that came with it; "no flip with these N values" when none did. Product groups
(GEMM configs): the failures grouped by what failed (status, pass, first error line), the
simplest "every axis at or above a threshold" rule that covers exactly the points of each
failure (or the closest one and how far off it is), named hypotheses checked against the cells,
and the shared-memory frontier against the profile's per-block limit.
"""

from __future__ import annotations

import itertools
import re

from reprokit.records import CaseRecord, Results
from reprokit.sweep import measured

FORMAT = 1
_DIGITS = re.compile(r"\d+")


def _state(c: CaseRecord) -> tuple:
    return c.outcome()


def _cell(c: CaseRecord, label: str | None = None) -> dict:
    out = {"id": c.id, "status": c.status, "verdict": c.verdict,
           "error": c.error, "failing_pass": c.failing_pass,
           "shared_bytes": c.metadata.get("shared_bytes"), "fits": c.fits,
           "tma": dict(c.tma)}
    if label is not None:
        out["label"] = label
    return out


def _why(c: CaseRecord) -> str:
    bits: list[str] = [c.status, c.verdict]
    if c.failing_pass:
        bits.append(f"in {c.failing_pass}")
    if c.error:
        bits.append(c.error[:160])
    return ", ".join(bits)


def answer(plan: dict, results: Results) -> dict:
    sweep = plan["sweep"]
    by_id = {c.id: c for c in results.cases}
    plan_cases = {c["id"]: c for c in plan["cases"]}
    groups = []
    for g in sweep["groups"]:
        members = [by_id[cid] for cid, pc in plan_cases.items() if pc["sweep"]["group"] == g["name"] and cid in by_id]
        if not members:
            continue
        if g["vary"] == "one-at-a-time":
            groups.append(_one_at_a_time(g, members, plan_cases))
        else:
            groups.append(_product(g, members, plan_cases, plan["profile"], sweep.get("hypotheses", [])))
    counts: dict[str, int] = {}
    for c in results.cases:
        counts[c.status] = counts.get(c.status, 0) + 1
    return {"format": FORMAT, "sweep": sweep["name"], "stack": plan["stack"].get("name"),
            "triton": results.triton, "gpu": plan["profile"]["key"], "arch": plan["profile"]["arch"],
            "smem_per_block": plan["profile"]["smem_per_block"], "points": len(results.cases),
            "grid_points": sweep["points"], "reduced": sweep["reduced"], "sass": sweep["sass"],
            "status_counts": dict(sorted(counts.items())), "groups": groups}


def _one_at_a_time(g: dict, members: list, plan_cases: dict) -> dict:
    base = next((c for c in members if c.id.endswith(".base")), None)
    out = {"group": g["name"], "family": g["family"], "vary": g["vary"], "points": len(members),
           "base": _cell(base) if base else None, "axes": []}
    if base is None or base.status == "unsupported":
        out["answer"] = (f"{g['family']}: not offered by this release ({base.error})" if base else
                         f"{g['name']}: base point not in this run")
        return out
    for axis, labels in g["axes"].items():
        base_label = _label(g["base"][axis])
        cells = {plan_cases[c.id]["sweep"]["label"]: c for c in members if plan_cases[c.id]["sweep"]["axis"] == axis}
        full = g.get("order", {}).get(axis, labels)
        order = [lab for lab in full if lab in labels or lab == base_label]
        if base_label not in order:
            order.insert(0, base_label)
        bi = order.index(base_label)
        row = []
        for lab in order:
            c = base if lab == base_label else cells.get(lab)
            if c is not None:
                row.append(_cell(c, lab))
        flips = [r for r in row if r["label"] != base_label and (r["status"], r["verdict"]) != _state(base)]
        below = next((r for r in reversed(row) if r["label"] in order[:bi] and r in flips), None)
        above = next((r for r in row if r["label"] in order[bi + 1:] and r in flips), None)
        tried = [r["label"] for r in row]
        if not flips:
            text = (f"{axis}: {base.verdict} at every value tried ({', '.join(tried)}): "
                    f"no flip with these {len(tried)} values")
        else:
            sides = []
            for side, r in (("below", below), ("above", above)):
                if r:
                    sides.append(f"{side} {base_label}: first flip at {r['label']} ({_why(by_cell(r, members))})")
            text = f"{axis}: {base.verdict} at {base_label}; " + "; ".join(sides)
        out["axes"].append({"axis": axis, "base": base_label, "tried": tried, "cells": row,
                            "flips": [r["label"] for r in flips], "boundary": {"below": below, "above": above},
                            "answer": text})
    flipped = [a["axis"] for a in out["axes"] if a["flips"]]
    said = base.verdict if base.status == "ok" else f"{base.status} ({base.error or '-'})"
    out["answer"] = (f"{g['family']}: base {said}; "
                     + (f"flips along {', '.join(flipped)}" if flipped else
                        f"no flip along any of {len(out['axes'])} axes ({len(members)} points)"))
    return out


def by_cell(row: dict, members: list) -> CaseRecord:
    return next(c for c in members if c.id == row["id"])


def _label(v) -> str:
    return re.sub(r"[^a-z0-9_.]+", "_", str(v).lower()).strip("_") or "x"


def _product(g: dict, members: list, plan_cases: dict, profile: dict, hypotheses: list) -> dict:
    axes = list(g["axes"])
    params = {c.id: plan_cases[c.id]["sweep"]["params"] for c in members}
    supported = [c for c in members if c.status != "unsupported"]
    out = {"group": g["name"], "family": g["family"], "vary": g["vary"], "points": len(members),
           "named": [], "failures": [], "hypotheses": [], "frontier": None}
    for c in members:
        name = plan_cases[c.id]["sweep"].get("name")
        if name:
            out["named"].append({"name": name, **_cell(c)})
    if not supported:
        out["answer"] = f"{g['family']}: not offered by this release ({members[0].error})"
        return out
    failing: dict[tuple[str, str, str, str], list[str]] = {}
    example: dict[tuple[str, str, str, str], str] = {}
    for c in supported:
        # Failing: not compiled, or not what was expected (the suite's groups expect TMA; a
        # declared call states its own expectation, or none: then only the status counts).
        if c.status != "ok" or (c.verdict != "tma" if c.expect == "tma" else c.met is False):
            # One kind of failure whatever line or register count its message names.
            error = (c.error or "")[:200]
            key = (c.status, c.verdict, c.failing_pass or "", _DIGITS.sub("N", error))
            failing.setdefault(key, []).append(c.id)
            example.setdefault(key, error)
    values = {a: sorted({params[c.id][a] for c in supported}) for a in axes}
    all_ids = [c.id for c in supported]
    for key, ids in sorted(failing.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        status, verdict, fpass, _ = key
        rule = best_rule(set(ids), all_ids, params, axes, values)
        out["failures"].append({"status": status, "verdict": verdict, "failing_pass": fpass or None,
                                "error": example[key] or None, "count": len(ids), "ids": sorted(ids), "rule": rule})
    any_fail = {i for ids in failing.values() for i in ids}
    for h in hypotheses:
        out["hypotheses"].append(check_rule(h["name"], h["rule"], any_fail, all_ids, params))
    out["frontier"] = _frontier(supported, params, profile, axes)
    names = {c.id: plan_cases[c.id]["sweep"]["name"] for c in members if plan_cases[c.id]["sweep"].get("name")}
    gpu = measured.answer(supported, params, names, lambda ids: best_rule(ids, all_ids, params, axes, values))
    if gpu is not None:
        out["gpu"] = gpu
    n = len(supported)
    if not failing:
        expect = supported[0].expect
        met = "compiled with TMA" if expect == "tma" else (
            f"met {expect}" if expect and all(c.met for c in supported) else "compiled")
        out["answer"] = f"{g['family']}: every one of {n} configs {met}: not reproduced with these {n} configs"
    else:
        parts = [f"{f['count']} {f['status']}" + (f" in {f['failing_pass']}" if f["failing_pass"] else "")
                 + (f" when {f['rule']['text']}" if f["rule"]["exact"] else f" (no threshold rule fits exactly; "
                                                                             f"closest: {f['rule']['text']})")
                 for f in out["failures"]]
        out["answer"] = f"{g['family']}: {len(any_fail)} of {n} configs fail: " + "; ".join(parts)
    return out


def _matches(rule: dict, p: dict) -> bool:
    return all(p.get(a) is not None and p[a] >= t for a, t in rule.items())


def rule_text(rule: dict) -> str:
    return " and ".join(f"{a} >= {t}" for a, t in rule.items()) or "always"


def best_rule(target: set, ids: list, params: dict, axes: list, values: dict) -> dict:
    """The conjunction of `axis >= threshold` that selects exactly `target` among `ids` with the
    fewest conditions and the lowest thresholds; else the one with the fewest misclassified points."""
    choices = [[None] + values[a][1:] for a in axes]  # the smallest value as a threshold is no condition
    best: tuple[tuple, dict, set] | None = None
    for combo in itertools.product(*choices):
        rule = {a: t for a, t in zip(axes, combo) if t is not None}
        sel = {i for i in ids if _matches(rule, params[i])}
        wrong = len(sel ^ target)
        key = (wrong, len(rule), [values[a].index(t) for a, t in rule.items()])
        if best is None or key < best[0]:
            best = (key, rule, sel)
    assert best is not None  # each axis offers at least "no condition": the product is never empty
    (wrong, _, _), rule, sel = best
    return {"rule": rule, "text": rule_text(rule), "exact": wrong == 0, "selected": len(sel),
            "false_positives": len(sel - target), "missed": len(target - sel)}


def check_rule(name: str, rule: dict, failing: set, ids: list, params: dict) -> dict:
    sel = {i for i in ids if _matches(rule, params[i])}
    holds = sel == failing
    return {"name": name, "rule": dict(rule), "text": rule_text(rule), "tried": len(ids), "selected": len(sel),
            "failing": len(failing), "failing_selected": len(sel & failing), "selected_ok": len(sel - failing),
            "failing_outside": len(failing - sel), "holds": holds,
            "answer": (f"{name} ({rule_text(rule)}): " + ("holds on" if holds else "does not hold on")
                       + f" these {len(ids)} configs: it selects {len(sel)}, of which {len(sel & failing)} fail; "
                         f"{len(failing - sel)} failures lie outside it")}


def _frontier(cases: list, params: dict, profile: dict, axes: list) -> dict:
    limit = profile["smem_per_block"]
    ok = [c for c in cases if c.status == "ok" and c.metadata.get("shared_bytes") is not None]
    fits = [c for c in ok if c.metadata["shared_bytes"] <= limit]
    big = [c for c in ok if c.metadata["shared_bytes"] > limit]
    # Per tile (every axis but warps and stages): the most stages that still fit the profile.
    tile_axes = [a for a in axes if a not in ("num_stages", "num_warps")]
    most: dict[str, int] = {}
    if "num_stages" in axes:
        for c in fits:
            p = params[c.id]
            key = "-".join(f"{a}{p[a]}" for a in tile_axes)
            most[key] = max(most.get(key, 0), p["num_stages"])
    return {"max_stages_fitting": dict(sorted(most.items())), "tile_axes": tile_axes,"limit": limit, "compiled": len(ok), "fits": len(fits), "too_big": len(big),
            "largest_fitting": max((c.metadata["shared_bytes"] for c in fits), default=None),
            "smallest_too_big": min((c.metadata["shared_bytes"] for c in big), default=None),
            "too_big_ids": sorted(c.id for c in big)}


def boundary_ids(answers: dict) -> set:
    """Points whose IR the bundle keeps: each group's base and named configs, every boundary
    point, and the first point of each failure kind."""
    keep = set()
    for g in answers["groups"]:
        if g.get("base"):
            keep.add(g["base"]["id"])
        for a in g.get("axes", []):
            for side in ("below", "above"):
                if a["boundary"][side]:
                    keep.add(a["boundary"][side]["id"])
        for n in g.get("named", []):
            keep.add(n["id"])
        for f in g.get("failures", []):
            keep.add(f["ids"][0])
        for f in (g.get("gpu") or {}).get("failures", []):
            keep.add(f["ids"][0])
        for b in (g.get("gpu") or {}).get("best", []):
            if b["best"]:
                keep.add(b["best"]["id"])
    return keep
