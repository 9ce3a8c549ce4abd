"""What a bundle claims, checked against what it carries: checksums prove the bytes are the
ones listed, not that the listed verdicts follow from them.

plan.json and results.json must name the same cases (each once, with the same family, control
and expectation), and every recorded TMA count, op count, verdict and `met` must be what the
oracle (reprokit.common.oracle, the very code the harness ran) gives again on the bundle's
own IR. A results.json edited after the run, with its manifest and sums recomputed, fails here.

The harness's oracle gives each verdict once, where the case ran; this is the one check of it,
made on every read of a bundle (reprokit.bundle.reader). The writer packs the verdict as recorded.
"""

from __future__ import annotations

from reprokit.common import oracle
from reprokit.records import CaseRecord, Results

_SUFFIX = {f".{lv}": lv for lv in oracle.LEVELS}


def ir_level(rel: str) -> str | None:
    """The IR level of a bundle member, from its place and suffix (cases/<id>/kernel.ptx -> ptx)."""
    if not rel.startswith("cases/"):
        return None
    dot = rel.rfind(".")
    return _SUFFIX.get(rel[dot:]) if dot > 0 else None


def count(level: str, data: bytes) -> tuple[int, dict]:
    """(TMA data-movement count, {op: count}) of one IR file, as the harness counted it."""
    return oracle.scan(level, data.decode("utf-8", errors="replace"))


def problems(plan: dict, results: Results, ir: dict) -> list[str]:
    """One line per disagreement; `ir` maps a member path to (level, moves, ops) as count() gave."""
    out = []
    planned = {}
    for c in plan["cases"]:
        if c["id"] in planned:
            out.append(f"plan.json: case {c['id']} appears twice")
        planned[c["id"]] = c
    recorded: dict[str, CaseRecord] = {}
    for r in results.cases:
        if r.id in recorded:
            out.append(f"results.json: case {r.id} appears twice")
        recorded[r.id] = r
    for cid in sorted(set(planned) - set(recorded)):
        out.append(f"results.json: no result for case {cid}, which plan.json names")
    for cid in sorted(set(recorded) - set(planned)):
        out.append(f"results.json: case {cid} is not in plan.json")
    judged: dict = {}
    for cid, case in planned.items():  # plan order: a P2's gate (its family's P0) comes first
        rec = recorded.get(cid)
        if rec is None:
            continue
        for key, default in (("family", None), ("control", None), ("expect", "tma")):
            want = case.get(key, default)
            if getattr(rec, key) != want:
                out.append(f"results.json: case {cid}: {key} is {getattr(rec, key)!r}, but plan.json says {want!r}")
        counts, lines = _recount(cid, rec, ir)
        out += lines
        gate = judged.get(case.get("gated_by")) if case.get("gated_by") else None
        # The harness's own oracle, on the record as the harness wrote it (plain JSON).
        again = oracle.judge(case, {**rec.raw, "tma": counts}, gate, results.triton)
        judged[cid] = {**rec.raw, **again}
        for key in ("verdict", "met"):
            if getattr(rec, key) != again[key]:
                out.append(f"results.json: case {cid}: {key} is {getattr(rec, key)!r}, but the oracle gives "
                           f"{again[key]!r} from the bundle's own IR ({again['reason']})")
    return out


def _recount(cid: str, rec: CaseRecord, ir: dict) -> tuple[dict, list[str]]:
    """The case's TMA counts recomputed from its IR files, and where they differ from the record."""
    out = []
    artifacts, tma, ops = rec.artifacts, rec.tma, rec.tma_ops
    levels = set(tma) | ({lv for lv in oracle.LEVELS if lv in artifacts} if rec.status == "ok" else set())
    counts = {}
    for lv in oracle.LEVELS:
        if lv not in levels:
            continue
        path = artifacts.get(lv)
        got = ir.get(path)
        if path is None and lv in rec.ir_sha256 and isinstance(tma.get(lv), int):
            # A sweep point that keeps only its IR's hash (docs/sweeps.md): its count stands as
            # recorded, and the verdict is still judged again from it.
            counts[lv] = tma[lv]
            continue
        if path is None or got is None or got[0] != lv:
            out.append(f"results.json: case {cid}: records tma.{lv} = {tma.get(lv)!r}, but the bundle holds no "
                       f"{lv} IR for it" + (f" ({path})" if path else ""))
            continue
        _, moves, found_ops = got
        counts[lv] = moves
        if lv not in tma:
            out.append(f"results.json: case {cid}: carries {path} but records no tma.{lv} (the oracle finds {moves})")
        elif tma[lv] != moves:
            out.append(f"results.json: case {cid}: tma.{lv} is {tma[lv]!r}, but the oracle counts {moves} "
                       f"in {path}")
        if lv in ops and ops[lv] != found_ops:
            out.append(f"results.json: case {cid}: tma_ops.{lv} is {ops[lv]}, but the oracle finds {found_ops} "
                       f"in {path}")
    return counts, out
