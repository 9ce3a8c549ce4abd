"""What a GPU sweep measured, per product group: sweep.json's `gpu` answers.

Every point that compiled was launched (reprokit.harness.kinds.launch): checked against a torch
reference, its determinism by output hashes, and, where right, timed against cuBLAS in the same
process at each size (bench.SWEEP). Here: how many launched and how the others failed (the real
launch error, grouped, with the simplest `axis >= threshold` rule that selects them), the best
config per size and its fraction of cuBLAS, and the suite's named configs side by side: the
config-fix proposal's conservative and aggressive ones, with their measured numbers or the error
that kept them from launching. Fractions are same-run ratios (cuBLAS timed beside each point).
"""

from __future__ import annotations

import re
import statistics

from reprokit.records import CaseRecord

_DIGITS = re.compile(r"\d+")


def _size_key(size: dict) -> str:
    return "x".join(str(size[k]) for k in ("M", "N", "K") if k in size)


def _timing(row: dict) -> dict:
    """One bench row (a size) as the answers give it: medians, TFLOP/s, the fraction of cuBLAS, and
    how honest the number is (samples, spread, whether every round met its noise target)."""
    if "kernel" not in row:
        return {"status": row.get("status", "launch_error"), "error": row.get("error")}
    k, b = row["kernel"], row["baseline"]
    stop = k.get("stopping") or {}
    clock = k.get("clock") or {}
    return {"status": "ok", "ms": k["median_ms"], "tflops": k.get("tflops"), "cublas_ms": b["median_ms"],
            "cublas_tflops": b.get("tflops"), "of_cublas": round(row["ratio_to_baseline"], 4),
            "spread": k.get("spread"), "cublas_spread": b.get("spread"), "samples": sum(stop.get("samples") or []),
            "reached": stop.get("reached"), "discarded": clock.get("discarded", 0)}


def point(c: CaseRecord) -> dict | None:
    """A point's GPU facts: status (ok, wrong, nondeterministic or the launch failure's), the error
    and resource figures of a failure, and its timing per size; None where it never reached the GPU."""
    g = c.gpu or c.raw.get("gpu")
    if not g:
        return None
    out = {"status": g["status"]}
    for key in ("error", "resource", "required", "limit"):
        if g.get(key) is not None:
            out[key] = g[key]
    if g.get("correctness"):
        out["max_abs_err"] = g["correctness"].get("max_abs_err")
    out["sizes"] = {_size_key(r["size"]): _timing(r) for r in g.get("bench") or []}
    return out


def answer(members: list, params: dict, names: dict, rule_for) -> dict | None:
    """The `gpu` answers of one product group; None when none of its points ran on the GPU.
    names: point id -> suite config name; rule_for(ids): the threshold rule selecting them."""
    facts: dict[str, dict] = {}
    for c in members:
        f = point(c)
        if f is not None:
            facts[c.id] = f
    if not facts:
        return None
    statuses: dict = {}
    for f in facts.values():
        statuses[f["status"]] = statuses.get(f["status"], 0) + 1
    kinds: dict = {}
    for i, f in facts.items():
        if f["status"] != "ok":
            key = (f["status"], f.get("resource") or "", _DIGITS.sub("N", (f.get("error") or "")[:200]))
            kinds.setdefault(key, []).append(i)
    failures = []
    for (status, resource, _), ids in sorted(kinds.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        first = facts[sorted(ids)[0]]
        failures.append({"status": status, "resource": resource or None, "error": first.get("error"),
                         "count": len(ids), "ids": sorted(ids), "rule": rule_for(set(ids))})
    sizes = sorted({s for f in facts.values() for s in f["sizes"]}, key=lambda s: [int(x) for x in s.split("x")])
    best = []
    for s in sizes:
        timed = [(i, f["sizes"][s]) for i, f in facts.items() if f["sizes"].get(s, {}).get("status") == "ok"]
        if not timed:
            best.append({"size": s, "timed": 0, "best": None})
            continue
        i, t = max(timed, key=lambda it: (it[1]["of_cublas"], it[0]))
        ranked = sorted(timed, key=lambda it: (-it[1]["of_cublas"], it[0]))
        best.append({"size": s, "timed": len(timed), "best": {"id": i, "params": params[i], "name": names.get(i), **t},
                     "top": [{"id": j, "params": params[j], "of_cublas": u["of_cublas"], "tflops": u["tflops"]}
                             for j, u in ranked[:5]],
                     "cublas_tflops_median": _median([u["cublas_tflops"] for _, u in timed if u.get("cublas_tflops")])})
    named = []
    for i, name in sorted(names.items(), key=lambda kv: _name_order(kv[1])):
        f = facts.get(i)
        named.append({"name": name, "id": i, "params": params[i], **(f or {"status": "not_launched"})})
    return {"launched": len(facts), "statuses": dict(sorted(statuses.items())), "failures": failures,
            "best": best, "named": named, "proposal": proposal(named, sizes)}


def _median(xs: list):
    return statistics.median(xs) if xs else None


def _name_order(name: str) -> tuple:
    # conservative first, aggressive last, the rest between: the proposal's own table's order
    return (0 if name.startswith("conservative") else 2 if name.startswith("aggressive") else 1, name)


def cell(f: dict, size: str) -> str:
    """A named config at one size, in a few words: its % of cuBLAS and TFLOP/s, or why it did not run."""
    if f["status"] != "ok":
        if f.get("required") is not None:
            return f"{f['status']}: {f.get('resource') or 'resource'} {f['required']} > {f['limit']}"
        return f"{f['status']}: {(f.get('error') or '-')[:80]}"
    t = f.get("sizes", {}).get(size)
    if not t:
        return "not timed"
    if t["status"] != "ok":
        return f"{t['status']}: {(t.get('error') or '-')[:80]}"
    return f"{100 * t['of_cublas']:.1f}% of cuBLAS ({t['tflops']:.0f} TFLOP/s)" if t.get("tflops") else \
        f"{100 * t['of_cublas']:.1f}% of cuBLAS"


def proposal(named: list, sizes: list) -> dict:
    """The config-fix proposal's claim (aggressive configs 1.5-2x faster than conservative) against
    what this GPU measured: per size, each named config's cell and, where both ran, aggressive over
    conservative."""
    cons = [n for n in named if n["name"].startswith("conservative")]
    aggr = [n for n in named if n["name"].startswith("aggressive")]
    rows = []
    for s in sizes:
        row = {"size": s, "configs": {n["name"]: cell(n, s) for n in named}, "aggressive_over_conservative": {}}
        for c in cons:
            tc = (c.get("sizes") or {}).get(s) or {}
            for a in aggr:
                ta = (a.get("sizes") or {}).get(s) or {}
                if tc.get("status") == "ok" and ta.get("status") == "ok":
                    row["aggressive_over_conservative"][a["name"]] = round(tc["ms"] / ta["ms"], 3)
        rows.append(row)
    ran = [a["name"] for a in aggr if a["status"] == "ok"]
    failed = [f"{a['name']} ({cell(a, sizes[0] if sizes else '')})" for a in aggr if a["status"] != "ok"]
    parts = []
    if failed:
        parts.append("cannot launch: " + "; ".join(failed))
    for r in rows:
        bits = [f"{name} {text}" for name, text in r["configs"].items() if not text.startswith(("out_of", "launch", "not"))]
        if bits:
            parts.append(f"{r['size']}: " + ", ".join(bits))
        for name, x in r["aggressive_over_conservative"].items():
            parts.append(f"{r['size']}: {name} is {x:.2f}x conservative")
    if aggr and not ran:
        parts.append("the claim (aggressive 1.5-2x faster than conservative) cannot hold on this GPU: "
                     "no aggressive config launches")
    return {"rows": rows, "answer": "; ".join(parts) or "no named config ran"}
