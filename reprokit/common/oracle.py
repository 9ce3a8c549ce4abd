"""The TMA oracle: TMA markers per IR level, and a verdict per case against its expectation.

A negative control (expect no-tma) is met by a clean compile with no TMA, or by a compile error
that is the rejection the case names for this release (`reject`: Triton versions, the failing
pass, a pattern of the compiler's words). Any other compile error proves nothing about the
broken invariant (a harness fault, a different limit) and is `error`, not met.

Markers count TMA *data movement* (loads, stores, gathers, reductions). Descriptor set-up
(tensormap creation, fences, waits) is counted apart in `tma_ops` as evidence but does not
make a kernel "emit TMA" by itself. Op names changed across Triton versions: 3.0 spells the
TTGIR dialect `triton_nvidia_gpu.`, later releases `ttng.`.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

LEVELS = ("ttir", "ttgir", "llir", "ptx", "sass")

# level -> data-movement patterns, set-up patterns. Each starts with a literal, so the regex
# engine scans for it fast (LLVM IR with debug info runs to megabytes); word
# boundaries and comments are checked per match instead of in the pattern.
_MOVE = {
    "ttir": [r"tt\.(?:experimental_)?descriptor_(?:load|store|gather|scatter|reduce)\b"],
    "ttgir": [r"ttng\.async_tma_(?:copy_global_to_local|copy_local_to_global|gather|scatter|reduce)\b",
              r"triton_nvidia_gpu\.async_tma_(?:copy_global_to_local|copy_local_to_global|gather|scatter|reduce)\b"],
    "llir": [r"cp\.async\.bulk\.tensor\.[\w.:]+", r"cp\.reduce\.async\.bulk\.tensor\.[\w.:]+",
             r"llvm\.nvvm\.cp\.async\.bulk\.tensor\.[\w.]+"],
    "ptx": [r"cp\.async\.bulk\.tensor\.[\w.:]+", r"cp\.reduce\.async\.bulk\.tensor\.[\w.:]+"],
    "sass": [r"UTMALDG\b", r"UTMASTG\b", r"UTMAREDG\b", r"UBLKCP\b", r"UBLKRED\b"],
}
_SETUP = {
    "ttir": [r"tt\.make_tensor_descriptor\b", r"tt\.reinterpret_tensor_descriptor\b"],
    "ttgir": [r"ttng\.(?:tensormap_\w+|async_tma_store_wait|reinterpret_tensor_descriptor)\b",
              r"triton_nvidia_gpu\.(?:tensormap_\w+|async_tma_store_wait|reinterpret_tensor_descriptor)\b"],
    "llir": [r"tensormap\.[\w.:]+", r"fence\.proxy\.tensormap[\w.:]*"],
    "ptx": [r"tensormap\.[\w.:]+", r"fence\.proxy\.tensormap[\w:.]*", r"prefetch\.tensormap\b"],
    "sass": [r"UTMACCTL\b", r"UTMACMDFLUSH\b", r"UTMAPF\b"],
}
_MOVE_RE = {k: [re.compile(p) for p in v] for k, v in _MOVE.items()}
_SETUP_RE = {k: [re.compile(p) for p in v] for k, v in _SETUP.items()}
# Lines that only mention an op (comments in MLIR, `//` in PTX, `;` in LLVM IR) are not ops.
# SASS listings put the encoding in `/* ... */`, never an op name.
_COMMENT = {"ttir": "//", "ttgir": "//", "llir": ";", "ptx": "//", "sass": None}


def _is_op(level: str, text: str, pos: int) -> bool:
    """A match counts when it starts a word and does not sit in a comment."""
    if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_."):
        return False
    mark = _COMMENT[level]
    if mark is None:
        return True
    line_start = text.rfind("\n", 0, pos) + 1
    return text.find(mark, line_start, pos) < 0


def scan(level: str, text: str) -> tuple[int, dict[str, int]]:
    """Return (data-movement count, {op: count} for movement and set-up ops) for one IR level."""
    ops: Counter[str] = Counter()
    for rx in _MOVE_RE[level]:
        for m in rx.finditer(text):
            if _is_op(level, text, m.start()):
                ops[_normalise(m.group(0))] += 1
    moves = sum(ops.values())
    for rx in _SETUP_RE[level]:
        for m in rx.finditer(text):
            if _is_op(level, text, m.start()):
                ops[_normalise(m.group(0))] += 1
    return moves, dict(sorted(ops.items()))


def op_lines(level: str, text: str) -> list[tuple[int, str]]:
    """(0-based line, op) of every TMA data-movement op at one level, in text order: where the
    report's IR excerpts centre."""
    hits = []
    for rx in _MOVE_RE[level]:
        for m in rx.finditer(text):
            if _is_op(level, text, m.start()):
                hits.append((text.count("\n", 0, m.start()), _normalise(m.group(0))))
    return sorted(hits)


def _normalise(op: str) -> str:
    return op.replace("triton_nvidia_gpu.", "ttng.")


def scan_all(texts: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any]]:
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


# reprokit could not capture what the program compiled (reprokit.harness.kinds.generated): its own
# verdict, never the compiler's or the kernel's, and never "not met"
NOT_CAPTURED = ("not_reproduced", "capture_failed")


def judge(case: dict[str, Any], result: dict[str, Any], gate: dict[str, Any] | None, triton: str | None = None) -> dict[str, Any]:
    """The verdict for one case. `gate` is the result of the case named by `gated_by`, if any;
    `triton` the version that compiled it (which of the case's `reject` rules apply).

    Returns {"verdict", "met", "reason"}; `met` is None when the expectation cannot be judged.
    """
    if result["status"] in NOT_CAPTURED:
        return _v(result["status"], None, result.get("error") or result["status"])
    if case.get("kind") == "call":
        return judge_call(case, result)
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
            return _judge_rejection(case, result, triton)
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
    where = ", ".join(f"{lv}={counts[lv]}" for lv in LEVELS if lv in counts)
    if expect is None:  # a declared or traced case without an expectation: what was seen, never "not met"
        return _v(verdict, None, f"{'TMA' if emitted else 'no TMA'} at {level} ({where}); no expectation")
    met = emitted == (expect == "tma")
    return _v(verdict, met, f"{'TMA' if emitted else 'no TMA'} at {level} ({where}); expected {expect}")


EXPECT_RE = re.compile(r"^(?:tma|no-tma|sass:[A-Z][A-Z0-9_.]*|regs<=\d+|smem<=\d+)$")
_SASS_OP = r"(?<![A-Za-z0-9_.]){}(?![A-Za-z0-9_])"


def sass_op_count(op: str, sass: str) -> int:
    """Instructions of SASS opcode `op` (with any modifiers: UTMALDG matches UTMALDG.2D)."""
    return len(re.findall(_SASS_OP.format(re.escape(op)), sass))


def judge_call(case: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    """A declared call's verdict: what was seen (TMA or not, by the same evidence as the suite),
    and `met` only when the user stated an expectation: "tma", "no-tma", "sass:OP" (the op in
    the SASS), "regs<=N" (ptxas's register count), "smem<=N" (the kernel's shared memory).
    Without one, `met` is None: nothing was expected, so nothing is "not met"."""
    expect = case.get("expect")
    status = result["status"]
    if status != "ok":
        verdict = {"unsupported": "unsupported", "timeout": "timeout", "crash": "crashed"}.get(status, "error")
        met = False if expect and status in ("crash", "compile_error") else None
        return _v(verdict, met, result.get("error") or status)
    counts = result.get("tma") or {}
    level = next((lv for lv in _DECIDING if lv in counts), None)
    if level is None:
        return _v("error", None, "no IR level to judge")
    emitted = counts[level] > 0
    verdict = "tma" if emitted else "no-tma"
    seen = f"{'TMA' if emitted else 'no TMA'} at {level} ({', '.join(f'{lv}={counts[lv]}' for lv in LEVELS if lv in counts)})"
    if not expect:
        return _v(verdict, None, seen)
    if not EXPECT_RE.match(expect):  # the schema refuses it; a hand-edited plan still gets a record
        return _v(verdict, None, f"{seen}; the expectation {expect!r} is none of tma, no-tma, sass:OP, "
                                 "regs<=N, smem<=N")
    if expect in ("tma", "no-tma"):
        return _v(verdict, emitted == (expect == "tma"), f"{seen}; expected {expect}")
    md = result.get("metadata") or {}
    if expect.startswith("sass:"):
        n = (result.get("expect_seen") or {}).get(expect)
        if n is None:
            return _v(verdict, None, f"{seen}; no SASS to look for {expect[5:]} in")
        return _v(verdict, n > 0, f"{seen}; {expect[5:]} x{n} in SASS; expected {expect}")
    what, bound = expect.split("<=")
    have = md.get("registers") if what == "regs" else md.get("shared_bytes")
    if have is None:
        return _v(verdict, None, f"{seen}; no {'register count' if what == 'regs' else 'shared-memory size'} "
                                 f"recorded for {expect}")
    return _v(verdict, have <= int(bound), f"{seen}; {what} {have}; expected {expect}")


def _judge_rejection(case: dict[str, Any], result: dict[str, Any], triton: str | None) -> dict[str, Any]:
    words = result.get("error") or ""
    rules = case.get("reject")
    if rules is None:  # a plan from before rejections were named: judged as it was then
        return _v("rejected", True, "compiler refused the broken invariant: " + words)
    mine = [r for r in rules if version_in(triton, r.get("triton", ""))]
    if not mine:
        return _v("error", False, f"compile error, but the case names no rejection for triton {triton}: {words}")
    for r in mine:
        if rejection_matches(r, result):
            return _v("rejected", True, "compiler refused the broken invariant as expected: " + words)
    want = "; ".join(_describe(r) for r in mine)
    return _v("error", False, f"compile error, but not the expected rejection ({want}): {words}")


def rejection_matches(rule: dict[str, Any], result: dict[str, Any]) -> bool:
    """The compile error is the one `rule` names: its pass (when named) failed, and its words match."""
    if rule.get("pass") and result.get("failing_pass") != rule["pass"]:
        return False
    return re.search(rule["message"], result.get("error") or "") is not None


def _describe(rule: dict[str, Any]) -> str:
    where = f"in {rule['pass']}, " if rule.get("pass") else ""
    return f"{where}/{rule['message']}/"


_CLAUSE = re.compile(r"^\s*(>=|<=|==|>|<)?\s*(\d+(?:\.\d+)*)\s*$")


def _vtuple(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", text.split("+")[0])[:3])


def version_in(version: str | None, spec: str) -> bool:
    """Whether a Triton version is in a spec such as ">=3.4,<3.7" or "3.3" (every 3.3.x); an
    empty spec holds every version. A spec that cannot be read holds none."""
    if not spec.strip():
        return True
    if not version:
        return False
    have = _vtuple(version)
    for clause in spec.split(","):
        m = _CLAUSE.match(clause)
        if not m:
            return False
        op, want = m.group(1) or "==", _vtuple(m.group(2))
        mine = have[:len(want)] if op == "==" else have
        ok = {"==": mine == want, ">=": have >= want, "<=": have[:len(want)] <= want, ">": have[:len(want)] > want,
              "<": have < want}[op]
        if not ok:
            return False
    return True


def _v(verdict: str, met: bool | None, reason: str) -> dict[str, Any]:
    return {"verdict": verdict, "met": met, "reason": reason.strip().splitlines()[0] if reason.strip() else verdict}
