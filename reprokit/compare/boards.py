"""Which board measured a result set, and how times from two boards are judged.

A bundle's env.json carries two records of its GPU (reprokit.harness.nvml.board_records):
`board.identity` (the sha256 of the board's UUID, left out with --share) and `board.state`
(driver, power limit, ECC, clocks and temperature at start). Between two GPU result sets:

    relation(a, b) -> "same board" | "another board" | "board unknown" | None (compile-only)

A time label (reprokit.compare.timing) means something only between measurements of one board:
two H100s of one model, or one board at another boost clock, differ by more than its 2%
threshold. So across boards (or where a side's board is unknown) a time is judged only against
the cross-board tolerance of its kind of case (TOLERANCES; docs/gpu.md says where each figure
comes from): FASTER or SLOWER only when the kernel's absolute time moved by more than the
absolute tolerance *and*, where both sides timed a baseline, its ratio to that baseline moved
the same way by more than the per-baseline tolerance.
"""

from __future__ import annotations

import hashlib
import statistics
from dataclasses import dataclass, replace

from reprokit.compare import timing

SAME_BOARD, ANOTHER_BOARD, BOARD_UNKNOWN = "same board", "another board", "board unknown"
RELATIONS = (SAME_BOARD, ANOTHER_BOARD, BOARD_UNKNOWN)


def identity_of_uuid(uuid: str | None) -> str | None:
    """The board identity a bundle records: sha256 of the UUID as NVML spells it ("GPU-...")."""
    return hashlib.sha256(uuid.encode()).hexdigest() if uuid else None


def board_identity(env: dict | None) -> str | None:
    """env.json's board identity, None where it has none (--share, compile-only, older bundles)."""
    board = (env or {}).get("board") if isinstance(env, dict) else None
    ident = (board or {}).get("identity") if isinstance(board, dict) else None
    value = (ident or {}).get("uuid_sha256") if isinstance(ident, dict) else None
    return value if isinstance(value, str) else None


def relation(a_mode: str | None, a_board: str | None, b_mode: str | None, b_board: str | None) -> str | None:
    """How two result sets' boards relate; None unless both ran on a GPU."""
    if a_mode != "gpu" or b_mode != "gpu":
        return None
    if a_board is None or b_board is None:
        return BOARD_UNKNOWN
    return SAME_BOARD if a_board == b_board else ANOTHER_BOARD


@dataclass(frozen=True)
class Tolerance:
    """How far one case's time may move between two boards of one model, as a fraction."""

    absolute: float             # the kernel's own median time
    per_baseline: float | None  # its ratio to the same run's baseline (torch copy, cuBLAS); None: no baseline


# Per kind of case; docs/gpu.md ("Across boards") says which figures are measured and how.
TOLERANCES = {
    "copy": Tolerance(absolute=0.05, per_baseline=0.06),
    "gemm": Tolerance(absolute=0.04, per_baseline=0.04),
    "call": Tolerance(absolute=0.05, per_baseline=None),
}


def kind(size: dict, raw: dict) -> str:
    """The kind of a benchmarked case: "gemm" (a K dimension), "copy" (a baseline copy), "call"."""
    if "K" in size:
        return "gemm"
    return "copy" if raw.get("baseline") else "call"


def _median(raw: dict | None, method: str) -> float | None:
    side = timing.side_from_raw(raw, method) if raw else None
    return side.median if side is not None else None


def per_baseline_ratio(old: dict, new: dict, method: str) -> float | None:
    """(new kernel / new baseline) / (old kernel / old baseline) by one timing method, or None."""
    ok, ob = _median(old.get("kernel"), method), _median(old.get("baseline"), method)
    nk, nb = _median(new.get("kernel"), method), _median(new.get("baseline"), method)
    if not (ok and ob and nk and nb):
        return None
    return (nk / nb) / (ok / ob)


def judge_across(old: dict, new: dict, size: dict, opts: timing.TimingOptions = timing.DEFAULT,
                 board: str = ANOTHER_BOARD) -> timing.Judgement | None:
    """The label of a kernel's time measured on two boards (old/new: a bench run's `raw`, every
    contender), against the cross-board tolerance of its kind; None without a common method."""
    tol = TOLERANCES[kind(size, old)]
    j = timing.judge_raw(old.get("kernel") or {}, new.get("kernel") or {},
                         replace(opts, threshold=max(opts.threshold, tol.absolute)))
    if j is None:
        return None
    per = per_baseline_ratio(old, new, j.method)
    label, reason = j.label, j.reason
    if j.moved and tol.per_baseline is not None:
        up, down = 1 + tol.per_baseline, 1 / (1 + tol.per_baseline)
        agrees = per is not None and (per > up if j.label == timing.SLOWER else per < down)
        if not agrees:
            label = timing.AMBIGUOUS
            reason = (f"{j.label} in absolute time, but the ratio to the baseline moved "
                      f"x{per:.4f}, within +-{100 * tol.per_baseline:.0f}%" if per is not None else
                      f"{j.label} in absolute time; no baseline on both sides to confirm it")
    if not reason:
        reason = f"{board}: judged against the cross-board tolerance +-{100 * j.threshold:.1f}%"
    return replace(j, label=label, reason=reason, board=board,
                   per_baseline=round(per, 5) if per is not None else None)


def spread(values: list) -> float:
    """(max - min) / median of positive values; 0 for fewer than two."""
    vs = [v for v in values if v]
    return (max(vs) - min(vs)) / statistics.median(vs) if len(vs) > 1 else 0.0


__all__ = ["ANOTHER_BOARD", "BOARD_UNKNOWN", "RELATIONS", "SAME_BOARD", "TOLERANCES", "Tolerance", "board_identity",
           "identity_of_uuid", "judge_across", "kind", "per_baseline_ratio", "relation", "spread"]
