"""Timing GPU work the way a maintainer can trust: warm-up, L2 flushed before every launch,
the GPU left idle between launches so the board's power cap never lowers the clocks, contenders
interleaved round by round, three timing methods (the profiler's kernel records, CUDA events
around the same launches, CUDA-graph replays less a flush-only graph), medians with IQR outlier
removal, round-to-round spread, the methods' agreement, and NVML read before, during and after.
Raw samples are returned.

It mirrors tritonbench's do_bench (L2 flush, CUDA-graph timing, IQR, p50) and never changes the
GPU's clocks or power settings: it measures the card as it finds it and says how it found it.
"""

from __future__ import annotations

import time

from reprokit.harness import nvml, stats

FLUSH_BYTES = 256 << 20   # 5x the H100's 50 MB L2 (tritonbench flushes 256 MB too)
ROUNDS = 3                # rounds per contender: their medians give the spread
TARGET_MS = 100.0         # GPU time per contender per round
WARMUP_MS = 300.0         # GPU time per contender before the first round
MIN_REPS, MAX_REPS = 20, 500
GRAPH_REPLAYS = 10
GRAPH_TARGET_MS = 30.0    # GPU time per replay of a graph
# Between launches the GPU idles for IDLE_FACTOR times the launch's time. Run back to back, an
# 8192^3 fp16 GEMM holds the H100 SXM at its 700 W cap: NVML shows sw_power_cap, SM clocks swing
# between 1245 and 1545 MHz and round medians spread 3-7%. With 3x idle the SM clock stayed at
# 1980 MHz and round medians spread 0.03-0.5% (measured on the lab H100); 1x was not enough.
IDLE_FACTOR = 3.0


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


def _estimate_ms(torch, fn, flush) -> float:
    """Warm-up, and the time per call it suggests (the median of the timed calls). The first
    calls are not timed: a library's first call at a new size (cuBLAS picking its kernel, a
    workspace allocation) can take milliseconds. Then at least WARMUP_MS of GPU time, so that
    clocks and power settle before the rounds that count."""
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    while len(times) < 5 or (sum(times) < WARMUP_MS and len(times) < 2000):
        flush()
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
        time.sleep(IDLE_FACTOR * times[-1] / 1e3)
    return sorted(times)[len(times) // 2]


def _idler(torch):
    """idle(ms): keep the GPU idle for about `ms` without the host waiting, by queueing one
    single-thread spin kernel (torch.cuda._sleep) whose cycles are calibrated here. A spinning
    thread draws next to no power, so the board cools off as if idle; and the stream stays
    busy while the host queues the next launches, so no host delay is ever timed (a host-side
    sleep let the host's launch overhead into the events: up to 30 us on an 8192^2 copy)."""
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1000)
    s.record()
    torch.cuda._sleep(2_000_000)
    e.record()
    e.synchronize()
    cycles_per_ms = 2_000_000 / max(s.elapsed_time(e), 1e-3)

    def idle(ms: float):
        if ms > 0:
            torch.cuda._sleep(max(1, int(ms * cycles_per_ms)))

    return idle


def time_events(torch, fn, flush, idle, reps: int, idle_ms: float) -> list:
    """One sample per launch: events recorded right before and after it, the L2 flushed before
    each, the GPU idle for `idle_ms` before each flush. The idle and the flush keep the stream
    busy while the host queues the launch, so a launch's host overhead is not timed."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        idle(idle_ms)
        flush()
        starts[i].record()
        fn()
        ends[i].record()
    ends[-1].synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def time_graph(torch, fn, flush, inner: int, replays: int = GRAPH_REPLAYS) -> list:
    """Per-launch time from CUDA graphs: a graph of `inner` (flush, fn) pairs and one of `inner`
    flushes alone, replayed alternately (the GPU idle between replays as between launches); each
    sample is (pair replay - median flush replay) / inner. Graphs remove the host's launch gaps;
    the flush is captured like the kernel. What this counts beyond the kernel itself: the
    write-back of the dirty lines it leaves in the L2, which the next flush pays (seen on the
    H100: about +7% for a 256 MB copy whose profiler time agrees with ncu's gpu__time_duration)."""
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        fn()  # allocations a launch makes (descriptor scratch) happen before capture
        both, only = torch.cuda.CUDAGraph(), torch.cuda.CUDAGraph()
        with torch.cuda.graph(both, stream=stream):
            for _ in range(inner):
                flush()
                fn()
        with torch.cuda.graph(only, stream=stream):
            for _ in range(inner):
                flush()
    torch.cuda.current_stream().wait_stream(stream)
    t_both, t_only = [], []
    for _ in range(replays):
        for g, acc in ((both, t_both), (only, t_only)):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record()
            g.replay()
            e.record()
            e.synchronize()
            acc.append(s.elapsed_time(e))
            time.sleep(IDLE_FACTOR * acc[-1] / 1e3)
    flush_ms = stats.summarize(t_only)["median_ms"]
    del both, only
    return [(t - flush_ms) / inner for t in t_both]


class _Profiler:
    """The profiler's (CUPTI's) records of the GPU work inside the block, through torch.profiler:
    each activity's name and its start and end on the GPU's clock (ns). These are the kernel's
    own start and end, what Nsight Systems shows; CUDA events around a launch also count the
    launch's start after the previous work (3.1-3.5 us on the H100), and ncu's
    gpu__time_duration 1.2-1.5 us of it. None, with the reason, when the profiler cannot run
    (another profiler, such as ncu, holds CUPTI)."""

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


def _names(torch, fn) -> set:
    """The names of the GPU activities one call of `fn` makes, from the profiler."""
    with _Profiler(torch) as p:
        fn()
    if p.records is None:
        raise RuntimeError(p.error)
    return {r[0] for r in p.records}


def compare(contenders: dict, nvml_index: int = 0) -> dict:
    """Time each contender (name -> zero-argument callable that launches asynchronously),
    interleaved round by round, every launch timed by the profiler and by CUDA events at once,
    then by CUDA graphs. Returns per contender a summary (the headline median: the profiler's
    where it ran, else the events'; per-round medians and their spread; each method's summary and
    their agreement), NVML sampled (reprokit.harness.nvml) over the rounds (`nvml`) and over the
    graph replays (`nvml_graph`), and `raw` (every sample, by contender, method and round)."""
    import torch

    flush, idle = _flusher(torch), _idler(torch)
    est = {name: _estimate_ms(torch, fn, flush) for name, fn in contenders.items()}
    raw = {name: {"events": [], "profiler": [], "graph": []} for name in contenders}
    reps = {name: int(min(MAX_REPS, max(MIN_REPS, TARGET_MS / max(est[name], 1e-3)))) for name in contenders}
    try:  # what separates one timed launch from the next in the profiler's records
        boundaries = _names(torch, flush) | _names(torch, lambda: idle(0.01))
        prof_error = None
    except RuntimeError as e:
        boundaries, prof_error = None, str(e)
    # NVML watches the rounds (the headline) and the graphs apart: a graph replays its launches
    # back to back, and a big GEMM's replay alone can reach the power cap.
    with nvml.Sampler(nvml_index, 0.02) as watched:
        with _Profiler(torch) as prof:
            for _ in range(ROUNDS):
                for name, fn in contenders.items():
                    raw[name]["events"].append(time_events(torch, fn, flush, idle, reps[name], IDLE_FACTOR * est[name]))
    order = [name for _ in range(ROUNDS) for name in contenders]
    prof_error = prof_error or prof.error
    if prof_error is None:
        try:
            per_launch = stats.split_launches(prof.records, boundaries, [reps[n] for n in order])
        except ValueError as e:
            prof_error = str(e)
        else:
            for name, samples in zip(order, per_launch):
                raw[name]["profiler"].append(samples)
    with nvml.Sampler(nvml_index, 0.02) as watched_graph:
        for name, fn in contenders.items():
            inner = int(min(200, max(5, GRAPH_TARGET_MS / max(est[name], 1e-3))))
            try:
                raw[name]["graph"].append(time_graph(torch, fn, flush, inner))
            except RuntimeError as e:  # a kernel that cannot be captured still has its other timings
                raw[name]["graph_error"] = str(e).strip().splitlines()[0][:300]
    out = {"raw": raw, "nvml": watched, "nvml_graph": watched_graph}
    for name in contenders:
        out[name] = summarize_contender(raw[name], prof_error)
    return out


def summarize_contender(raw: dict, profiler_error=None) -> dict:
    """One contender's summary from its raw samples (pure: the CPU tests cover it)."""
    events = stats.summarize([x for r in raw["events"] for x in r])
    profiler = stats.summarize([x for r in raw["profiler"] for x in r]) if raw.get("profiler") else None
    graph = stats.summarize(raw["graph"][0]) if raw.get("graph") else None
    headline = "profiler" if profiler else "events"
    rounds = [stats.summarize(r)["median_ms"] for r in raw[headline]]
    return {
        "method": ("profiler (CUPTI kernel records)" if profiler else "cuda-events")
                  + f", L2 flushed before each launch, GPU idle {IDLE_FACTOR:g}x the launch's time between launches",
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
    }
