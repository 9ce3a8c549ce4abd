"""A traced program's generated kernels as plan cases: one `kind: "generated"` case per distinct
compile that the program made itself through `triton.compile` (Inductor's kernels, and its
autotune candidates), beside trace/plan.py's call cases.

The records come from reprokit.trace.inprogram.listen, in every process of the program (compile workers
included): a `compiled` record per compile (one per cache key: a worker's compile that the
main process loads again is one case), and a `generated_launch` record per Inductor kernel that
launched, naming the compile it ran (its cache key) and how many configs its autotuner had.
The case carries the ASTSource as recorded (harness.kinds.generated recreates it) and, in `trace`,
the digests of the program's own compile, which the capture must match.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Iterable, Sequence

_SLUG = re.compile(r"[^a-z0-9_.-]+")


def compiled(records: Iterable[Any]) -> list[Any]:
    """The distinct `compiled` records, in the order first seen (one per cache key)."""
    out, seen = [], set()
    for r in records:
        if r["type"] == "compiled" and r["key"] not in seen:
            seen.add(r["key"])
            out.append(r)
    return out


def launches(records: Iterable[Any]) -> dict[str, Any]:
    """cache key -> the `generated_launch` record of the compile Inductor launched."""
    return {r["key"]: r for r in records if r["type"] == "generated_launch" and r.get("key")}


def cases(records: Sequence[Any], taken: set[Any], triton: str | None, timeout_s: float, defaults: tuple[Any, ...]) -> list[Any]:
    """Plan cases of the generated kernels (ids not in `taken`)."""
    ran = launches(records)
    counts: dict[str, Any] = {}  # cache key -> launches, summed over the program's processes
    for r in records:
        if r["type"] == "generated_launches":
            for k, n in r["launches"].items():
                counts[k] = counts.get(k, 0) + int(n)
    tuned = {}  # (module path, kernel) -> the launch of an autotuned kernel (several configs)
    for r in ran.values():
        if int(r.get("configs") or 0) > 1:
            tuned[((r.get("source") or {}).get("path"), r["kernel"])] = r
    out: list[Any] = []
    per_kernel: dict[str, int] = {}
    for r in compiled(records):
        base = _SLUG.sub("-", r["kernel"].lower()).strip("-.") or "kernel"
        if not base[0].isalnum():
            base = "k" + base
        k = per_kernel.get(base, 0)
        while True:
            k += 1
            cid = f"{base}.{k}"
            if cid not in taken:
                break
        per_kernel[base] = k
        taken.add(cid)
        src = r.get("source") or {}
        opts = r.get("options") or {}
        trace = {"generated": r["seq"], "launched": r["key"] in ran, "launches": counts.get(r["key"], 0),
                 "cache_key": r["key"], "triton": triton,
                 "digests": dict(r.get("digests") or {}), "source": {"line": src.get("line")}}
        if r.get("toolchain"):  # a ptxas or libdevice the program chose (harness.toolchain uses it again)
            trace["toolchain"] = r["toolchain"]
        tune = tuned.get((src.get("path"), r["kernel"]))
        if tune is not None:
            trace["autotune"] = {"configs": int(tune["configs"]), "chosen": r["key"] == tune["key"]}
        elif ran and r["key"] not in ran:
            # compiled, never launched, while the program launched other generated kernels: what
            # Inductor's max-autotune benchmarks (template choices, each a kernel of its own) and drops
            trace["candidate"] = True
        out.append({
            "id": cid, "kind": "generated", "family": r["kernel"], "control": "generated",
            "description": f"{r['kernel']}, compiled by the program with triton.compile",
            "kernel": {"file": r["file"], "function": r["kernel"]},
            "generated": {"signature": r["signature"], "constants": r["constants"], "attrs": r["attrs"],
                          "options": {k: v for k, v in opts.items() if k not in ("num_warps", "num_stages")},
                          "helpers": list(r.get("helpers") or []), "target": r.get("target") or {}},
            "signature": {}, "constexprs": {}, "divisible_by_16": [],
            "num_warps": int(opts.get("num_warps", defaults[0])), "num_stages": int(opts.get("num_stages", defaults[1])),
            "requires": [], "expect": None, "gated_by": None, "timeout_s": float(timeout_s),
            "trace": trace,
        })
    return out


def seed(records: Sequence[Any], dest: Path) -> int:
    """Copy the program's own compiles (Triton cache entries, by key) that the plan's traced cases
    name into `dest`: the capture starts from them on the same release (harness.kinds.generated.seeded).
    Returns how many were copied; one the program's cache no longer holds is compiled again."""
    done = 0
    for r in records:
        key, root = r.get("key"), r.get("cache_root")
        if r["type"] not in ("compiled", "digest") or not key or not root or (dest / key).exists():
            continue
        src = Path(root) / key
        if src.is_dir():
            shutil.copytree(src, dest / key)
            done += 1
    return done
