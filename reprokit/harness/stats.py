"""The arithmetic of GPU checks and timings, in pure stdlib so the CPU tests cover it: tolerance
by dtype, summaries of timing samples (median, quartiles, IQR outliers, spread), agreement of two
timing methods, and the parsing of launch errors (out of resources) into facts.
"""

from __future__ import annotations

import math
import re
import statistics

# (rtol, atol) an output may differ from its reference by, elementwise (|out - ref| <= atol +
# rtol * |ref|), and the largest relative Frobenius error ||out - ref|| / ||ref||. Copies must be
# exact whatever the dtype (`exact`). fp16/bf16 GEMMs accumulate in fp32 but round the output
# once: one half-precision ulp of the output plus the reduction-order differences against cuBLAS.
# Integers and bools have none: only bit-exact passes (tolerance() raises ValueError for them).
TOLERANCES = {
    "float16": {"rtol": 1e-2, "atol": 1e-2, "rel_fro": 5e-3},
    "bfloat16": {"rtol": 2e-2, "atol": 2e-2, "rel_fro": 1e-2},
    "float32": {"rtol": 1e-4, "atol": 1e-5, "rel_fro": 1e-5},
    "tf32": {"rtol": 1e-3, "atol": 1e-3, "rel_fro": 1e-3},
    "float64": {"rtol": 1e-7, "atol": 1e-9, "rel_fro": 1e-9},
    # fp8 outputs round once to 3 (e4m3) or 2 (e5m2) mantissa bits: one ulp is 12.5% / 25% of the value
    "float8_e4m3fn": {"rtol": 1.25e-1, "atol": 1.25e-1, "rel_fro": 6e-2},
    "float8_e4m3fnuz": {"rtol": 1.25e-1, "atol": 1.25e-1, "rel_fro": 6e-2},
    "float8_e5m2": {"rtol": 2.5e-1, "atol": 2.5e-1, "rel_fro": 1.2e-1},
    "float8_e5m2fnuz": {"rtol": 2.5e-1, "atol": 2.5e-1, "rel_fro": 1.2e-1},
}


def tolerance(dtype: str, exact: bool = False) -> dict:
    """The tolerance a check of `dtype` output uses (all zeros when it must be bit-exact)."""
    if exact:
        return {"rtol": 0.0, "atol": 0.0, "rel_fro": 0.0}
    try:
        return dict(TOLERANCES[dtype])
    except KeyError:
        raise ValueError(f"no tolerance defined for dtype {dtype!r}") from None


def within(max_abs_excess: float, rel_fro: float, tol: dict) -> bool:
    """`max_abs_excess` is max(|out - ref| - (atol + rtol * |ref|)) over the elements: <= 0 passes.
    NaN never passes (a NaN compares False)."""
    return bool(max_abs_excess <= 0.0) and bool(rel_fro <= tol["rel_fro"])


def quantile(sorted_xs: list, q: float) -> float:
    """Linear-interpolated quantile of sorted samples (numpy's default method)."""
    if not sorted_xs:
        raise ValueError("no samples")
    pos = (len(sorted_xs) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(sorted_xs) - 1)
    return sorted_xs[lo] + (sorted_xs[hi] - sorted_xs[lo]) * (pos - lo)


def summarize(samples: list) -> dict:
    """Median, quartiles, min/max and mean of timing samples (ms), after dropping the outliers
    outside 1.5 IQR of the quartiles (as tritonbench does); the raw samples are kept by the caller.

    `iqr_rel` is the interquartile range over the median: the within-run spread.
    """
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("no samples")
    q1, q3 = quantile(xs, 0.25), quantile(xs, 0.75)
    iqr = q3 - q1
    kept = [x for x in xs if q1 - 1.5 * iqr <= x <= q3 + 1.5 * iqr] or xs
    med = statistics.median(kept)
    return {
        "n": len(xs), "outliers": len(xs) - len(kept), "median_ms": med,
        "p25_ms": quantile(kept, 0.25), "p75_ms": quantile(kept, 0.75),
        "min_ms": kept[0], "max_ms": kept[-1], "mean_ms": statistics.fmean(kept),
        "iqr_rel": (quantile(kept, 0.75) - quantile(kept, 0.25)) / med if med > 0 else None,
    }


def spread(values: list):
    """(max - min) / median of repeated measurements (the medians of several rounds): the
    run-to-run spread a result is quoted with. None with fewer than two."""
    vs = [float(v) for v in values if v is not None]
    if len(vs) < 2:
        return None
    med = statistics.median(vs)
    return (max(vs) - min(vs)) / med if med > 0 else None


def agreement(a: float, b: float):
    """|a - b| / min(a, b): how far two timing methods disagree, relative to the faster one."""
    if a is None or b is None or min(a, b) <= 0:
        return None
    return abs(a - b) / min(a, b)


def median_interval(samples: list, z: float = 1.96) -> tuple:
    """A distribution-free interval of the median (about 95% for z = 1.96): the order statistics
    at ranks n/2 -+ z sqrt(n)/2 of the sorted samples."""
    xs = sorted(float(x) for x in samples)
    if not xs:
        raise ValueError("no samples")
    n = len(xs)
    half = z * math.sqrt(n) / 2
    lo = max(0, math.floor(n / 2 - half) - 1)
    hi = min(n - 1, math.ceil(n / 2 + half) - 1)
    return xs[lo], xs[hi]


def median_noise(samples: list):
    """The relative noise of a round's median: half the width of its interval over the median
    (0.005: the median is known to +-0.5%). The benchmark stops a round on it."""
    med = statistics.median(samples)
    if med <= 0:
        return None
    lo, hi = median_interval(samples)
    return (hi - lo) / 2 / med


def split_launches(records: list, boundaries: set, counts: list, spins: set | None = None) -> list:
    """The profiler's GPU records of timed launches as per-launch times (ms).

    `records` are (name, start_ns, end_ns) in start order; a launch is a run of records between
    two boundaries (records named in `boundaries`: the flush before it, the clock-reading spin
    after it), its time from its first start to its last end, so a call that makes several
    kernels (a library's GEMM and its reduction) is timed whole. `counts` says how many launches
    each segment (contender and round, in order) made. Raises ValueError when the records do not
    hold exactly that many launches: samples are never guessed.

    With `spins` (the names of the spin that follows every launch), each segment is (launch
    times, spin times): the spin's own time, which with its known cycles gives the clock."""
    launches, cur = [], None
    for name, start, end in records:
        if name in boundaries:
            if cur:
                launches.append((cur[0], cur[1], (end - start) if spins and name in spins else None))
            cur = None
            continue
        cur = [start, end] if cur is None else [cur[0], max(cur[1], end)]
    if cur:
        launches.append((cur[0], cur[1], None))
    if len(launches) != sum(counts):
        raise ValueError(f"the profiler recorded {len(launches)} launches between flushes, not {sum(counts)}")
    if spins and any(sp is None for _, _, sp in launches):
        raise ValueError("a launch in the profiler's records is not followed by its clock-reading spin")
    out, i = [], 0
    for n in counts:
        seg = launches[i:i + n]
        times = [(e - s) / 1e6 for s, e, _ in seg]
        out.append((times, [sp / 1e6 for _, _, sp in seg if sp is not None]) if spins else times)
        i += n
    return out


def throughput(kind: str, size: dict, median_ms: float, peak: float | None) -> dict:
    """GB/s (copies: bytes read + written) or TFLOP/s (GEMMs: 2MNK), and the share of `peak`
    (the profile's datasheet GB/s or dense fp16 TFLOP/s)."""
    if kind == "copy":
        value = 2 * size["M"] * size["N"] * size["elem_bytes"] / (median_ms * 1e-3) / 1e9
        return {"gbs": value, "pct_of_peak": 100.0 * value / peak if peak else None}
    if kind == "gemm":
        value = 2.0 * size["M"] * size["N"] * size["K"] / (median_ms * 1e-3) / 1e12
        return {"tflops": value, "pct_of_peak": 100.0 * value / peak if peak else None}
    raise ValueError(f"unknown benchmark kind {kind!r}")


# Triton's OutOfResources message, in every release since 2.x:
#   "out of resource: shared memory, Required: 262176, Hardware limit: 232448. Reducing ..."
_OOR = re.compile(r"out of resources?: ([\w ]+?), Required: (\d+), Hardware limit: (\d+)", re.IGNORECASE)
# The CUDA driver's error names as they surface through Triton's launcher or torch.
_CUDA_ERR = re.compile(r"\b(CUDA_ERROR_\w+|cuda(?:Error)?\w*|illegal memory access|misaligned address|"
                       r"unspecified launch failure|an illegal instruction)", re.IGNORECASE)


def classify_launch_error(exc_type: str, message: str) -> dict:
    """A launch failure as facts: a status, the first line of the real message, and for
    resource limits the resource, the bytes required and the hardware limit."""
    text = " ".join(message.split())
    out = {"status": "launch_error", "exception": exc_type, "error": f"{exc_type}: {text}"[:500]}
    m = _OOR.search(text)
    if m:
        # (the line below and its comments are inlined into reproducers, which carry no types)
        out.update(status="out_of_resources", resource=m.group(1).strip(),  # type: ignore[call-overload]
                   required=int(m.group(2)), limit=int(m.group(3)))
        return out
    low = text.lower()
    if "illegal memory access" in low or "illegal address" in low:
        out["status"] = "illegal_address"
    elif "not supported" in low or "unsupported" in low or "no kernel image" in low:
        out["status"] = "unsupported"
    m = _CUDA_ERR.search(text)
    if m:
        out["cuda_error"] = m.group(1)
    return out
