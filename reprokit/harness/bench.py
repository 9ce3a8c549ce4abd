"""Timing GPU work the way a maintainer can trust: warm-up, L2 flushed before every repetition,
contenders interleaved round by round, two timing methods (CUDA events per launch; CUDA-graph
replays less a flush-only graph), medians with IQR outlier removal, round-to-round spread, the
two methods' agreement, and NVML read before, during and after. Raw samples are returned.

It mirrors tritonbench's do_bench (L2 flush, CUDA-graph timing, IQR, p50) and never changes the
GPU's clocks or power settings: it measures the card as it finds it and says how it found it.
"""

from __future__ import annotations

from reprokit.harness import stats

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


def compare(contenders: dict, watch=None) -> dict:
    """Time each contender (name -> zero-argument callable that launches asynchronously) by
    both methods, interleaved round by round. Returns per contender a summary (median of all
    event samples, per-round medians, spread, graph median, agreement), NVML around it all, and
    `raw` (every sample, by contender, method and round)."""
    import torch

    flush = _flusher(torch)
    est = {name: _estimate_ms(torch, fn, flush) for name, fn in contenders.items()}
    raw = {name: {"events": [], "graph": []} for name in contenders}
    w = watch or nvml_watch()
    with w:
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
    out = {"raw": raw, "nvml": w.result()}
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


# --- NVML around a benchmark --------------------------------------------------------------
# A thin call site: reprokit.harness.nvml (decoded snapshots, a sampler) replaces the fallback
# below where it exists.

THROTTLE_BITS = {  # nvmlClocksEventReasons / ClocksThrottleReasons, stable since NVML 5.x
    0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
    0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting",
}
# Reasons that mean the clocks were held down by power or heat while the numbers were taken.
THROTTLING = ("sw_power_cap", "hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown",
              "hw_power_brake_slowdown")


def decode_throttle(mask) -> list:
    if mask is None:
        return []
    return [name for bit, name in sorted(THROTTLE_BITS.items()) if mask & bit]


def nvml_watch(index: int = 0, period_s: float = 0.02):
    try:
        from reprokit.harness import nvml
    except ImportError:
        return _FallbackWatch(index, period_s)
    if hasattr(nvml, "Sampler"):
        return nvml.Sampler(index=index, period_s=period_s)
    return _FallbackWatch(index, period_s)


class _FallbackWatch:
    """Clocks, power, temperature and throttle reasons before, after and every `period_s`
    during a benchmark, read through pynvml; {"available": False} without it."""

    def __init__(self, index: int, period_s: float):
        self.index, self.period_s = index, period_s
        self.samples, self.before, self.after, self.error = [], None, None, None

    def _read(self):
        p = self.pynvml
        h = self.handle
        mask = p.nvmlDeviceGetCurrentClocksThrottleReasons(h)
        return {"sm_mhz": p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_SM),
                "mem_mhz": p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_MEM),
                "power_w": p.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "temperature_c": p.nvmlDeviceGetTemperature(h, p.NVML_TEMPERATURE_GPU),
                "throttle_mask": mask, "throttle_reasons": decode_throttle(mask)}

    def __enter__(self):
        import threading

        try:
            import pynvml
        except ImportError:
            self.error = "pynvml (nvidia-ml-py) is not installed in this stack"
            return self
        try:
            pynvml.nvmlInit()
            self.pynvml, self.handle = pynvml, pynvml.nvmlDeviceGetHandleByIndex(self.index)
            self.before = self._read()
        except pynvml.NVMLError as e:
            self.error = f"NVML: {e}"
            return self
        self._stop = threading.Event()

        def loop():
            while not self._stop.wait(self.period_s):
                self.samples.append(self._read())

        self._thread = threading.Thread(target=loop, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self.error is None:
            self._stop.set()
            self._thread.join()
            self.after = self._read()
            self.pynvml.nvmlShutdown()
        return False

    def result(self) -> dict:
        if self.error is not None:
            return {"available": False, "reason": self.error}
        every = [self.before] + self.samples + [self.after]
        seen = sorted({r for s in every for r in s["throttle_reasons"]})
        return {
            "available": True, "before": self.before, "after": self.after, "samples": len(self.samples),
            "sm_mhz_min": min(s["sm_mhz"] for s in every), "sm_mhz_max": max(s["sm_mhz"] for s in every),
            "temperature_c_max": max(s["temperature_c"] for s in every),
            "power_w_max": max(s["power_w"] for s in every),
            "throttle_reasons_seen": seen, "throttled": [r for r in seen if r in THROTTLING],
        }
