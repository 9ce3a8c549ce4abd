"""The adaptive benchmark's logic on the CPU: a round stops on its noise target after its minimum
samples and time, gives up at its limit and says so, discards samples taken under the clock
floor; the profiler's records give per-launch times and clock readings; the summary drops the
discarded samples from every method. The GPU itself is the one thing stood in for: a stream
whose launches take synthetic times (the real loop, events and spins run over it)."""

from __future__ import annotations

import random
import types

import pytest

from reprokit.harness import bench, stats


class _GPU:
    """A CUDA stream as the benchmark sees it: events stamp the stream's time, a launch takes a
    time drawn from `draw`, a spin takes its cycles at the clock `mhz()` says."""

    def __init__(self, draw, mhz):
        self.t_ms, self.draw, self.mhz = 0.0, draw, mhz

    def launch(self):
        self.t_ms += 0.003 + self.draw()  # the launch's start after the previous work, then the kernel

    def spin(self, cycles):
        self.t_ms += 0.002 + cycles / (self.mhz() * 1e3)


class _Torch:
    def __init__(self, gpu):
        class Event:
            def __init__(self, enable_timing=False):
                self.t = None

            def record(self):
                self.t = gpu.t_ms

            def synchronize(self):
                pass

            def elapsed_time(self, other):
                return other.t - self.t

        class cuda:
            pass

        cuda.Event = Event
        self.cuda = cuda


def _round(draw, mhz=lambda: 1980.0, floor=1485.0, min_s=0.01, limit_s=0.3):
    gpu = _GPU(draw, mhz)
    torch = _Torch(gpu)
    return bench.measure_round(torch, gpu.launch, lambda: None, gpu.spin, 40_000, floor, min_s, limit_s)


def test_a_quiet_kernel_stops_at_its_noise_target():
    r = random.Random(7)
    res = _round(lambda: 0.100 * (1 + r.gauss(0, 0.003)))
    assert res["reached"] and res["noise"] <= bench.NOISE_TARGET
    assert len(res["events"]) >= bench.MIN_SAMPLES and res["discarded"] == []
    assert res["elapsed_s"] < 0.3


def test_the_sweeps_budget_stops_a_round_sooner_on_its_own_looser_target(monkeypatch):
    """A GPU sweep's point (bench.SWEEP: +-1% after 5 samples) stops a round well before the
    suite's (+-0.5% after 10) on the same kernel, and each says it reached its own target. The
    round's wall clock is the stream's own time, as on a GPU the host waits for it: on the
    host's clock the synthetic launches' count would follow the machine's load."""
    def run(budget):
        r = random.Random(11)
        gpu = _GPU(lambda: 0.100 * (1 + r.gauss(0, 0.01)), lambda: 1980.0)
        monkeypatch.setattr(bench, "time", types.SimpleNamespace(perf_counter=lambda: gpu.t_ms / 1e3))
        return bench.measure_round(_Torch(gpu), gpu.launch, lambda: None, gpu.spin, 40_000, 1485.0,
                                   budget.min_time_s / budget.rounds, 5.0, 0.0, budget.noise_target,
                                   budget.min_samples)

    sweep, suite = run(bench.SWEEP), run(bench.SUITE)
    assert sweep["reached"] and suite["reached"]
    assert sweep["noise"] <= bench.SWEEP.noise_target and suite["noise"] <= bench.SUITE.noise_target
    assert bench.SWEEP.min_samples <= len(sweep["events"]) < len(suite["events"]) / 2
    assert not bench.SWEEP.profiler and not bench.SWEEP.graphs and bench.SWEEP.rounds >= 2


def test_a_noisy_kernel_gives_up_at_the_limit_and_says_so():
    r = random.Random(7)
    res = _round(lambda: 0.100 * (1 + abs(r.gauss(0, 0.5))), limit_s=0.05)
    assert not res["reached"] and res["noise"] > bench.NOISE_TARGET
    assert 0.05 <= res["elapsed_s"] < 0.5


def test_samples_under_the_clock_floor_are_discarded_and_counted():
    r = random.Random(3)
    clocks = iter([1980.0, 1100.0] * 10_000)  # every other reading under 75% of 1980
    res = _round(lambda: 0.100 * (1 + r.gauss(0, 0.002)), mhz=lambda: next(clocks))
    n = len(res["events"])
    assert res["discarded"] == list(range(1, n, 2))
    assert res["reached"]  # on the kept samples


def _records(n, flush=True, spin_ns=20_000):
    out, t = [], 0
    for i in range(n):
        if flush:
            out.append(("flush", t, t + 85_000))
            t += 86_000
        out.append(("copy", t, t + 21_000 + i))
        t += 22_000
        out.append(("sleep", t, t + spin_ns))
        t += spin_ns + 1_000
    return out


def test_profiler_records_give_launch_times_and_the_spin_after_each():
    (times, spins), (times2, _) = stats.split_launches(_records(5), {"flush", "sleep"}, [3, 2], spins={"sleep"})
    assert times == pytest.approx([0.021, 0.021001, 0.021002]) and times2 == pytest.approx([0.021003, 0.021004])
    assert spins == pytest.approx([0.02] * 3)
    # With no flush, the spin alone separates launches.
    ((times, spins),) = stats.split_launches(_records(4, flush=False), {"sleep"}, [4], spins={"sleep"})
    assert len(times) == 4 and spins == pytest.approx([0.02] * 4)
    with pytest.raises(ValueError, match="not followed by its clock-reading spin"):
        stats.split_launches(_records(2)[:-1], {"flush", "sleep"}, [2], spins={"sleep"})


def test_the_median_noise_shrinks_as_samples_grow():
    r = random.Random(1)
    few = [1 + r.gauss(0, 0.01) for _ in range(10)]
    many = [1 + r.gauss(0, 0.01) for _ in range(400)]
    assert stats.median_noise(many) < 0.002 < stats.median_noise(few)
    lo, hi = stats.median_interval(many)
    assert lo < stats.statistics.median(many) < hi


def test_the_summary_drops_discarded_samples_from_every_method_and_reads_clocks():
    raw = {"events": [[0.0245, 0.0400, 0.0247], [0.0246, 0.0246, 0.0249], [0.0244, 0.0247, 0.0246]],
           "profiler": [[0.0211, 0.0350, 0.0212], [0.0211, 0.0211, 0.0213], [0.0209, 0.0211, 0.0211]],
           "graph": [[0.0313, 0.0314]], "spin_cycles": 39_600,
           "spin_event_ms": [[0.0210, 0.0400, 0.0210]] * 3, "spin_profiler_ms": [[0.0200, 0.0360, 0.0200]] * 3,
           "discarded": [[1], [], []], "reached": [True, True, False], "noise": [0.004, 0.003, 0.006],
           "elapsed_s": [0.07, 0.07, 1.0]}
    method = {"clock_floor": 0.75, "reference_clock_mhz": 1980.0, "flush_l2": True, "idle_factor": 0.0}
    s = bench.summarize_contender(raw, None, method)
    assert s["profiler"]["n"] == 8 and s["events"]["n"] == 8  # the slow, low-clock sample is gone
    assert s["round_medians_ms"] == pytest.approx([0.02115, 0.0211, 0.0211])
    c = s["clock"]
    assert c["discarded"] == 1 and c["flagged"] and c["floor_mhz"] == pytest.approx(1485.0)
    assert c["median_mhz"] == pytest.approx(1980.0) and "profiler" in c["source"]
    st = s["stopping"]
    assert st["reached"] is False and st["rounds_reached"] == 2 and st["samples"] == [3, 3, 3]
    assert "L2 flushed" in s["method"] and "idle" not in s["method"]


def test_when_every_sample_is_under_the_floor_they_are_kept_and_flagged():
    raw = {"events": [[0.03, 0.031]], "profiler": [[0.025, 0.026]], "graph": [], "spin_cycles": 39_600,
           "spin_profiler_ms": [[0.04, 0.04]], "discarded": [[0, 1]]}
    s = bench.summarize_contender(raw, None, {"clock_floor": 0.75, "reference_clock_mhz": 1980.0})
    assert s["profiler"]["n"] == 2 and s["clock"]["all_below_floor"] and s["clock"]["discarded"] == 2


def test_the_adaptive_h100_bundle_holds_what_the_docs_say():
    """bundles/examples/h100-gpu-triton-3.6.0-adaptive.tgz (docs/performance.md): every
    contender reached its noise target with a clock reading per sample, at most 1% discarded, the
    flush and idle gap follow launch.bench_policy, and its raw samples agree with its summaries."""
    from pathlib import Path

    from reprokit.bundle.reader import open_bundle
    from reprokit.harness.kinds import launch

    b = open_bundle(Path(__file__).resolve().parents[2] / "bundles" / "examples" / "h100-gpu-triton-3.6.0-adaptive.tgz")
    rows = [(c, r) for c in b.results["cases"] for r in (c.get("gpu") or {}).get("bench") or [] if "kernel" in r]
    assert len(rows) == 17
    for case, row in rows:
        kind = "gemm" if "K" in row["size"] else "copy"
        assert {k: row["method"][k] for k in ("flush_l2", "idle_factor")} == \
            {"flush_l2": True, "idle_factor": launch.bench_policy(kind, row["size"])["idle_factor"]}
        for who in ("kernel", "baseline"):
            k = row[who]
            assert k["headline"] == "profiler" and k["stopping"]["reached"]
            # A sample whose clock fell under the floor is discarded, counted and flagged; few are.
            clock = k["clock"]
            assert clock["flagged"] == (clock["discarded"] > 0) and not clock["all_below_floor"]
            assert clock["discarded"] <= 0.01 * sum(k["stopping"]["samples"])
            assert clock["min_mhz"] >= clock["floor_mhz"]  # what is kept is above the floor
            assert all(n >= bench.MIN_SAMPLES for n in k["stopping"]["samples"])
            assert 1500 < k["clock"]["median_mhz"] < 2200
    import json

    runs = json.loads(b.read(rows[0][0]["artifacts"]["bench"]))["runs"]
    raw = runs[0]["raw"]["kernel"]
    again = bench.summarize_contender(raw, None, rows[0][1]["method"])
    assert again["median_ms"] == rows[0][1]["kernel"]["median_ms"]


def test_a_round_whose_clock_stands_out_is_the_one_measured_again():
    # Rounds' SM clocks as read on the H100 (a 2048^3 GEMM whose middle round ran 2% slower).
    assert bench.clock_outlier([1939.0, 1897.0, 1951.0]) == 1
    assert bench.clock_outlier([1770.0, 1965.0, 1979.0]) == 0
    assert bench.clock_outlier([1890.0, 1893.0, 1895.0]) is None  # within CLOCK_MATCH (0.26%)
    assert bench.clock_outlier([1900.0, None, 1990.0]) in (0, 2)  # a round with no reading is never picked
    assert bench.clock_outlier([1900.0]) is None


def test_retakes_are_picked_per_contender_from_their_rounds_clocks():
    rounds = {"kernel": [1939.0, 1897.0, 1951.0], "baseline": [1965.0, 1972.0, 1979.0], "alone": [1900.0]}
    assert bench.pick_retakes(rounds, lambda name, r: r) == {"kernel": 1}
    assert bench.pick_retakes(rounds, lambda name, r: r, tol=0.005) == {"kernel": 1, "baseline": 0}


def test_a_round_clock_is_the_median_of_its_spins():
    # 40000 cycles in 20.2 us is 1980 MHz; one slow reading does not move the median.
    assert bench.round_mhz([0.0202, 0.0202, 0.0300], 40_000) == pytest.approx(1980.2, rel=1e-3)
    assert bench.round_mhz([0.0222, 0.0222], 40_000, overhead_ms=0.002) == pytest.approx(1980.2, rel=1e-3)
    assert bench.round_mhz([], 40_000) is None
