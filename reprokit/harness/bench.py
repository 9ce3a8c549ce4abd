"""Timing GPU work the way a maintainer can trust: warm-up, L2 flushed before every repetition,
contenders interleaved round by round, two timing methods (CUDA events per launch; CUDA-graph
replays less a flush-only graph), medians with IQR outlier removal, round-to-round spread, the
two methods' agreement, and NVML read before, during and after. Raw samples are returned.

It mirrors tritonbench's do_bench (L2 flush, CUDA-graph timing, IQR, p50) and never changes the
GPU's clocks or power settings: it measures the card as it finds it and says how it found it.
"""

from __future__ import annotations

from reprokit.harness import nvml, stats

FLUSH_BYTES = 256 << 20   # 5x the H100's 50 MB L2 (tritonbench flushes 256 MB too)
ROUNDS = 3                # rounds per contender and method: their medians give the spread
TARGET_MS = 150.0         # GPU time per contender per round for events
WARMUP_MS = 300.0         # GPU time per contender before the first round
MIN_REPS, MAX_REPS = 20, 1000
GRAPH_REPLAYS = 10
GRAPH_TARGET_MS = 30.0    # GPU time per replay of a graph


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
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def time_events(torch, fn, flush, reps: int) -> list:
    """One sample per launch: events recorded right before and after it, L2 flushed before each.
    The flush also keeps the stream busy while the host queues the next launch, so a launch's
    host overhead is not timed."""
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush()
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def time_graph(torch, fn, flush, inner: int, replays: int = GRAPH_REPLAYS) -> list:
    """Per-launch time from CUDA graphs: a graph of `inner` (flush, fn) pairs and one of `inner`
    flushes alone, replayed alternately; each sample is (pair replay - median flush replay) / inner.
    Graphs remove the host's launch gaps; the flush is captured like the kernel. What this
    counts beyond the kernel itself: the write-back of the dirty lines it leaves in the L2, which
    the next flush pays (seen on the H100: about +7% for a 256 MB copy whose events time agrees
    with ncu's gpu__time_duration). Events time the kernel alone."""
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
            torch.cuda.synchronize()
            acc.append(s.elapsed_time(e))
    flush_ms = stats.summarize(t_only)["median_ms"]
    del both, only
    return [(t - flush_ms) / inner for t in t_both]


def compare(contenders: dict, nvml_index: int = 0) -> dict:
    """Time each contender (name -> zero-argument callable that launches asynchronously) by
    both methods, interleaved round by round. Returns per contender a summary (median of all
    event samples, per-round medians, spread, graph median, agreement), NVML around it all, and
    `raw` (every sample, by contender, method and round). NVML is sampled (reprokit.harness.nvml)
    from the first round to the last graph replay."""
    import torch

    flush = _flusher(torch)
    est = {name: _estimate_ms(torch, fn, flush) for name, fn in contenders.items()}
    raw = {name: {"events": [], "graph": []} for name in contenders}
    with nvml.Sampler(nvml_index, 0.02) as watched:
        for _ in range(ROUNDS):
            for name, fn in contenders.items():
                reps = int(min(MAX_REPS, max(MIN_REPS, TARGET_MS / max(est[name], 1e-3))))
                raw[name]["events"].append(time_events(torch, fn, flush, reps))
        for name, fn in contenders.items():
            inner = int(min(200, max(5, GRAPH_TARGET_MS / max(est[name], 1e-3))))
            try:
                raw[name]["graph"].append(time_graph(torch, fn, flush, inner))
            except RuntimeError as e:  # a kernel that cannot be captured still has its event timing
                raw[name]["graph_error"] = str(e).strip().splitlines()[0][:300]
    out = {"raw": raw, "nvml": watched}
    for name in contenders:
        rounds = [stats.summarize(r) for r in raw[name]["events"]]
        pooled = stats.summarize([x for r in raw[name]["events"] for x in r])
        graph = stats.summarize(raw[name]["graph"][0]) if raw[name]["graph"] else None
        out[name] = {
            "method": "cuda-events, L2 flushed before each launch",
            "median_ms": pooled["median_ms"], "events": pooled,
            "round_medians_ms": [r["median_ms"] for r in rounds],
            "spread": stats.spread([r["median_ms"] for r in rounds]),
            "graph_median_ms": graph["median_ms"] if graph else None, "graph": graph,
            "graph_error": raw[name].get("graph_error"),
            "agreement": stats.agreement(pooled["median_ms"], graph["median_ms"]) if graph else None,
        }
    return out
