"""A declared call on a GPU: its inputs made again from a seed with the recorded shapes, dtypes,
strides and alignment, one launch through the release's JIT (the same bound call the compile
was derived from), the outputs fingerprinted so stacks can be compared, determinism by
relaunching from the same inputs, and the launch timed with reprokit.harness.bench.

Which arguments are outputs is not declared: every tensor is filled from the seed, and those
the launch changed are the outputs. Each is recorded by its sha256 (equal across stacks means
bit-exact) and by float64 summaries (sum, abs-max, NaN count) that a comparison across stacks
holds to the dtype's tolerance (reprokit.harness.stats.TOLERANCES) when the bytes differ.
Recorded tensors from a trace are not read here yet: inputs always come from the seed.
"""

from __future__ import annotations

import hashlib
import traceback

from reprokit.harness import call, callcase, stats

SEED = 0
DETERMINISM_RUNS = 3


def make_tensor_factory(torch, device: str, seed: int = SEED):
    """A `tensor` maker for call.value_of: real tensors with the spec's shape, dtype, strides and
    alignment (the data pointer's largest power of two up to 16 is `align`), filled from one
    generator seeded with `seed`, in the order call.bind makes them (the kernel's parameter order)."""
    gen = torch.Generator(device="cpu")
    gen.manual_seed(seed)

    def make(spec: dict):
        dt = getattr(torch, spec.get("dtype", "float32"))
        shape = [int(n) for n in spec["tensor"]]
        strides = [int(s) for s in spec.get("strides") or _contiguous(shape)]
        align = int(spec.get("align", 16))
        item = torch.empty((), dtype=dt).element_size()
        span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
        # allocate 16 bytes more, then start `align` bytes past a 16-byte boundary (align < 16)
        pad = 16 // item + 1
        flat = torch.empty(span + 2 * pad, dtype=dt, device=device)
        base = flat.data_ptr()
        want = 0 if align >= 16 else align
        offset = next((k for k in range(2 * pad) if (base + k * item) % 16 == want), 0)
        vals = _random(torch, dt, span + 2 * pad, gen)
        flat.copy_(vals.to(device))
        return torch.as_strided(flat, shape, strides, storage_offset=offset)

    return make


def _contiguous(shape):
    out, acc = [], 1
    for n in reversed(shape):
        out.insert(0, acc)
        acc *= max(n, 1)
    return out


def _random(torch, dt, n: int, gen):
    if dt.is_floating_point:
        return torch.randn(n, generator=gen, dtype=torch.float32).to(dt)
    if dt == torch.bool:
        return torch.randint(0, 2, (n,), generator=gen).bool()
    return torch.randint(0, 16, (n,), generator=gen, dtype=torch.int64).to(dt)


def _tensors(kwargs: dict) -> dict:
    """name -> tensor for every tensor argument, host descriptors' bases included."""
    out = {}
    for name, v in sorted(kwargs.items()):
        base = getattr(v, "base", None) if type(v).__name__ == "TensorDescriptor" else v
        if hasattr(base, "data_ptr") and hasattr(base, "dtype") and hasattr(base, "stride"):
            out[name] = base
    return out


def digest(torch, t) -> str:
    raw = t.detach().contiguous().cpu().reshape(-1).view(torch.uint8)  # any dtype, bf16 and fp8 too
    return hashlib.sha256(raw.numpy().tobytes()).hexdigest()


def summary(torch, t) -> dict:
    f = t.detach().double()
    return {"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape), "sha256": digest(torch, t),
            "sum": float(f.nan_to_num(nan=0.0).sum().item()),
            "absmax": float(f.nan_to_num(nan=0.0).abs().max().item()) if t.numel() else 0.0,
            "nan": int(torch.isnan(f).sum().item())}


def launch_and_check(torch, obj, case: dict, device: str, seed: int = SEED, runs: int = DETERMINISM_RUNS):
    """Launch the call once per run from the same seeded inputs: (the bound call, its launch
    callable, the record: outputs and determinism). Used on a GPU and, on the CPU, under the
    interpreter."""
    b = call.bind(obj, case["call"], (case.get("autotune") or {}).get("config"),
                  tensor=make_tensor_factory(torch, device, seed))
    tensors = _tensors(b.kwargs)
    initial = {name: t.clone() for name, t in tensors.items()}

    def launch():
        return b.inner[b.grid](**b.kwargs)

    def restore():
        for name, t in tensors.items():
            t.copy_(initial[name])

    digests = []
    for _ in range(runs):
        restore()
        launch()
        if device != "cpu":
            torch.cuda.synchronize()
        digests.append({name: digest(torch, t) for name, t in tensors.items()})
    changed = [n for n in tensors if digest(torch, initial[n]) != digests[0][n]]
    rec = {"seed": seed, "outputs": {n: summary(torch, tensors[n]) for n in changed},
           "determinism": {"runs": runs, "distinct": len({tuple(sorted(d.items())) for d in digests}),
                           "deterministic": all(d == digests[0] for d in digests)}}
    return b, launch, rec


def run_on_gpu(case: dict, plan: dict, kernels_dir: str, case_dir: str, aot_cubin_digest) -> dict:
    """The record's `gpu` for a declared call (see the module docstring)."""
    # the GPU parts (torch, NVML) load only in a case's process that launches.
    from reprokit.harness import bench, nvml

    # the GPU parts (torch, NVML) load only in a case's process that launches.
    from reprokit.harness import launch as suite_launch

    # the GPU parts (torch, NVML) load only in a case's process that launches.
    from reprokit.harness.toolbox import cubin_digest, load_kernel

    with suite_launch._gpu_lock():
        import torch
        import triton

        torch.cuda.init()
        suite_launch._set_allocator(torch, triton)  # device-side descriptors' scratch (3.4+)
        obj = load_kernel(kernels_dir, *callcase.kernel_ref(case))
        out = {"status": "ok", "device": torch.cuda.get_device_name(0)}
        try:
            b, launch, rec = launch_and_check(torch, obj, case, "cuda")
        except Exception as e:  # noqa: BLE001 - the launch's failure is this case's GPU result
            traceback.print_exc()
            out.update(stats.classify_launch_error(type(e).__name__, str(e)))
            return out
        out.update(rec)
        if not out["outputs"]:
            out["status"] = "no_output"  # the launch changed no tensor: nothing to compare
        elif not rec["determinism"]["deterministic"]:
            out["status"] = "nondeterministic"
        compiled = launch()
        if isinstance(getattr(compiled, "asm", None), dict) and "cubin" in compiled.asm:
            jit = cubin_digest(compiled.asm["cubin"])
            out["jit_cubin"] = {"sha256_less_debug_line": jit, "same_as_compiled": jit == aot_cubin_digest}
        res = bench.compare({"kernel": launch}, nvml.index_for_cuda_device(0))
        res.pop("raw", None)
        out["bench"] = [{"size": {"elements": sum(t.numel() for t in _tensors(b.kwargs).values())}, **res}]
        del b
        torch.cuda.empty_cache()
    return out


def compare_outputs(a: dict, b: dict) -> dict:
    """Two records' outputs (from two stacks): bit-exact where the digests agree, else within
    the dtype's tolerance by their summaries; {name: "exact" | "close" | "differs" | "missing"}."""
    out = {}
    for name in sorted(set(a) | set(b)):
        x, y = a.get(name), b.get(name)
        if x is None or y is None:
            out[name] = "missing"
        elif x["sha256"] == y["sha256"]:
            out[name] = "exact"
        elif x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
            out[name] = "differs"
        else:  # integer outputs have no tolerance: only bit-exact passes
            try:
                tol = stats.tolerance(x["dtype"])
            except ValueError:
                out[name] = "differs"
                continue
            n = 1
            for d in x["shape"]:
                n *= d
            # a sum of n elements each within atol + rtol*|y|: within n*atol + rtol*(n*absmax)
            close = (abs(x["sum"] - y["sum"]) <= n * (tol["atol"] + tol["rtol"] * y["absmax"])
                     and abs(x["absmax"] - y["absmax"]) <= tol["atol"] + tol["rtol"] * y["absmax"]
                     and x["nan"] == y["nan"])
            out[name] = "close" if close else "differs"
    return out
