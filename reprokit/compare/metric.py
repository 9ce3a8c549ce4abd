"""What a bisection follows: one fact of a case's compile, read from its record (and its IR).

    verdict           the case's status and verdict (the default)
    regs              registers per thread (metadata.registers)
    smem              shared memory per block, bytes (metadata.shared_bytes)
    spills            spill stores + spill loads
    tma:LEVEL         TMA data-movement ops at LEVEL (ttir, ttgir, llir, ptx, sass)
    op:NAME@LEVEL     how many times the op NAME appears in the normalised IR at LEVEL

A numeric metric with a threshold counts as changed only when it moved by more than the
threshold from the first release's value. Everything here is what a compile shows: bisect stays
compile-only, so GPU times are not a metric to bisect on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from reprokit.compare.normalise import LEVELS, ops
from reprokit.errors import UsageError
from reprokit.records import CaseRecord

KINDS = ("verdict", "regs", "smem", "spills", "tma", "op")
_SPEC = re.compile(r"^(?:(verdict|regs|smem|spills)|tma:(\w+)|op:(.+)@(\w+))$")

# read_ir(level) -> the case's normalised IR text at that level, or None
ReadIr = Callable[[str], "str | None"]


@dataclass(frozen=True)
class Metric:
    kind: str
    level: str | None = None
    op: str | None = None
    threshold: float = 0.0

    def __post_init__(self) -> None:
        # parse_metric builds only whole metrics; a caller that builds one by hand gets the same
        # promise, so value() never looks up a level or an op of None
        if self.kind not in KINDS:
            raise ValueError(f"metric kind {self.kind!r} is not one of {', '.join(KINDS)}")
        if self.kind in ("tma", "op") and self.level is None:
            raise ValueError(f"a {self.kind} metric names its IR level")
        if self.kind == "op" and self.op is None:
            raise ValueError("an op metric names its op")

    @property
    def label(self) -> str:
        if self.kind == "tma":
            return f"tma:{self.level}"
        if self.kind == "op":
            return f"op:{self.op}@{self.level}"
        return self.kind

    @property
    def needs_ir(self) -> bool:
        return self.kind == "op"

    def value(self, record: CaseRecord, read_ir: ReadIr | None = None):
        """The metric of one case record: (status, verdict) for `verdict`, else a number, or None
        where the compile produced none (a rejected or unsupported case has no registers)."""
        if self.kind == "verdict":
            return record.outcome()
        if record.status != "ok":
            return None
        meta = record.metadata
        if self.kind == "regs":
            return meta.get("registers")
        if self.kind == "smem":
            return meta.get("shared_bytes")
        if self.kind == "spills":
            parts = [meta.get("spill_stores"), meta.get("spill_loads")]
            return None if all(p is None for p in parts) else sum(p or 0 for p in parts)
        level, op = self.level, self.op
        assert level is not None  # __post_init__: tma and op metrics name their level
        if self.kind == "tma":
            return record.tma.get(level)

        assert op is not None  # __post_init__: an op metric names its op
        text = read_ir(level) if read_ir else None
        return None if text is None else ops(level, text).get(op, 0)

    def same(self, first, other) -> bool:
        """Whether `other` counts as unchanged from the first release's value."""
        if self.kind == "verdict" or first is None or other is None:
            return first == other
        return abs(other - first) <= self.threshold

    def text(self, value) -> str:
        if self.kind == "verdict":
            return "/".join(str(v) for v in value)
        return f"{self.label} {'-' if value is None else value}"


def parse_metric(text: str, threshold: float | None = None) -> Metric:
    """A Metric from `--metric` (and `--threshold`); UsageError naming what is wrong."""
    m = _SPEC.match((text or "").strip())
    if not m:
        raise UsageError(f"--metric {text!r}: expected verdict, regs, smem, spills, tma:LEVEL or op:NAME@LEVEL")
    simple, tma_level, op, op_level = m.groups()
    level = tma_level or op_level
    if level is not None and level not in LEVELS:
        raise UsageError(f"--metric {text!r}: unknown IR level {level!r}; one of {', '.join(LEVELS)}")
    kind = simple or ("tma" if tma_level else "op")
    if threshold is not None:
        if kind == "verdict":
            raise UsageError("--threshold applies to a numeric --metric (regs, smem, spills, tma:LEVEL, op:NAME@LEVEL)")
        if threshold < 0:
            raise UsageError(f"--threshold must be 0 or more, got {threshold:g}")
    return Metric(kind, level, op.strip() if op else None, float(threshold or 0))
