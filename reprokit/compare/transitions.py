"""Transitions across releases: given a case's outcome on each release, oldest first, every
place where it changed: the case starting or stopping to run (an API a release lacks), or its
metric moving beyond the threshold. A metric where more is worse (registers, shared memory,
spills) reads as regressed, fixed (back to a value it had before) or improved; others as changed.
`bisect --scan` answers with them, and `report` shows them for bundles of several releases.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from reprokit.compare.metric import Metric

# Metrics where more is worse: a rise is a regression, a return to an earlier value its fix.
WORSE_UP = ("regs", "smem", "spills")


class Point(Protocol):
    @property
    def version(self) -> str: ...

    @property
    def value(self) -> Any: ...

    @property
    def runs(self) -> bool: ...


@dataclass(frozen=True)
class Transition:
    version: str               # the release where it changed
    before: str                # the release before it
    kind: str                  # regressed, fixed, improved, changed, unsupported, supported
    old: object
    new: object

    def text(self, metric: Metric) -> str:
        if self.kind == "unsupported":
            return f"unsupported from {self.version}"
        if self.kind == "supported":
            return f"runs from {self.version} ({metric.text(self.new)})"
        if metric.kind == "verdict":
            return f"{self.kind} in {self.version} ({metric.text(self.old)} -> {metric.text(self.new)})"
        return f"{self.kind} in {self.version} ({metric.label} {self.old} -> {self.new})"


def transitions(points: Iterable[Point], metric: Metric) -> tuple:
    """Each change between consecutive releases: the case starting or stopping to run, or its
    metric moving by more than the threshold. A numeric metric where more is worse reads as
    regressed / fixed (back to a value it had before) / improved."""
    out: list[Transition] = []
    prev = None
    history: list = []
    for p in points:
        if prev is not None:
            if prev.runs != p.runs:
                out.append(Transition(p.version, prev.version, "supported" if p.runs else "unsupported",
                                      prev.value, p.value))
            elif p.runs and not metric.same(prev.value, p.value):
                kind = "changed"
                if metric.kind in WORSE_UP and prev.value is not None and p.value is not None:
                    kind = "regressed" if p.value > prev.value else (
                        "fixed" if any(h is not None and metric.same(h, p.value) for h in history) else "improved")
                out.append(Transition(p.version, prev.version, kind, prev.value, p.value))
        if p.runs:
            history.append(p.value)
        prev = p
    return tuple(out)
