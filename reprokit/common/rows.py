"""A case's record as text, cell by cell: the one rendering behind summary.tsv (in the stack),
the bundle README and `show` (on the host), and the CLI's verdict tables. Stdlib only."""

from __future__ import annotations

from typing import Any

from reprokit.common.oracle import LEVELS

MET_TEXT: dict[object, str] = {True: "yes", False: "no"}


def case_cells(r: dict[str, Any]) -> dict[str, str]:
    """Every column any table shows: id, family, control, status, verdict, expect, met (yes/no/-),
    one count per IR level ('-' when not compiled that far), tma (the counts on one line),
    shared_bytes, launch (ok/no/-), compile_s, reason and gpu (the GPU status, '-' without one)."""
    tma = r.get("tma") or {}
    launch = r.get("launch")
    return {
        "id": r["id"], "family": r.get("family", ""), "control": r.get("control", ""),
        "status": r.get("status", ""), "verdict": r.get("verdict", ""), "expect": r.get("expect") or "-",
        "met": MET_TEXT.get(r.get("met"), "-"),
        **{lv: str(tma[lv]) if lv in tma else "-" for lv in LEVELS},
        "tma": " ".join(f"{lv}={tma[lv]}" for lv in LEVELS if tma.get(lv) is not None) or "-",
        "shared_bytes": str((r.get("metadata") or {}).get("shared_bytes", "-")),
        "launch": "-" if not launch else ("ok" if launch["fits"] else "no"),
        "compile_s": f"{r['compile_s']:.2f}" if r.get("compile_s") is not None else "-",
        "reason": r.get("reason", ""),
        "gpu": (r.get("gpu") or {}).get("status", "-"),   # gpu mode: what the launch found
    }
