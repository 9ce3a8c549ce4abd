"""Robust labels for one GPU time measured twice: SAME, FASTER, SLOWER or AMBIGUOUS.

Pure judging over raw samples (a contender's `raw` from reprokit.harness.bench, as a bundle's
bench.json keeps it); replay, diff, the grid and the report read their labels from here. Only
FASTER and SLOWER count as a moved time.

How a label is reached (nvbench's robust compare, with bootstrap intervals):

1. Each side's samples are the launches its benchmark kept (samples under the clock floor are
   dropped), by the one method both sides have: the profiler's where both have it, else the
   events'. Never one side's profiler against the other's events.
2. The ratio new/old of the medians gets a bootstrap interval (`confidence`, default 95%): each
   resample's median is drawn exactly from its order-statistic distribution (a Beta draw), so
   thousands of resamples cost microseconds, and a fixed seed gives the same bytes every run.
3. A change must exceed the threshold t: the largest of `threshold` (default 2%), each side's
   round-to-round spread (a side whose own rounds disagree by 3% cannot tell 2% apart), and
   `min_abs_us` (default 0.25 us) over the old median (a 1.5 us kernel must move by 17%: launch
   granularity). SLOWER: the whole interval is above 1 + t; FASTER: below 1 / (1 + t); SAME:
   the whole interval is within them; AMBIGUOUS otherwise.
4. Where both sides read the SM clock with every sample, the same judgement runs on cycles
   (time x clock). A FASTER or SLOWER that cycles do not confirm becomes AMBIGUOUS: the clocks,
   not the kernel, moved.
"""

from __future__ import annotations

import random
import statistics
from dataclasses import dataclass

from reprokit.errors import UsageError

SAME, FASTER, SLOWER, AMBIGUOUS = "SAME", "FASTER", "SLOWER", "AMBIGUOUS"
MOVED = (FASTER, SLOWER)


@dataclass(frozen=True)
class TimingOptions:
    """The thresholds of a time comparison (every one a command-line option; docs/compare.md)."""

    threshold: float = 0.02
    min_abs_us: float = 0.25
    confidence: float = 0.95
    resamples: int = 2000
    seed: int = 20261123

    def __post_init__(self) -> None:
        if not 0 <= self.threshold < 1:
            raise UsageError(f"--time-threshold must be a fraction in [0, 1), got {self.threshold:g}")
        if self.min_abs_us < 0:
            raise UsageError(f"--time-min-us must be 0 or more, got {self.min_abs_us:g}")
        if not 0.5 <= self.confidence < 1:
            raise UsageError(f"--time-confidence must be in [0.5, 1), got {self.confidence:g}")


DEFAULT = TimingOptions()


@dataclass(frozen=True)
class Side:
    """One measurement: its kept samples (ms) pooled over rounds, each round's median, and the SM
    clock (MHz) read with each kept sample where the benchmark read one."""

    samples: tuple
    round_medians: tuple = ()
    clocks: tuple | None = None

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def spread(self) -> float:
        rm = [m for m in self.round_medians if m]
        if len(rm) < 2:
            return 0.0
        return (max(rm) - min(rm)) / statistics.median(rm)

    def cycles(self):
        """Samples in thousands of SM cycles (ms x MHz), or None without a clock per sample."""
        if not self.clocks or len(self.clocks) != len(self.samples):
            return None
        return Side(tuple(t * f for t, f in zip(self.samples, self.clocks)))


@dataclass(frozen=True)
class Judgement:
    label: str
    method: str                 # the timing method both sides had
    ratio: float                # new median / old median
    low: float                  # the ratio's bootstrap interval
    high: float
    threshold: float            # t, as applied (see the module's docstring)
    cycles: str | None = None   # the label on cycles, where both sides read clocks
    reason: str = ""
    # Set where the two sides ran on different (or unknown) boards: reprokit.compare.boards
    # judged it against the cross-board tolerance; per_baseline is the change of the kernel's
    # ratio to its run's baseline.
    board: str | None = None
    per_baseline: float | None = None

    @property
    def moved(self) -> bool:
        return self.label in MOVED

    def to_dict(self) -> dict:
        return {"label": self.label, "method": self.method, "ratio": round(self.ratio, 5),
                "interval": [round(self.low, 5), round(self.high, 5)], "threshold": round(self.threshold, 5),
                "cycles": self.cycles, "reason": self.reason, "board": self.board,
                "per_baseline": self.per_baseline}


def side_from_raw(raw: dict, method: str) -> Side | None:
    """A Side from a contender's raw samples (bench.json) by `method` ("profiler" or "events"),
    without the samples the benchmark discarded; None when it has no samples by that method."""
    rounds = raw.get(method) or []
    if not rounds or not any(rounds):
        return None
    discarded = raw.get("discarded") or [[] for _ in rounds]
    spins_key = "spin_profiler_ms" if method == "profiler" and raw.get("spin_profiler_ms") else "spin_event_ms"
    spins = raw.get(spins_key) or []
    cycles = raw.get("spin_cycles")
    samples, clocks, medians = [], [], []
    for i, r in enumerate(rounds):
        drop = set(discarded[i]) if i < len(discarded) else set()
        kept = [x for j, x in enumerate(r) if j not in drop]
        if kept:
            medians.append(statistics.median(kept))
        samples += kept
        if cycles and i < len(spins) and len(spins[i]) == len(r):
            clocks += [cycles / (s * 1e3) for j, s in enumerate(spins[i]) if j not in drop and s > 0]
    if not samples:
        return None
    return Side(tuple(samples), tuple(medians), tuple(clocks) if len(clocks) == len(samples) else None)


def common_method(a: dict, b: dict) -> str | None:
    for m in ("profiler", "events"):
        if (a.get(m) and any(a[m])) and (b.get(m) and any(b[m])):
            return m
    return None


def judge_raw(old: dict, new: dict, opts: TimingOptions = DEFAULT) -> Judgement | None:
    """The label of a contender's time from its raw samples on each side, or None when they share
    no timing method."""
    method = common_method(old, new)
    if method is None:
        return None
    a, b = side_from_raw(old, method), side_from_raw(new, method)
    if a is None or b is None:
        return None
    return judge(a, b, opts, method)


def _median_draws(xs: list, rng: random.Random, n_draws: int) -> list:
    """Bootstrap medians of sorted `xs`, drawn exactly: the k-th smallest of n uniform picks among
    n indices is ceil(n U) with U the k-th order statistic of n uniforms, a Beta(k, n - k + 1)."""
    n = len(xs)
    if n == 1:
        return [xs[0]] * n_draws
    out = []
    k = (n + 1) // 2
    for _ in range(n_draws):
        u = rng.betavariate(k, n - k + 1)
        lo = xs[min(n - 1, int(u * n))]
        if n % 2:
            out.append(lo)
        else:  # the (k+1)-th is the smallest of the n - k picks above the k-th
            u2 = u + (1 - u) * rng.betavariate(1, n - k)
            out.append((lo + xs[min(n - 1, int(u2 * n))]) / 2)
    return out


def ratio_interval(a: Side, b: Side, opts: TimingOptions = DEFAULT) -> tuple:
    """(ratio of medians b/a, low, high): the bootstrap interval at opts.confidence."""
    rng = random.Random(opts.seed)
    da = _median_draws(sorted(a.samples), rng, opts.resamples)
    db = _median_draws(sorted(b.samples), rng, opts.resamples)
    ratios = sorted(y / x for x, y in zip(da, db) if x > 0)
    tail = (1 - opts.confidence) / 2
    lo = ratios[int(tail * (len(ratios) - 1))]
    hi = ratios[round((1 - tail) * (len(ratios) - 1))]
    return b.median / a.median, lo, hi


def _label(lo: float, hi: float, t: float) -> str:
    up, down = 1 + t, 1 / (1 + t)
    if lo > up:
        return SLOWER
    if hi < down:
        return FASTER
    if lo >= down and hi <= up:
        return SAME
    return AMBIGUOUS


def judge(a: Side, b: Side, opts: TimingOptions = DEFAULT, method: str = "profiler") -> Judgement:
    """The label of b (new) against a (old); see the module's docstring."""
    if not a.samples or not b.samples or a.median <= 0:
        raise ValueError("a time comparison needs samples on both sides")
    t = max(opts.threshold, a.spread, b.spread, opts.min_abs_us * 1e-3 / a.median)
    ratio, lo, hi = ratio_interval(a, b, opts)
    label = _label(lo, hi, t)
    cycles, reason = None, ""
    ca, cb = a.cycles(), b.cycles()
    if ca is not None and cb is not None:
        _, clo, chi = ratio_interval(ca, cb, opts)
        cycles = _label(clo, chi, t)
        if label in MOVED and cycles != label:
            reason = f"{label} in time but {cycles} in cycles: the SM clocks differed"
            label = AMBIGUOUS
    elif label in MOVED:
        reason = "not confirmed in cycles: a side has no clock reading per sample"
    if not reason and label == AMBIGUOUS:
        reason = f"the interval [{lo:.4f}, {hi:.4f}] straddles a threshold (+-{100 * t:.2f}%)"
    return Judgement(label, method, ratio, lo, hi, t, cycles, reason)


__all__ = [
    "AMBIGUOUS",
    "DEFAULT",
    "FASTER",
    "MOVED",
    "SAME",
    "SLOWER",
    "Judgement",
    "Side",
    "TimingOptions",
    "common_method",
    "judge",
    "judge_raw",
    "ratio_interval",
    "side_from_raw",
]
