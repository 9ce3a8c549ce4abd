"""Timing GPU work the way a maintainer can trust, in as little time as the noise allows.

Per contender (a zero-argument callable that launches asynchronously), three independent rounds,
contenders interleaved round by round. A round takes samples in batches until its noise target
is met (at least MIN_SAMPLES kept samples and MIN_TIME_S / ROUNDS of wall time, then the median's
95% interval no wider than +-NOISE_TARGET of it) or its share of TIME_LIMIT_S runs out, which is
recorded (`reached: false`). A round whose SM clock stands out from the others' is measured
again (pick_retakes; the replaced round is kept). CUDA events around each launch decide when to stop (they can be read
while the round runs); the profiler's kernel records (CUPTI through torch.profiler) time the same
launches and give the headline. Every launch is followed by a GPU-side clock reading: a
one-thread spin of a known number of SM cycles (torch.cuda._sleep), timed by the profiler (else
by events), gives the SM clock right after the launch; samples taken below CLOCK_FLOOR of the
GPU's default SM clock are discarded, counted and flagged. The same spin is the idle gap that
keeps a GEMM under the board's power cap, where the caller asks for one; the L2 is flushed
before each launch where the caller asks for it (the policy, and what it was measured to change,
is in launch.py and docs/gpu.md). CUDA-graph replays give a third figure, cheaply. NVML is
sampled around it all. Every raw sample (times, clocks, discards, per round) is returned.

It never changes the GPU's clocks or power settings: it measures the card as it finds it and
says how it found it.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from reprokit.harness import nvml, stats

FLUSH_BYTES = 256 << 20   # 5x the H100's 50 MB L2 (tritonbench flushes 256 MB too)
ROUNDS = 3                # independent rounds per contender: their medians give the spread
NOISE_TARGET = 0.005      # a round stops once its median's 95% interval is within +-0.5% of it
MIN_SAMPLES = 10          # ... with at least this many kept samples
MIN_TIME_S = 0.2          # ... and this much wall time spent on the contender, over its rounds
TIME_LIMIT_S = 3.0        # a contender gives up after this much, over its rounds (recorded)
MAX_BATCH = 200           # launches queued between two reads of the events
WARMUP_MS = 30.0          # GPU time per contender after the first, untimed calls
CLOCK_FLOOR = 0.75        # samples below this share of the default SM clock are discarded
SPIN_MIN_US = 20.0        # the clock-reading spin after every launch, at the least
GRAPH_REPLAYS = 3
GRAPH_TARGET_MS = 10.0    # GPU time per replay of a graph
# Where the caller asks for an idle gap, the spin after each launch lasts IDLE_FACTOR times the
# launch's time. Run back to back, an 8192^3 fp16 GEMM holds the H100 SXM at its 700 W cap: SM
# clocks swing between 1245 and 1545 MHz and round medians spread 3-7%; with 3x idle the SM clock
# stayed at 1980 MHz (measured on the lab H100); 1x was not enough.
IDLE_FACTOR = 3.0
# The rounds are meant to differ only by noise. A round whose median SM clock (read from the
# profiler's spin times) is more than CLOCK_MATCH away from the others' was taken at another clock
# state: it is measured again, at most MAX_RETAKES times per contender, and the replaced round is
# kept under `retaken`. Measured on the H100: boost moved the SM clock by 2-3% between rounds
# (1897 against 1939-1951 MHz; a first round at 1770 MHz after a graph replay at the power cap,
# against 1965-1979), a compute-bound GEMM's time with it, and 6-9 of 34 spreads were over 0.5%.
# With 0.75% and 2 retakes, 2-4 of 34 stayed over 0.5% in three suite runs (+2 s of rounds); with
# 0.5% and 3 retakes, 4 of 34 in each of three, many at the limit: the board keeps moving.
CLOCK_MATCH = 0.0075
MAX_RETAKES = 2
# Why Nsight Compute reads more than the headline, as each bundle records it (tests/gpu measure it).


@dataclass(frozen=True)
class Budget:
    """How much a benchmark spends: rounds, the noise target and the floor of samples and time
    before a round may stop, the time limit, the warm-up, and which methods run besides the
    events (the profiler, whose first session costs a process 4-6 s of CUPTI start-up, and the
    graphs). The suite's is SUITE; a GPU sweep times hundreds of configs and takes SWEEP."""

    rounds: int = ROUNDS
    noise_target: float = NOISE_TARGET
    min_samples: int = MIN_SAMPLES
    min_time_s: float = MIN_TIME_S
    time_limit_s: float = TIME_LIMIT_S
    warmup_ms: float = WARMUP_MS
    profiler: bool = True
    graphs: bool = True
    retakes: int = MAX_RETAKES    # rounds measured again per contender (needs the profiler's clocks)

    def to_dict(self) -> dict:
        return {"rounds": self.rounds, "noise_target": self.noise_target, "min_samples": self.min_samples,
                "min_time_s": self.min_time_s, "time_limit_s": self.time_limit_s, "warmup_ms": self.warmup_ms,
                "profiler": self.profiler, "graphs": self.graphs, "retakes": self.retakes}


SUITE = Budget()
# A sweep point: two rounds (their medians still give a spread), each stopping at +-1% noise
# after 5 kept samples; events only, so that no process pays CUPTI's start-up; a contender gives
# up after 0.4 s (recorded: `reached: false`). On the H100 a round of the 8192^3 GEMM (2 ms, idle
# 3x) stops after 15-22 samples; three rounds made a point hold the GPU 2 s, too long for the
# 324 launchable configs of gemm-configs.
SWEEP = Budget(rounds=2, noise_target=0.01, min_samples=5, min_time_s=0.02, time_limit_s=0.4, warmup_ms=5.0,
               profiler=False, graphs=False, retakes=0)

VS_NCU = ("ncu's gpu__time_duration counts a fixed part of each launch that the profiler's kernel record "
          "leaves out: on the H100 an empty kernel reads 2.16 us under ncu and 0.90 us under the profiler "
          "(+1.26 us); with that added the headline is within 2% of ncu from 21 us to 1.6 ms")


def _flusher(torch):
    """Empty the L2 before a launch by reading 256 MB through it. Reading, not zeroing as
    triton's do_bench and tritonbench do: a zeroing kernel leaves the L2 full of dirty lines,
    and the timed kernel then pays for writing them back (seen on the H100: 3-12 us more than
    ncu's gpu__time_duration, whose cache control leaves the L2 clean)."""
    buf = torch.ones(FLUSH_BYTES // 4, dtype=torch.float32, device="cuda")
    acc = torch.empty((), dtype=torch.float32, device="cuda")

    def flush():
        torch.sum(buf, 0, out=acc)

    return flush


def _no_flush():
    return None


class _Spinner:
    """A one-thread spin kernel of a known number of SM cycles (torch.cuda._sleep). A spinning
    thread draws next to no power, so the board cools as if idle; and the stream stays busy while
    the host queues the next launches, so no host delay is ever timed. Its cycles over its time
    on the GPU are the SM clock at that moment."""

    def __init__(self, torch):
        self.torch = torch
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(1000)
        s.record()
        torch.cuda._sleep(2_000_000)
        e.record()
        e.synchronize()
        self.cycles_per_us = 2_000_000 / max(s.elapsed_time(e) * 1e3, 1e-3)
        # Events around a spin also count its launch's start: measured here on short spins, and
        # taken off the event time of each spin before it is read as a clock.
        short = self.cycles_for(SPIN_MIN_US)
        times = []
        for _ in range(20):
            s.record()
            torch.cuda._sleep(short)
            e.record()
            e.synchronize()
            times.append(s.elapsed_time(e))
        self.event_overhead_ms = max(0.0, sorted(times)[10] - SPIN_MIN_US / 1e3)

    def cycles_for(self, us: float) -> int:
        return max(1, int(us * self.cycles_per_us))

    def __call__(self, cycles: int):
        self.torch.cuda._sleep(cycles)


def _estimate_ms(torch, fn, flush, spin, warmup_ms: float = WARMUP_MS) -> float:
    """Warm-up, and the time per call it suggests (the median of the timed calls). The first
    calls are not timed: a library's first call at a new size (cuBLAS picking its kernel, a
    workspace allocation) can take milliseconds."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times: list[float] = []
    while len(times) < 5 or (sum(times) < warmup_ms and len(times) < 500):
        flush()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def time_batch(torch, fn, flush, spin, n: int, spin_cycles: int) -> tuple:
    """`n` samples: per launch the L2 flushed (where `flush` does), events right before and after
    the launch, then events around a spin of `spin_cycles`. Returns (launch ms, spin ms) lists.
    The spin keeps the stream busy while the host queues the next launch, so a launch's host
    overhead is not timed."""
    ev = [[torch.cuda.Event(enable_timing=True) for _ in range(4)] for _ in range(n)]
    for s, e, c0, c1 in ev:
        flush()
        s.record()
        fn()
        e.record()
        c0.record()
        spin(spin_cycles)
        c1.record()
    ev[-1][3].synchronize()
    return [s.elapsed_time(e) for s, e, _, _ in ev], [c0.elapsed_time(c1) for _, _, c0, c1 in ev]


def measure_round(torch, fn, flush, spin, spin_cycles: int, floor_mhz, min_s: float, limit_s: float,
                  overhead_ms: float = 0.0, noise_target: float = NOISE_TARGET,
                  min_samples: int = MIN_SAMPLES) -> dict:
    """One round, stopped by the events: samples until at least MIN_SAMPLES kept ones and `min_s`
    of wall time, then until the median's 95% interval is within +-`noise_target`, or `limit_s`.
    A sample whose clock reading (cycles over the spin's event time) is under `floor_mhz` is
    discarded. The event time of a spin also counts its launch's start (`overhead_ms`, measured
    by the spinner, is taken off); where the profiler ran, its exact spin times decide the
    discards afterwards (compare)."""
    events, spins, t0 = [], [], time.perf_counter()
    batch = min_samples
    while True:
        e, s = time_batch(torch, fn, flush, spin, batch, spin_cycles)
        events += e
        spins += s
        kept = [t for t, sp in zip(events, spins) if not _below(spin_cycles, sp - overhead_ms, floor_mhz)]
        elapsed = time.perf_counter() - t0
        noise = stats.median_noise(kept) if len(kept) >= 2 else None
        enough = len(kept) >= min_samples and elapsed >= min_s
        if enough and noise is not None and noise <= noise_target:
            reached = True
            break
        if elapsed >= limit_s:
            reached = False
            break
        per = elapsed / len(events)
        want = max(min_samples, int((min_s - elapsed) / per) + 1) if elapsed < min_s else len(events) // 2
        batch = max(1, min(MAX_BATCH, want, int((limit_s - elapsed) / per) + 1))
    return {"events": events, "spin_event_ms": spins, "reached": reached, "noise": noise,
            "elapsed_s": round(elapsed, 4),
            "discarded": [i for i, sp in enumerate(spins) if _below(spin_cycles, sp - overhead_ms, floor_mhz)]}


def _below(cycles: int, spin_ms: float, floor_mhz) -> bool:
    return floor_mhz is not None and spin_ms > 0 and cycles / (spin_ms * 1e3) < floor_mhz


def round_mhz(spins_ms: list, cycles: int, overhead_ms: float = 0.0):
    """A round's SM clock: the median over its launches of the spin's cycles over its time."""
    mhz = [cycles / ((sp - overhead_ms) * 1e3) for sp in spins_ms if sp - overhead_ms > 0]
    return stats.summarize(mhz)["median_ms"] if mhz else None


def clock_outlier(mhz: list, tol: float = CLOCK_MATCH):
    """The index of the round to measure again, or None: where the rounds' clocks span more than
    `tol` of their median, the round farthest from it."""
    known = [m for m in mhz if m]
    if len(known) < 2:
        return None
    mid = stats.summarize(known)["median_ms"]
    if (max(known) - min(known)) / mid <= tol:
        return None
    return max((i for i, m in enumerate(mhz) if m), key=lambda i: abs(mhz[i] - mid))


def pick_retakes(rounds: dict, mhz_of, tol: float = CLOCK_MATCH) -> dict:
    """Per contender (name -> its rounds) the index of the round to measure again, where one's
    clock (`mhz_of(name, round)`) stands out (clock_outlier)."""
    picks = {name: clock_outlier([mhz_of(name, r) for r in rs], tol) for name, rs in rounds.items()}
    return {name: i for name, i in picks.items() if i is not None}


def time_graph(torch, fn, flush, spin, inner: int, replays: int = GRAPH_REPLAYS, idle_cycles: int = 0) -> list:
    """Per-launch time from CUDA graphs: a graph of `inner` (flush, fn) pairs and one of `inner`
    flushes alone, replayed alternately (a spin between replays where the caller idles); each
    sample is (pair replay - median flush replay) / inner. Graphs remove the host's launch gaps;
    the flush is captured like the kernel. What this counts beyond the kernel itself: the
    write-back of the dirty lines it leaves in the L2, which the next flush pays (seen on the
    H100: about +7% for a 256 MB copy whose profiler time agrees with ncu's gpu__time_duration)."""
    flushing = flush is not _no_flush
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # allocations a launch makes (descriptor scratch) happen before capture
        both, only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(both, stream=stream):
            for _ in range(inner):
                flush()
                fn()
        if flushing:
            with torch.cuda.graph(only, stream=stream):
                for _ in range(inner):
                    flush()
    torch.cuda.current_stream().wait_stream(stream)
    t_both: list[float] = []
    t_only: list[float] = []
    for _ in range(replays):
        for g, acc in ((both, t_both), (only, t_only)) if flushing else ((both, t_both),):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            if idle_cycles:
                spin(idle_cycles * inner)
            e.synchronize()
            acc.append(s.elapsed_time(e))
    torch.cuda.synchronize()
    flush_ms = stats.summarize(t_only)["median_ms"] if flushing else 0.0
    del both, only
    return [(t - flush_ms) / inner for t in t_both]


class _Profiler:
    """The profiler's (CUPTI's) records of the GPU work inside the block, through torch.profiler:
    each activity's name and its start and end on the GPU's clock (ns). These are the kernel's
    own start and end, what Nsight Systems shows; CUDA events around a launch also count the
    launch's start after the previous work (3.1-3.5 us on the H100). None, with the reason, when
    the profiler cannot run (another profiler, such as ncu, holds CUPTI)."""

    def __init__(self, torch):
        self.torch, self.records, self.error, self._prof = torch, None, None, None

    def __enter__(self):
        try:
            from torch.profiler import ProfilerActivity, profile

            self._prof = profile(activities=[ProfilerActivity.CUDA])
            self._prof.__enter__()
        except Exception as e:  # noqa: BLE001 - a missing profiler leaves the other methods
            self._prof, self.error = None, f"{type(e).__name__}: {e}"[:300]
        return self

    def __exit__(self, *exc):
        if self._prof is None:
            return False
        self.torch.cuda.synchronize()
        self._prof.__exit__(*exc)
        if exc[0] is not None:
            return False
        try:
            cuda = self.torch.autograd.DeviceType.CUDA
            events = self._prof.profiler.kineto_results.events()
            self.records = sorted(((e.name(), e.start_ns(), e.end_ns()) for e in events if e.device_type() == cuda),
                                  key=lambda r: r[1])
        except Exception as e:  # noqa: BLE001 - torch moved its private results: events remain
            self.records, self.error = None, f"profiler records unreadable: {type(e).__name__}: {e}"[:300]
        if self.records is not None and not self.records:
            self.records, self.error = None, "the profiler recorded no GPU activity (is another profiler attached?)"
        return False


class _NoProfiler:
    """Where the budget runs no profiler (or no graphs): a block that records nothing."""

    records, error = None, None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


_NAMES: dict = {}


def _names(torch, fn, key: str | None = None) -> set:
    """The names of the GPU activities one call of `fn` makes, from the profiler; kept per
    process under `key` (the spin and the flush make the same kernels every time)."""
    if key in _NAMES:
        return _NAMES[key]
    with _Profiler(torch) as p:
        fn()
    if p.records is None:
        raise RuntimeError(p.error)
    names = {r[0] for r in p.records}
    if key is not None:
        _NAMES[key] = names
    return names


def warm_profiler(torch) -> None:
    """Start the profiler once in this process, and learn the spin's kernel name with it. The
    first profiler session of a process costs 4-6 s on the H100 (CUPTI starting up, measured per
    case): a case calls this before it waits for the GPU, so that the wait is not that long for
    every other case. A profiler that cannot run is left for compare() to record."""
    try:
        _names(torch, lambda: torch.cuda._sleep(100), "spin")
    except RuntimeError:
        pass


_REFERENCE: dict = {}


def reference_clock(nvml_index: int, spin: _Spinner) -> dict:
    """The SM clock samples are held to: NVML's default applications clock (what the board runs
    at when nothing lowers it), else its maximum SM clock, else the spin's calibration. NVML's
    answer is kept per process (a board's defaults do not change under it)."""
    if nvml_index not in _REFERENCE:
        _REFERENCE[nvml_index] = _nvml_reference(nvml_index)
    return _REFERENCE[nvml_index] or {"mhz": round(spin.cycles_per_us, 1), "source": "spin calibration"}


def _nvml_reference(nvml_index: int) -> dict | None:
    nv = nvml._pynvml()
    if nv is not None:
        try:
            nv.nvmlInit()
            try:
                h = nv.nvmlDeviceGetHandleByIndex(nvml_index)
                for what, call in (("nvml default applications clock", "nvmlDeviceGetDefaultApplicationsClock"),
                                   ("nvml max SM clock", "nvmlDeviceGetMaxClockInfo")):
                    try:
                        mhz = getattr(nv, call)(h, nv.NVML_CLOCK_SM)
                    except nv.NVMLError:
                        continue
                    if mhz:
                        return {"mhz": float(mhz), "source": what}
            finally:
                nv.nvmlShutdown()
        except nv.NVMLError:
            pass
    return None


def compare(contenders: dict, nvml_index: int = 0, *, flush: bool = True, idle_factor: float = 0.0,
            budget: Budget = SUITE, turns=None, bench_index: int = 0) -> dict:
    """Time each contender (name -> zero-argument callable that launches asynchronously),
    interleaved round by round, every launch timed by the profiler and by CUDA events at once
    and followed by a clock reading, then by CUDA graphs. `flush`: empty the L2 before each
    launch; `idle_factor`: the spin after each launch lasts that many times the launch's time
    (at least SPIN_MIN_US); `budget`: rounds, stops and methods (SUITE; a sweep's points take
    SWEEP, events only); `turns` (reprokit.harness.turns.Turns, where other stacks measure the
    same case on this GPU): each round waits for its turn with theirs, this benchmark being the
    case's `bench_index`-th, one profiler session per round. Returns per contender a summary
    (summarize_contender), NVML sampled over the rounds (`nvml`) and over the graph replays
    (`nvml_graph`), the options (`method`), and `raw` (every sample, by contender, method and
    round)."""
    import torch

    phase, t_phase = {}, time.perf_counter()

    def lap(name):
        nonlocal t_phase
        now = time.perf_counter()
        phase[name] = round(now - t_phase, 4)
        t_phase = now

    flusher = _flusher(torch) if flush else _no_flush
    spin = _Spinner(torch)
    ref = reference_clock(nvml_index, spin)
    floor = CLOCK_FLOOR * ref["mhz"]
    est = {name: _estimate_ms(torch, fn, flusher, spin, budget.warmup_ms) for name, fn in contenders.items()}
    cycles = {name: spin.cycles_for(max(SPIN_MIN_US, 1e3 * idle_factor * est[name])) for name in contenders}
    lap("setup_warmup_s")
    raw: dict[str, dict[str, Any]] = {name: {"events": [], "profiler": [], "graph": [], "spin_cycles": cycles[name], "spin_event_ms": [],
                  "spin_profiler_ms": [], "discarded": [], "reached": [], "noise": [], "elapsed_s": []}
           for name in contenders}
    spin_names: set[str] = set()
    flush_names: set[str] = set()
    prof_error: str | None = "not run: the budget times by CUDA events only"
    if budget.profiler:
        try:  # what separates one timed launch from the next in the profiler's records
            spin_names = _names(torch, lambda: spin(100), "spin")
            flush_names = _names(torch, flusher, "flush") if flush else set()
            prof_error = None
        except RuntimeError as e:
            spin_names, flush_names, prof_error = set(), set(), str(e)
    rounds = budget.rounds
    min_s, limit_s = budget.min_time_s / rounds, budget.time_limit_s / rounds
    lap("profiler_probes_s")
    # Every round in the order it ran within a profiler session (the records follow that order).
    taken: dict[str, list[dict]] = {name: [] for name in contenders}
    replaced: dict[str, list[tuple[int, dict]]] = {name: [] for name in contenders}

    def session(names: list) -> list:
        nonlocal prof_error
        with _Profiler(torch) if budget.profiler else _NoProfiler() as prof:
            ran = [(name, measure_round(torch, contenders[name], flusher, spin, cycles[name], floor, min_s, limit_s,
                                        spin.event_overhead_ms, budget.noise_target, budget.min_samples))
                   for name in names]
        error = prof_error or prof.error
        if error is None:
            try:
                per_launch = stats.split_launches(prof.records, flush_names | spin_names,
                                                  [len(r["events"]) for _, r in ran], spins=spin_names)
            except ValueError as e:
                error = str(e)
            else:
                for (name, r), (times, spins) in zip(ran, per_launch):
                    r["profiler"], r["spin_profiler_ms"] = times, spins
                    # The profiler's spin times are exact: they decide which samples were slow-clocked.
                    r["discarded"] = [j for j, sp in enumerate(spins) if _below(cycles[name], sp, floor)]
        prof_error = error
        return ran

    # NVML watches the rounds (the headline) and the graphs apart: a graph replays its launches
    # back to back, and a big GEMM's replay alone can reach the power cap.
    with nvml.Sampler(nvml_index, 0.02) as watched:
        if turns is None:
            for name, r in session([name for _ in range(rounds) for name in contenders]):
                taken[name].append(r)
        else:
            for i in range(rounds):
                with turns.round(bench_index, i, rounds) as turn:
                    if turn.waited:  # another case had the GPU meanwhile: the first launches are untimed again
                        for fn in contenders.values():
                            fn()
                        torch.cuda.synchronize()
                    for name, r in session(list(contenders)):
                        taken[name].append(r)
        for _ in range(budget.retakes):
            if prof_error is not None:  # the exact clocks come from the profiler
                break
            picks = pick_retakes(taken, lambda name, r: round_mhz(r["spin_profiler_ms"], cycles[name]))
            if not picks:
                break
            for name, r in session(list(picks)):
                replaced[name].append((picks[name], taken[name][picks[name]]))
                taken[name][picks[name]] = r
    lap("rounds_s")
    keys: tuple[str, ...] = ("events", "spin_event_ms", "discarded", "reached", "noise", "elapsed_s")
    keys += ("profiler", "spin_profiler_ms") if prof_error is None else ()
    for name in contenders:
        for key in keys:
            raw[name][key] = [r[key] for r in taken[name]]
        raw[name]["retaken"] = [{"round": i, **{k: r[k] for k in keys}} for i, r in replaced[name]]
    lap("profiler_records_s")
    with nvml.Sampler(nvml_index, 0.02) if budget.graphs else _NoProfiler() as watched_graph:
        for name, fn in contenders.items() if budget.graphs else ():
            inner = int(min(200, max(5, GRAPH_TARGET_MS / max(est[name], 1e-3))))
            idle = spin.cycles_for(1e3 * idle_factor * est[name]) if idle_factor else 0
            try:
                raw[name]["graph"].append(time_graph(torch, fn, flusher, spin, inner, idle_cycles=idle))
            except RuntimeError as e:  # a kernel that cannot be captured still has its other timings
                raw[name]["graph_error"] = str(e).strip().splitlines()[0][:300]
    method = {"flush_l2": bool(flush), "idle_factor": float(idle_factor), "rounds": rounds,
              "noise_target": budget.noise_target, "min_samples": budget.min_samples,
              "min_time_s": budget.min_time_s, "time_limit_s": budget.time_limit_s,
              "profiler": budget.profiler, "graphs": budget.graphs, "clock_floor": CLOCK_FLOOR,
              "clock_match": CLOCK_MATCH, "retakes": budget.retakes, "reference_clock_mhz": ref["mhz"],
              "reference_clock_source": ref["source"], "vs_ncu": VS_NCU}
    lap("graphs_s")
    method["phase_s"] = phase
    if turns is not None:
        method["interleave"] = turns.record(bench_index)
    out = {"raw": raw, "nvml": watched, "method": method}
    if budget.graphs:
        out["nvml_graph"] = watched_graph
    for name in contenders:
        out[name] = summarize_contender(raw[name], prof_error, method)
    return out


def _kept(rounds: list, discarded: list) -> list:
    out = []
    for r, d in zip(rounds, discarded):
        drop = set(d)
        out.append([x for i, x in enumerate(r) if i not in drop])
    return out


def summarize_contender(raw: dict, profiler_error=None, method: dict | None = None) -> dict:
    """One contender's summary from its raw samples (pure: the CPU tests cover it). Discarded
    samples (clock under the floor) leave every method's figures; the clock per sample is the
    spin's cycles over its profiler time where the profiler ran, else over its event time."""
    method = method or {}
    discarded = raw.get("discarded") or [[] for _ in raw["events"]]
    if not any(len(r) > len(set(d)) for r, d in zip(raw["events"], discarded)):
        # Every sample under the floor: nothing would be left. They are kept, and flagged below.
        discarded = [[] for _ in raw["events"]]
    ev_rounds = _kept(raw["events"], discarded)
    pr_rounds = _kept(raw["profiler"], discarded) if raw.get("profiler") else []
    events = stats.summarize([x for r in ev_rounds for x in r])
    profiler = stats.summarize([x for r in pr_rounds for x in r]) if pr_rounds else None
    graph = stats.summarize(raw["graph"][0]) if raw.get("graph") else None
    headline = "profiler" if profiler else "events"
    rounds = [stats.summarize(r)["median_ms"] for r in (pr_rounds if profiler else ev_rounds) if r]
    clock = None
    if raw.get("spin_cycles"):
        src = "profiler" if raw.get("spin_profiler_ms") else "events"
        spins = raw["spin_profiler_ms"] if src == "profiler" else raw["spin_event_ms"]
        mhz = [raw["spin_cycles"] / (s * 1e3) for r in _kept(spins, discarded) for s in r if s > 0]
        n_disc = sum(len(d) for d in (raw.get("discarded") or []))
        clock = {"source": f"GPU-side: SM cycles of a spin after each launch over its {src} time",
                 "median_mhz": stats.summarize(mhz)["median_ms"] if mhz else None,
                 "min_mhz": min(mhz) if mhz else None, "discarded": n_disc,
                 "floor_mhz": (method.get("clock_floor") or 0) * (method.get("reference_clock_mhz") or 0) or None,
                 "flagged": n_disc > 0, "all_below_floor": bool(n_disc) and not any(discarded)}
    reached = raw.get("reached")
    flush = "L2 flushed before each launch" if method.get("flush_l2", True) else "L2 not flushed"
    idle = method.get("idle_factor")
    return {
        "method": ("profiler (CUPTI kernel records)" if profiler else "cuda-events") + f", {flush}"
                  + (f", GPU idle {idle:g}x the launch's time between launches" if idle else ""),
        "headline": headline,
        "median_ms": (profiler or events)["median_ms"], "events": events, "profiler": profiler,
        "profiler_error": None if profiler else (profiler_error or "no profiler samples"),
        "round_medians_ms": rounds, "spread": stats.spread(rounds),
        "graph_median_ms": graph["median_ms"] if graph else None, "graph": graph,
        "graph_error": raw.get("graph_error"),
        # The same launches timed two ways: events also count each launch's start on the GPU.
        "agreement": stats.agreement(events["median_ms"], profiler["median_ms"]) if profiler
        else (stats.agreement(events["median_ms"], graph["median_ms"]) if graph else None),
        "graph_agreement": stats.agreement((profiler or events)["median_ms"], graph["median_ms"]) if graph else None,
        "stopping": None if reached is None else {
            "reached": all(reached), "rounds_reached": sum(1 for r in reached if r),
            "noise": raw.get("noise"), "elapsed_s": raw.get("elapsed_s"),
            "samples": [len(r) for r in raw["events"]],
            # Rounds measured again because their clock stood out (the replaced ones are in raw).
            "retaken": [t["round"] for t in raw.get("retaken") or []]},
        "clock": clock,
    }
