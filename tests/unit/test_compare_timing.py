"""Robust time labels (reprokit.compare.timing) over synthetic samples drawn like the H100's:
a 5% change is SLOWER/FASTER, repeats are SAME, sub-2 us kernels never move, a change the
cycles do not confirm is AMBIGUOUS, and the labels are the same bytes on every run. Also the
labels through the grid over a real GPU bundle's bench.json, and the options' checks."""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import pytest

from reprokit.commands._common import add_time_args, timing_options
from reprokit.compare import boards, timing
from reprokit.compare.grid import as_result_set, compare, time_labels
from reprokit.errors import UsageError

ROOT = Path(__file__).resolve().parents[2]
GPU_36 = ROOT / "bundles" / "examples" / "h100-gpu-triton-3.6.0.tgz"


def _side(median_ms, n=120, jitter=0.004, rounds=3, seed=0, drift=0.0, mhz=None):
    """Samples like a kept benchmark's: gaussian jitter plus a few slow outliers, in `rounds`
    rounds whose medians drift by up to `drift`."""
    r = random.Random(seed)
    samples, medians, clocks = [], [], []
    for i in range(rounds):
        m = median_ms * (1 + drift * (i - 1))
        rs = [m * (1 + r.gauss(0, jitter)) + (m * 0.05 if r.random() < 0.03 else 0.0) for _ in range(n // rounds)]
        samples += rs
        medians.append(sorted(rs)[len(rs) // 2])
        clocks += [mhz] * len(rs) if mhz else []
    return timing.Side(tuple(samples), tuple(medians), tuple(clocks) if mhz else None)


def test_a_five_percent_slowdown_is_slower_and_faster_the_other_way():
    for seed in range(10):
        a, b = _side(0.021, seed=seed), _side(0.021 * 1.05, seed=100 + seed)
        assert timing.judge(a, b).label == timing.SLOWER
        assert timing.judge(b, a).label == timing.FASTER


def test_repeats_are_same_and_never_moved():
    labels = [timing.judge(_side(0.4, seed=s, drift=0.002), _side(0.4 * 1.004, seed=50 + s, drift=0.002)).label
              for s in range(20)]
    assert labels.count(timing.SAME) >= 19 and timing.SLOWER not in labels and timing.FASTER not in labels


def test_a_kernel_under_two_microseconds_never_moves_on_noise():
    # 1.6 us against 1.7 us (6%, what clocks and placement give a tiny kernel run to run): within
    # the 0.25 us floor, so never FASTER or SLOWER.
    for seed in range(10):
        j = timing.judge(_side(0.0016, jitter=0.03, seed=seed), _side(0.0017, jitter=0.03, seed=9 + seed))
        assert not j.moved and j.threshold >= 0.25e-3 / 0.0017


def test_wide_intervals_or_changes_near_the_threshold_are_ambiguous():
    a, b = _side(0.1, seed=1), _side(0.1 * 1.02, seed=2)
    assert timing.judge(a, b).label == timing.AMBIGUOUS
    noisy_a, noisy_b = _side(0.1, n=12, jitter=0.08, seed=3), _side(0.1 * 1.03, n=12, jitter=0.08, seed=4)
    assert timing.judge(noisy_a, noisy_b).label == timing.AMBIGUOUS


def test_a_side_whose_rounds_disagree_raises_the_threshold():
    a, b = _side(0.1, seed=1, drift=0.02), _side(0.1 * 1.03, seed=2)
    j = timing.judge(a, b)
    assert j.threshold == pytest.approx(a.spread) and j.threshold > 0.03 and not j.moved


def test_cycles_must_confirm_a_move():
    # The same kernel, 5% slower in time because its SM clock was 5% lower: the same cycles.
    a, b = _side(0.5, seed=1, mhz=1980.0), _side(0.5 * 1.05, seed=2, mhz=1980.0 / 1.05)
    j = timing.judge(a, b)
    assert j.label == timing.AMBIGUOUS and j.cycles == timing.SAME and "clocks differed" in j.reason
    # Slower in cycles too: confirmed.
    c = _side(0.5 * 1.05, seed=2, mhz=1980.0)
    j = timing.judge(a, c)
    assert j.label == timing.SLOWER and j.cycles == timing.SLOWER and j.reason == ""


def test_labels_are_the_same_bytes_every_time():
    a, b = _side(0.021, seed=1), _side(0.0215, seed=2)
    assert timing.judge(a, b).to_dict() == timing.judge(a, b).to_dict()


def test_bootstrap_interval_covers_the_ratio_and_narrows_with_samples():
    few = timing.ratio_interval(_side(0.1, n=12, seed=1), _side(0.1, n=12, seed=2))
    many = timing.ratio_interval(_side(0.1, n=900, seed=1), _side(0.1, n=900, seed=2))
    for ratio, lo, hi in (few, many):
        assert lo <= ratio <= hi
    assert many[2] - many[1] < (few[2] - few[1]) / 3


def test_raw_samples_drop_discards_and_read_clocks():
    raw = {"events": [[0.025, 0.040, 0.025]], "profiler": [[0.021, 0.035, 0.021]], "spin_cycles": 39_600,
           "spin_profiler_ms": [[0.020, 0.036, 0.020]], "discarded": [[1]]}
    s = timing.side_from_raw(raw, "profiler")
    assert s.samples == (0.021, 0.021) and s.clocks == pytest.approx((1980.0, 1980.0))
    assert timing.common_method(raw, {"events": [[0.02]], "profiler": []}) == "events"
    assert timing.judge_raw(raw, {"graph": [[0.02]]}) is None


def test_the_grid_labels_every_size_of_a_gpu_bundle_against_itself_same():
    grid = compare([GPU_36, GPU_36])
    labelled = [r for r in grid.rows if r.cells[1].time_labels]
    assert len(labelled) >= 6 and not grid.moved
    for r in labelled:
        assert r.cells[1].time_label == timing.SAME
        assert {s for s, _ in r.cells[1].time_labels} >= ({"4096x4096", "8192x8192"} if r.control == "P0"
                                                          else {"2048x2048x2048", "8192x8192x8192"})
    d = grid.to_dict()["cases"][0]["cells"][1]
    assert "time_labels" in d and "time_label" in d


def _slowed(rs, case: str, factor: float):
    """`rs` with `case`'s kernel times (not the clock probe's) multiplied by `factor`: a planted
    slowdown on the real bundle's samples."""
    for run in rs.bench_runs(case):
        kernel = run["raw"]["kernel"]
        for method in ("events", "profiler", "graph"):
            if kernel.get(method):
                kernel[method] = [[t * factor for t in r] for r in kernel[method]]
    return rs


def test_a_time_that_moved_moves_the_cell_and_only_then():
    # The CUDA C++ copy 4% slower than the committed H100 bundle's own samples: on one board a
    # move; between boards that nothing says are one (the cross-board tolerance of a copy is 5%),
    # not a move.
    base, slowed = as_result_set(GPU_36), _slowed(as_result_set(GPU_36), "cuda_tma.p0", 1.04)
    across = dict(time_labels(base, slowed, "cuda_tma.p0", board=boards.BOARD_UNKNOWN))
    assert across and all(j.label not in timing.MOVED and j.board == boards.BOARD_UNKNOWN for j in across.values())
    one_board = dict(time_labels(base, slowed, "cuda_tma.p0", board=boards.SAME_BOARD))
    assert one_board["4096x4096"].label == timing.SLOWER and one_board["4096x4096"].board is None
    # through the grid: the 3.0.0 and 3.6.0 examples were made on one board (one device call), so
    # its column is "same board", and a cell moves on time exactly when one of its sizes' labels moved
    grid = compare([GPU_36, ROOT / "bundles" / "examples" / "h100-gpu-triton-3.0.0.tgz"])
    assert grid.columns[1].board_relation == boards.SAME_BOARD
    for r in grid.rows:
        c = r.cells[1]
        assert ("time" in c.moved) == any(j.moved for _, j in c.time_labels)


def _args(**kw):
    p = argparse.ArgumentParser()
    add_time_args(p)
    return p.parse_args([f"--{k.replace('_', '-')}={v}" for k, v in kw.items()])


def test_thresholds_are_options_with_documented_defaults_and_checked():
    assert timing_options(_args()) == timing.DEFAULT
    assert timing_options(_args(time_threshold=0.05)).threshold == 0.05
    defaults = {"time_threshold": timing.DEFAULT.threshold, "time_min_us": timing.DEFAULT.min_abs_us,
                "time_confidence": timing.DEFAULT.confidence}
    for bad in ({"time_threshold": 1.5}, {"time_min_us": -1}, {"time_confidence": 1.0}):
        with pytest.raises(SystemExit):  # the parser's types refuse it at the door
            _args(**bad)
        with pytest.raises(UsageError):  # and so does the library, for callers without the parser
            timing_options(argparse.Namespace(**{**defaults, **bad}))
        with pytest.raises(UsageError):  # the options object itself, for callers without arguments
            timing.TimingOptions(**{k.replace("time_", "").replace("min_us", "min_abs_us"): v for k, v in bad.items()})
