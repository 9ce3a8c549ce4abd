"""Two result sets side by side: may they be compared at all (same GPU profile), and the unified
diff of one case's normalised IR at one level."""

from __future__ import annotations

import difflib

from reprokit.compare.normalise import LEVELS
from reprokit.compare.sources import ResultSet
from reprokit.errors import UsageError


def profile_problem(a: ResultSet, b: ResultSet) -> str | None:
    """Why a and b are not comparable (different GPU profiles), or None."""
    if a.profile != b.profile:
        return (f"{a.label} is for GPU profile {a.profile}, {b.label} for {b.profile}: their IR targets "
                "different architectures (--any-profile compares them anyway)")
    return None


def check_case(case: str, *sets: ResultSet) -> None:
    if not any(rs.case(case) for rs in sets):
        known = sorted({c.id for rs in sets for c in rs.cases})
        raise UsageError(f"no case {case!r} in {' or '.join(rs.label for rs in sets)}; "
                         f"cases: {', '.join(known[:8])}{', ...' if len(known) > 8 else ''}")


def check_level(level: str) -> None:
    if level not in LEVELS:
        raise UsageError(f"unknown IR level {level!r}; one of {', '.join(LEVELS)}")


def unified(a: ResultSet, b: ResultSet, case: str, level: str, *, context: int = 3) -> str:
    """The unified diff of `case`'s normalised IR at `level` from a to b; '' when equal. A side
    without that IR (the case did not compile there) diffs as empty."""
    check_case(case, a, b)
    check_level(level)
    ta = a.normalised(case, level) or ""
    tb = b.normalised(case, level) or ""
    if ta == tb:
        return ""
    name = f"{case}/kernel.{level}"
    return "".join(difflib.unified_diff(ta.splitlines(keepends=True), tb.splitlines(keepends=True),
                                        fromfile=f"a/{a.label}/{name}", tofile=f"b/{b.label}/{name}", n=context))
