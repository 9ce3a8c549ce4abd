"""The TMA oracle: TMA markers per IR level, and a verdict per case against its expectation.

Markers count TMA *data movement* (loads, stores, gathers, reductions). Descriptor set-up
(tensormap creation, fences, waits) is counted apart in `tma_ops` as evidence but does not
make a kernel "emit TMA" by itself. Op names changed across Triton versions: 3.0 spells the
TTGIR dialect `triton_nvidia_gpu.`, later releases `ttng.`.
"""

from __future__ import annotations

import re
from collections import Counter

LEVELS = ("ttir", "ttgir", "llir", "ptx", "sass")

# level -> (data-movement pattern, set-up pattern). Patterns are matched per op occurrence.
_MOVE = {
    "ttir": r"\btt\.(?:experimental_)?descriptor_(?:load|store|gather|scatter|reduce)\b",
    "ttgir": r"\b(?:ttng|triton_nvidia_gpu)\.async_tma_(?:copy_global_to_local|copy_local_to_global|gather|scatter|reduce)\b",
    "llir": r"\bcp\.(?:reduce\.)?async\.bulk\.tensor\.[\w.:]+|llvm\.nvvm\.cp\.async\.bulk\.tensor\.[\w.]+",
    "ptx": r"\bcp\.(?:reduce\.)?async\.bulk\.tensor\.[\w.:]+",
    "sass": r"\bU(?:TMALDG|TMASTG|TMAREDG|BLKCP|BLKRED)\b",
}
_SETUP = {
    "ttir": r"\btt\.(?:make_tensor_descriptor|reinterpret_tensor_descriptor)\b",
    "ttgir": r"\b(?:ttng|triton_nvidia_gpu)\.(?:tensormap_\w+|async_tma_store_wait|reinterpret_tensor_descriptor)\b",
    "llir": r"\btensormap\.[\w.:]+|\bfence\.proxy\.tensormap[\w.:]*",
    "ptx": r"\btensormap\.[\w.:]+|\bfence\.proxy\.tensormap[\w:.]*|\bprefetch\.tensormap\b",
    "sass": r"\bU(?:TMACCTL|TMACMDFLUSH|TMAPF)\b",
}
_MOVE_RE = {k: re.compile(v) for k, v in _MOVE.items()}
_SETUP_RE = {k: re.compile(v) for k, v in _SETUP.items()}
# Lines that only mention an op (comments in MLIR, `//` in PTX/SASS headers) are not ops.
_COMMENT = {"ttir": "//", "ttgir": "//", "llir": ";", "ptx": "//", "sass": None}


def _strip_comments(level: str, text: str) -> str:
    mark = _COMMENT[level]
    if mark is None:
        return text
    return "\n".join(line.split(mark, 1)[0] if mark in line else line for line in text.splitlines())


def scan(level: str, text: str) -> tuple[int, dict]:
    """Return (data-movement count, {op: count} for movement and set-up ops) for one IR level."""
    body = _strip_comments(level, text)
    ops = Counter()
    for m in _MOVE_RE[level].finditer(body):
        ops[_normalise(m.group(0))] += 1
    moves = sum(ops.values())
    for m in _SETUP_RE[level].finditer(body):
        ops[_normalise(m.group(0))] += 1
    return moves, dict(sorted(ops.items()))


def _normalise(op: str) -> str:
    # `cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes` keeps its
    # direction but drops nothing; SASS suffixes like `.2D` are already outside the match.
    return op.replace("triton_nvidia_gpu.", "ttng.")


def scan_all(texts: dict) -> tuple[dict, dict]:
    """texts: level -> IR text (missing levels are skipped). Returns (tma counts, tma_ops)."""
    counts, ops = {}, {}
    for level in LEVELS:
        if texts.get(level) is None:
            continue
        counts[level], ops[level] = scan(level, texts[level])
    return counts, ops


# Evidence levels that decide "TMA emitted": what the hardware runs (SASS), else the last
# text level the compiler produced (PTX), else TTGIR.
_DECIDING = ("sass", "ptx", "ttgir")


def judge(case: dict, result: dict, gate: dict | None) -> dict:
    """The verdict for one case. `gate` is the result of the case named by `gated_by`, if any.

    Returns {"verdict", "met", "reason"}; `met` is None when the expectation cannot be judged.
    """
    expect = case.get("expect", "tma")
    status = result["status"]
    counts = result.get("tma") or {}
    if status == "unsupported":
        return _v("unsupported", None, result.get("error") or "API not offered by this Triton")
    if status == "timeout":
        return _v("timeout", None, result.get("error") or "compile exceeded its timeout")
    if status == "crash":
        # A compiler that aborts on input proves nothing about TMA: never counts as "met".
        return _v("crashed", False, result.get("error") or "compiler crashed")
    if status == "compile_error":
        if expect == "no-tma":
            return _v("rejected", True, "compiler refused the broken invariant: " + (result.get("error") or ""))
        return _v("error", False, result.get("error") or "compile error")
    if status != "ok":
        return _v("error", None, result.get("error") or status)
    level = next((lv for lv in _DECIDING if lv in counts), None)
    if level is None:
        return _v("error", None, "no IR level to judge")
    emitted = counts[level] > 0
    if gate is not None and gate.get("verdict") != "tma" and expect == "tma":
        return _v("inconclusive", None,
                  f"{case.get('gated_by')} showed no TMA ({gate.get('verdict')}), so this stress case cannot be judged")
    verdict = "tma" if emitted else "no-tma"
    met = emitted == (expect == "tma")
    where = ", ".join(f"{lv}={counts[lv]}" for lv in LEVELS if lv in counts)
    return _v(verdict, met, f"{'TMA' if emitted else 'no TMA'} at {level} ({where}); expected {expect}")


def _v(verdict: str, met, reason: str) -> dict:
    return {"verdict": verdict, "met": met, "reason": reason.strip().splitlines()[0] if reason.strip() else verdict}
