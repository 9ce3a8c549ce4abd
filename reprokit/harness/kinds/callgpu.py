"""A declared or traced call on a GPU: its inputs (the tensors a trace recorded, else made again
from a seed with the recorded shapes, dtypes, strides and alignment), one launch through the
release's JIT (the same bound call the compile was derived from), determinism by relaunching
from the same inputs, the outputs fingerprinted and checked against the outputs the trace
recorded, and the launch timed with reprokit.harness.bench.

Which arguments are outputs is not declared: those the launch changed (or the recorded launch
changed) are the outputs. Each is recorded by its sha256 (equal across stacks means bit-exact),
float64 summaries (sum, abs-max, NaN count) and `probe`, its values at up to PROBES fixed
places, so two bundles are compared without the tensors: bit-exact where the digests agree,
else the probes held to the dtype's tolerance (reprokit.harness.stats.TOLERANCES). Against a
recorded output (`reference`) the whole tensor is compared here: its digest, and where the bytes
differ the max abs and max rel error and whether every element is within the tolerance.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import traceback
import zipfile

from reprokit.common import shapes
from reprokit.harness import call, stats, tmafill
from reprokit.harness.kinds import callcase
from reprokit.harness.turns import GpuLock, Turns

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
        strides = [int(s) for s in spec.get("strides") or shapes.contiguous_strides(shape)]
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

    def aliased(group: dict, specs: dict) -> dict:
        """The tensors of one alias group (recorder.aliases: `bytes`, `align`, `at` byte offsets)
        as views of one memory, filled once with the first member's dtype: an in-place launch
        reads and writes the same bytes, as it did in the program."""
        size = int(group["bytes"])
        raw = torch.empty(size + 32, dtype=torch.uint8, device=device)
        want = 0 if int(group.get("align", 16)) >= 16 else int(group.get("align", 16))
        start = next((k for k in range(32) if (raw.data_ptr() + k) % 16 == want), 0)
        first = min(specs, key=lambda n: int(group["at"][n]))
        dt0 = getattr(torch, specs[first].get("dtype", "float32"))
        n0 = size // torch.empty((), dtype=dt0).element_size()
        raw[start:start + n0 * torch.empty((), dtype=dt0).element_size()].view(dt0).copy_(
            _random(torch, dt0, n0, gen).to(device))
        out = {}
        for name, spec in specs.items():
            dt = getattr(torch, spec.get("dtype", "float32"))
            item = torch.empty((), dtype=dt).element_size()
            shape = [int(n) for n in spec["tensor"]]
            strides = [int(s) for s in spec.get("strides") or shapes.contiguous_strides(shape)]
            span = 1 + sum((n - 1) * s for n, s in zip(shape, strides)) if all(shape) else 0
            at = start + int(group["at"][name])
            view = raw[at:at + span * item].view(dt)
            out[name] = torch.as_strided(view, shape, strides, storage_offset=view.storage_offset())
        return out

    make.aliased = aliased  # type: ignore[attr-defined]
    return make


def _write(t, src):
    """t.copy_(src), also into a view whose elements share memory along a stride-0 dimension (an
    `expand`: the gradient of a `.sum()` a backward kernel reads), which copy_ refuses: through
    the first element of each such dimension, the one its memory holds."""
    pick = tuple(slice(0, 1) if n > 1 and s == 0 else slice(None) for n, s in zip(t.shape, t.stride()))
    if any(p != slice(None) for p in pick):
        return t[pick].copy_(src[pick])
    return t.copy_(src)


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
        if isinstance(v, (tuple, list)):  # a tuple argument: its members as `name.i`
            out.update({f"{name}.{k}": t for k, t in _tensors({str(i): x for i, x in enumerate(v)}).items()})
            continue
        base = getattr(v, "base", None) if type(v).__name__ == "TensorDescriptor" else v
        if hasattr(base, "data_ptr") and hasattr(base, "dtype") and hasattr(base, "stride"):
            out[name] = base
    return dict(sorted(out.items()))


def digest(torch, t) -> str:
    raw = t.detach().contiguous().cpu().reshape(-1).view(torch.uint8)  # any dtype, bf16 and fp8 too
    return hashlib.sha256(raw.numpy().tobytes()).hexdigest()


# Values kept per output at fixed places (evenly spread over the flattened tensor), so two
# bundles' outputs are compared elementwise, within the dtype's tolerance, without the tensors.
PROBES = 64


def _plain(x: float):
    """A float as JSON holds it: NaN and infinities as strings."""
    return x if x == x and abs(x) != float("inf") else str(x)


def summary(torch, t) -> dict:
    f = t.detach().double()
    flat = f.reshape(-1)
    n = flat.numel()
    idx = sorted({(i * n) // PROBES for i in range(min(n, PROBES))})
    return {"dtype": str(t.dtype).split(".")[-1], "shape": list(t.shape), "sha256": digest(torch, t),
            "sum": float(f.nan_to_num(nan=0.0).sum().item()),
            "absmax": float(f.nan_to_num(nan=0.0).abs().max().item()) if t.numel() else 0.0,
            "nan": int(torch.isnan(f).sum().item()),
            "probe": [_plain(float(flat[i].item())) for i in idx]}


def against(torch, out, ref, dtype: str) -> dict:
    """`out` against the recorded `ref` (same shape): bit-exact by digest, else the largest
    absolute and relative errors and whether every element is within the dtype's tolerance
    (NaN where the reference has NaN passes; integers and bools have no tolerance)."""
    rec: dict = {"sha256": digest(torch, ref)}
    if list(out.shape) != list(ref.shape) or out.dtype != ref.dtype:
        rec.update(match="differs", why=f"recorded {str(ref.dtype).split('.')[-1]} {list(ref.shape)}")
        return rec
    if rec["sha256"] == digest(torch, out):
        rec["match"] = "exact"
        return rec
    a, r = out.detach().double().reshape(-1), ref.detach().to(out.device).double().reshape(-1)
    both_nan = torch.isnan(a) & torch.isnan(r)
    err = (a - r).abs().masked_fill(both_nan, 0.0)
    rel = err / r.abs().clamp_min(1e-30)
    rec["max_abs"] = _plain(float(err.max().item())) if err.numel() else 0.0
    rec["max_rel"] = _plain(float(rel.max().item())) if rel.numel() else 0.0
    try:
        tol = stats.tolerance(dtype)
    except ValueError:
        rec["match"] = "differs"  # no tolerance for this dtype: only bit-exact passes
        return rec
    rec["tolerance"] = {"rtol": tol["rtol"], "atol": tol["atol"]}
    # NaN compares False: an element NaN on one side only fails
    ok = bool((err <= tol["atol"] + tol["rtol"] * r.abs()).all().item())
    rec["match"] = "close" if ok else "differs"
    return rec


def recorded_tensors(torch, root: str, case: dict) -> dict:
    """The tensors a trace kept for this case's first launch: {"inputs": {name: tensor},
    "outputs": {...}, "files": {...}} (empty where none were kept). A file that is named but
    cannot be read raises ValueError in one line."""
    n = (case.get("trace") or {}).get("n")
    out: dict = {"inputs": {}, "outputs": {}, "files": {}}
    if not isinstance(n, int) or root is None:
        return out
    for when in ("inputs", "outputs"):
        rel = f"trace/tensors/{n:04d}.{when}.pt"
        path = os.path.join(root, rel)
        if not os.path.exists(path):
            continue
        try:
            kept = torch.load(path, map_location="cpu", weights_only=True)
        except (RuntimeError, OSError, EOFError, ValueError, pickle.UnpicklingError, zipfile.BadZipFile) as e:
            raise ValueError(f"recorded tensors {rel} cannot be read: {type(e).__name__}: {str(e).splitlines()[0]}"
                             ) from None
        if not isinstance(kept, dict) or not all(hasattr(t, "dtype") for t in kept.values()):
            raise ValueError(f"recorded tensors {rel} hold no name -> tensor mapping")
        out[when] = dict(kept)
        out["files"][when] = rel
    return out


def _by_name(kept: dict, names) -> dict:
    """Recorded tensors by parameter name; older traces named positional arguments `arg<i>`."""
    names = list(names)
    out = {}
    for key, t in kept.items():
        if key.startswith("arg") and key[3:].isdigit() and int(key[3:]) < len(names):
            key = names[int(key[3:])]
        out[key] = t
    return out


def launch_and_check(torch, obj, case: dict, device: str, seed: int = SEED, runs: int = DETERMINISM_RUNS,
                     recorded=None, fill=None):
    """Launch the call once per run from the same inputs: (the bound call, its launch callable,
    the record: inputs, outputs and determinism). Inputs are the `recorded` ones
    (recorded_tensors) where kept, else made from `seed`; outputs are checked against the
    recorded outputs where kept. Used on a GPU and, on the CPU, under the interpreter.
    3.0-3.3 host-filled descriptors (`trace.tma_fills`) are filled again over base tensors of
    the replay's own, by `fill` (default: the release's own functions, harness/tmafill.py);
    each base stands for its descriptor in the inputs and outputs."""
    factory = make_tensor_factory(torch, device, seed)
    b = call.bind(obj, case["call"], (case.get("autotune") or {}).get("config"), tensor=factory)
    tensors = _tensors(b.kwargs)
    # An argument that is the very view of another (dX written into dY) is that one: its bytes
    # are restored, compared and recorded once, under the first name.
    same = _same_views(tensors)
    for name in same:
        tensors.pop(name)
    rebuilds = tmafill.plan(case)
    if rebuilds:
        if fill is None:
            import triton

            fill = tmafill.release_fill(triton)
        for r in rebuilds:
            tensors.pop(r.param, None)  # the 128 bytes: what the kernel reads through them is the base
        tensors.update(tmafill.rebuild(torch, b.kwargs, rebuilds, factory, fill))
        tensors = dict(sorted(tensors.items()))
    recorded = recorded or {"inputs": {}, "outputs": {}, "files": {}}
    names = getattr(b.jf, "arg_names", None) or list(b.kwargs)
    rin, rout = _by_name(recorded["inputs"], names), _by_name(recorded["outputs"], names)
    seeded = {name: t.clone() for name, t in tensors.items()} if rin else None
    used = {}
    for name, t in tensors.items():
        r = rin.get(name)
        if r is None:
            used[name] = "seed"
        elif list(r.shape) != list(t.shape) or r.dtype != t.dtype:
            raise ValueError(f"recorded input {name} is {str(r.dtype).split('.')[-1]} {list(r.shape)}, the call "
                             f"says {str(t.dtype).split('.')[-1]} {list(t.shape)}")
        else:
            _write(t, r.to(device))
            used[name] = "recorded"
    initial = {name: t.clone() for name, t in tensors.items()}

    def launch():
        return b.inner[b.grid](**b.kwargs)

    def restore():
        for name, t in tensors.items():
            _write(t, initial[name])

    digests = []
    for _ in range(runs):
        restore()
        launch()
        if device != "cpu":
            torch.cuda.synchronize()
        digests.append({name: digest(torch, t) for name, t in tensors.items()})
    changed = [n for n in tensors if digest(torch, initial[n]) != digests[0][n]]
    # what the recorded launch changed is an output too, even where this launch left it alone
    changed += [n for n in sorted(rout) if n in tensors and n not in changed and n in rin
                and digest(torch, rin[n]) != digest(torch, rout[n])]
    if not changed and seeded is not None:
        # The recorded inputs already held what the launch writes (an autotuner's second config
        # is recorded after the first one wrote the output): find the outputs from seeded values.
        for name, t in tensors.items():
            _write(t, seeded[name])
        launch()
        if device != "cpu":
            torch.cuda.synchronize()
        changed = [n for n in tensors if digest(torch, tensors[n]) != digest(torch, seeded[n])]
        restore()
        launch()
        if device != "cpu":
            torch.cuda.synchronize()
    del seeded
    outputs = {}
    for n in changed:
        outputs[n] = summary(torch, tensors[n])
        if n in rout:
            outputs[n]["reference"] = {"file": recorded["files"]["outputs"],
                                       **against(torch, tensors[n], rout[n], outputs[n]["dtype"])}
    rec = {"seed": seed,
           "inputs": {"tensors": dict(sorted(used.items())), "file": recorded["files"].get("inputs"),
                      "source": _source(used),
                      "sha256": {n: digest(torch, initial[n]) for n in sorted(initial)},
                      **({"same_as": dict(sorted(same.items()))} if same else {})},
           "outputs": outputs,
           "determinism": {"runs": runs, "distinct": len({tuple(sorted(d.items())) for d in digests}),
                           "deterministic": all(d == digests[0] for d in digests)}}
    return b, launch, rec


def _same_views(tensors: dict) -> dict:
    """name -> the earlier argument it is the same view of (address, dtype, shape, strides)."""
    seen: dict = {}
    same: dict = {}
    for name, t in tensors.items():
        key = (t.data_ptr(), t.dtype, tuple(t.shape), tuple(t.stride()))
        if key in seen and t.numel():
            same[name] = seen[key]
        else:
            seen.setdefault(key, name)
    return same


def _source(used: dict) -> str:
    kinds = set(used.values())
    return "none" if not kinds else kinds.pop() if len(kinds) == 1 else "mixed"


def run_on_gpu(case: dict, plan: dict, kernels_dir: str, case_dir: str, aot_cubin_digest) -> dict:
    """The record's `gpu` for a declared call (see the module docstring)."""
    # the GPU parts (torch, NVML) load only in a case's process that launches.
    from reprokit.harness import bench, nvml

    # the GPU parts (torch, NVML) load only in a case's process that launches.
    from reprokit.harness.kinds import launch as suite_launch

    # the GPU parts (torch, NVML) load only in a case's process that launches.
    from reprokit.harness.toolbox import case_timeout, cubin_digest, load_kernel

    why = host_filled_descriptors(case_dir, case)
    if why:
        return {"status": "not_launched", "reason": why}
    with GpuLock():
        import torch
        import triton

        torch.cuda.init()
        suite_launch._set_allocator(torch, triton)  # device-side descriptors' scratch (3.4+)
        obj = load_kernel(kernels_dir, *callcase.kernel_ref(case))
        out = {"status": "ok", "device": torch.cuda.get_device_name(0)}
        try:
            recorded = recorded_tensors(torch, os.path.dirname(os.path.abspath(kernels_dir)), case)
        except ValueError as e:  # an unreadable recorded tensor: this case's finding, in one line
            return {"status": "harness_error", "error": str(e)}
        try:
            b, launch, rec = launch_and_check(torch, obj, case, "cuda", recorded=recorded)
        except Exception as e:  # noqa: BLE001 - the launch's failure is this case's GPU result
            traceback.print_exc()
            out.update(stats.classify_launch_error(type(e).__name__, str(e)))
            return out
        out.update(rec)
        out["status"] = status_of(rec)
        compiled = launch()
        if isinstance(getattr(compiled, "asm", None), dict) and "cubin" in compiled.asm:
            jit = cubin_digest(compiled.asm["cubin"])
            out["jit_cubin"] = {"sha256_less_debug_line": jit, "same_as_compiled": jit == aot_cubin_digest}
        turns = Turns.of(case["id"], case_timeout(case, plan))
        res = bench.compare({"kernel": launch}, nvml.index_for_cuda_device(0), turns=turns)
        res.pop("raw", None)
        sizes = {n: t.numel() for n, t in _tensors(b.kwargs).items()}
        for r in tmafill.plan(case):  # a host-filled descriptor counts as the tensor it points into
            sizes[r.param] = 0 if r.shares else tmafill.numel(r.base["tensor"])
        out["bench"] = [{"size": {"elements": sum(sizes.values())}, **res}]
        del b
        torch.cuda.empty_cache()
    return out


def host_filled_descriptors(case_dir: str, case=None):
    """Why the compiled case cannot be launched again, or None. 3.0-3.3's experimental TMA
    descriptors (`tt.experimental_descriptor_load`/`_store` in the TTIR) are 128-byte tensors
    that the program filled on the host (fill_1d/2d_tma_descriptor) with the global address of
    a tensor of its own: seeded bytes are no descriptor, and recorded bytes point into the traced
    process's memory, so either launch would fault. A trace that recorded the fills
    (`trace.tma_fills`) covering every such argument is filled again by the replay instead."""
    path = os.path.join(case_dir, "kernel.ttir")
    if not os.path.exists(path):
        return None
    with open(path, encoding="utf-8", errors="replace") as f:
        if "experimental_descriptor_" not in f.read():
            return None
    if case is not None and (case.get("trace") or {}).get("tma_fills"):
        left = tmafill.unfilled(case)
        if not left:
            return None
        return (f"no recorded fill for the host-filled TMA descriptor argument(s) {', '.join(left)} "
                "(3.0-3.3 experimental descriptors): a replay has no valid descriptor to launch them with")
    return ("its TMA descriptors are host-filled bytes (3.0-3.3 experimental descriptors) holding addresses "
            "of the traced process: a replay has no valid descriptor to launch with")


def status_of(rec: dict) -> str:
    """ok; wrong (an output differs from the recorded one beyond its dtype's tolerance);
    no_output (the launch changed no tensor: nothing to compare); nondeterministic."""
    if not rec["outputs"]:
        return "no_output"
    if any((o.get("reference") or {}).get("match") == "differs" for o in rec["outputs"].values()):
        return "wrong"
    if not rec["determinism"]["deterministic"]:
        return "nondeterministic"
    return "ok"


def compare_outputs(a: dict, b: dict, deterministic: tuple = (False, False)) -> dict:
    """Two records' outputs (from two stacks or two runs): {name: "exact" | "close" | "inexact" |
    "differs" | "missing"}: exact where the digests agree; else the probes (older records: the
    sums and abs-max) within the dtype's tolerance, and neither side off its recorded reference
    where the other is on it: "close", or "inexact" where both runs were deterministic (such a
    kernel must give the same bytes); beyond the tolerance, or an integer dtype, "differs"."""
    return {name: compare_output(a.get(name), b.get(name), deterministic)["match"]
            for name in sorted(set(a) | set(b))}


def compare_output(x, y, deterministic: tuple = (False, False)) -> dict:
    """One output of two records: {"match", and where the bytes differ "max_abs", "max_rel"
    over the probes} (see compare_outputs)."""
    if x is None or y is None:
        return {"match": "missing"}
    if x["sha256"] == y["sha256"]:
        return {"match": "exact"}
    if x["dtype"] != y["dtype"] or x["shape"] != y["shape"]:
        return {"match": "differs"}
    try:
        tol = stats.tolerance(x["dtype"])
    except ValueError:
        return {"match": "differs"}  # integer outputs have no tolerance: only bit-exact passes
    rx, ry = x.get("reference") or {}, y.get("reference") or {}
    if rx.get("sha256") and rx.get("sha256") == ry.get("sha256") and \
            (rx.get("match") == "differs") != (ry.get("match") == "differs"):
        return {"match": "differs", "why": "one is off the recorded output, the other is not"}
    if x.get("probe") is not None and y.get("probe") is not None and len(x["probe"]) == len(y["probe"]):
        out = probe_error(x["probe"], y["probe"], tol)
    else:
        n = 1
        for d in x["shape"]:
            n *= d
        # a sum of n elements each within atol + rtol*|y|: within n*atol + rtol*(n*absmax)
        ok = (abs(x["sum"] - y["sum"]) <= n * (tol["atol"] + tol["rtol"] * y["absmax"])
              and abs(x["absmax"] - y["absmax"]) <= tol["atol"] + tol["rtol"] * y["absmax"])
        out = {"within": ok}
    ok = out.pop("within") and x["nan"] == y["nan"]
    out["match"] = ("inexact" if all(deterministic) else "close") if ok else "differs"
    return out


def probe_error(px: list, py: list, tol: dict) -> dict:
    """Largest absolute and relative difference of two probe lists, and whether each pair is
    within atol + rtol * |y| (NaN or an infinity must be the same on both sides)."""
    worst_abs = worst_rel = 0.0
    within = True
    for a, b in zip(px, py):
        if isinstance(a, str) or isinstance(b, str):
            within = within and a == b
            continue
        e = abs(a - b)
        worst_abs = max(worst_abs, e)
        worst_rel = max(worst_rel, e / max(abs(b), 1e-30))
        within = within and e <= tol["atol"] + tol["rtol"] * abs(b)
    return {"within": within, "max_abs": worst_abs, "max_rel": worst_rel}
