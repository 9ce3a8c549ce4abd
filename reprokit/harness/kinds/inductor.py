"""torch.compile cases: a matmul compiled with mode="max-autotune", the Triton kernels Inductor
generated kept, and the oracle run on them. It tests the public claim that TMA engages by itself.

    compile_case(case, plan, kernels_dir, case_dir) -> record    (the case's process, on a GPU)

Inductor writes every kernel it generates (the candidates autotuning compared, and the one it
chose) as Python source under TORCHINDUCTOR_CACHE_DIR and compiles them with Triton into
TRITON_CACHE_DIR; both are fresh per case. The wrapper code Inductor returns says which kernel
it chose (`<name>.run(...)`, or `extern_kernels.mm(...)` when cuBLAS won). The case's IR
artifacts are those of the chosen Triton kernel (else of the first candidate that shows TMA,
else of the first candidate), so the oracle's verdict is about a kernel Inductor really made;
`inductor` in the record says which, for every kernel, and with which Inductor settings.

The parsing below works on plain text and is tested on the CPU; compiling needs a GPU.
Standard library + torch + triton, Python >= 3.9.
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from reprokit.common import oracle
from reprokit.harness.toolbox import disassemble, load_kernel
from reprokit.harness.turns import GpuLock

MODE = "max-autotune"
# Inductor settings that decide whether its GEMM templates use TMA, and how it autotunes.
SETTING_NAMES = ("max_autotune", "max_autotune_gemm", "max_autotune_gemm_backends", "max_autotune_gemm_search_space",
                 "coordinate_descent_tuning", "triton.cudagraphs", "triton.enable_persistent_tma_matmul",
                 "triton.enable_template_tma_store", "triton.enable_tma_load_for_template_epilogue",
                 "triton.use_tensor_descriptor", "triton.use_block_ptr", "triton.native_matmul")
# TMA in a kernel's Python source, as Inductor's templates write it across torch releases.
_TMA_SOURCE = re.compile(r"\b(make_tensor_descriptor|_experimental_make_tensor_descriptor|_experimental_descriptor_load|"
                         r"_experimental_descriptor_store|load_tensor_descriptor|store_tensor_descriptor|TensorDescriptor|"
                         r"create_[12]d_tma_descriptor|experimental_device_tensormap_create[12]d|tensormap_create[12]d)\b")
_KERNEL_DEF = re.compile(r"(?:^# kernel path: (?P<path>\S+)\n(?:#[^\n]*\n)*)?^(?P<var>\w+) = async_compile\.triton\("
                         r"'(?P<name>\w+)', '''\n(?P<src>.*?)''', device_str='(?P<device>\w+)'\)", re.M | re.S)
_TMA_WORD = re.compile(r"(?:^|[._])tma(?:[._]|$)", re.I)  # cutlass_tma_only, not online_softmax
_TTIR_FILE = re.compile(r'loc\("([^"]+\.py)"')
IR_LEVELS = ("ttir", "ttgir", "llir", "ptx")
# Disassemblers run side by side when a case keeps many kernels (a CPU each, for half a second).
DISASSEMBLERS_AT_ONCE = min(8, os.cpu_count() or 1)


def tma_in_source(src: str) -> dict:
    """{TMA API name: uses} in a kernel's Python source."""
    out: dict = {}
    for m in _TMA_SOURCE.finditer(src):
        out[m.group(1)] = out.get(m.group(1), 0) + 1
    return dict(sorted(out.items()))


def wrapper_kernels(code: str) -> list:
    """The Triton kernels an Inductor wrapper defines: [{"name", "path", "source"}], in order."""
    return [{"name": m.group("name"), "var": m.group("var"), "path": m.group("path"), "source": m.group("src")}
            for m in _KERNEL_DEF.finditer(code)]


def chosen(code: str) -> list:
    """What the wrapper runs: Triton kernels by name (`<var>.run(`) and extern kernels (cuBLAS) by
    call, in order. Searched everywhere outside the kernels' own sources: torch 2.11 runs them
    from `partition_N` functions that `call` reaches through a Runner, not from `call` itself."""
    defined = {k["var"]: k["name"] for k in wrapper_kernels(code)}
    outside = _KERNEL_DEF.sub("", code)
    out = []
    for m in re.finditer(r"\b(\w+)\.run\(|\b(extern_kernels\.\w+)\(", outside):
        name = defined.get(m.group(1)) if m.group(1) else m.group(2)
        if name and name not in out:
            out.append(name)
    return out


_AUTOTUNE_ROW = re.compile(r"^  (\w+) (\d+(?:\.\d+)?) ms (\d+(?:\.\d+)?)%(?: (.*))?$", re.M)


def autotune_table(log: str) -> list:
    """Inductor's AUTOTUNE table as it prints it (the best choices, fastest first): [{"choice",
    "ms", "percent", "config"}]. The first is what it picked."""
    start = log.find("AUTOTUNE ")
    if start < 0:
        return []
    rows: list = []
    for m in _AUTOTUNE_ROW.finditer(log, start):
        if rows and m.start() > rows[-1]["_end"] + 1:
            break  # the table ended
        rows.append({"choice": m.group(1), "ms": float(m.group(2)), "percent": float(m.group(3)),
                     "config": (m.group(4) or "").strip(), "_end": m.end()})
    for r in rows:
        del r["_end"]
    return rows


def settings(torch, options: dict) -> dict:
    """The Inductor settings the compile ran with: this torch's defaults for SETTING_NAMES (and any
    other knob naming TMA) overlaid with the mode's and the case's options."""
    cfg = torch._inductor.config
    try:
        everything = cfg.get_config_copy()
    except AttributeError:  # old torch: read the names one by one
        everything = {}
    names = set(SETTING_NAMES) | {k for k in everything if _TMA_WORD.search(k)}
    out = {}
    for name in sorted(names):
        value = everything.get(name, _dotted(cfg, name))
        if value is not _MISSING:
            out[name] = value if isinstance(value, (bool, int, float, str, type(None))) else repr(value)
    out.update({k: v if isinstance(v, (bool, int, float, str, type(None))) else repr(v) for k, v in options.items()})
    return out


_MISSING = object()


def _dotted(obj, name: str):
    for part in name.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return _MISSING
    return obj


def compiled_kernels(*roots: str) -> list:
    """Every kernel Triton compiled under `roots` (TRITON_CACHE_DIR, and the fresh caches Inductor
    makes inside its own cache dir when caches are off): [{"key", "name", "source_path",
    "files": {level: path}}], one per folder holding a cubin, in path order."""
    out, seen = [], set()
    for root in roots:
        for d, _, names in sorted(os.walk(root)) if os.path.isdir(root) else ():
            cubins = [f for f in names if f.endswith(".cubin")]
            if len(cubins) != 1 or os.path.realpath(d) in seen:
                continue
            seen.add(os.path.realpath(d))
            name = cubins[0][:-len(".cubin")]
            files = {f.rsplit(".", 1)[1]: os.path.join(d, f) for f in sorted(names)
                     if f.startswith(name + ".") and not f.startswith("__grp__")}
            source_path = None
            if "ttir" in files:
                with open(files["ttir"], errors="replace") as f:
                    m = _TTIR_FILE.search(f.read())
                source_path = m.group(1) if m else None
            out.append({"key": os.path.basename(d), "name": name, "source_path": source_path, "files": files})
    return out


def pick_judged(kernels: list) -> tuple:
    """(kernel, why) whose IR the case's verdict is about: see the module docstring."""
    for k in kernels:
        if k.get("chosen"):
            return k, "the Triton kernel Inductor chose"
    for k in kernels:
        if any(k.get("tma", {}).get(lv) for lv in oracle.LEVELS):
            return k, "Inductor chose no Triton kernel; the first candidate it compiled that shows TMA"
    if kernels:
        return kernels[0], "Inductor chose no Triton kernel, and no candidate shows TMA: the first candidate"
    return None, "Inductor compiled no Triton kernel"


def _unsupported(case: dict, why: str) -> dict:
    return {"id": case["id"], "status": "unsupported", "error": why, "artifacts": {}}


def compile_case(case: dict, plan: dict, kernels_dir: str, case_dir: str) -> dict:
    """Compile and run the case's function (kernels/<file>, e.g. a plain `a @ b`) with
    torch.compile on the GPU; keep what Inductor made."""
    if plan.get("mode") != "gpu":
        return _unsupported(case, "torch.compile max-autotune benchmarks on a GPU: it runs in GPU mode only")
    try:
        import torch
    except ImportError:
        return _unsupported(case, "torch is not installed in this stack")
    if not torch.cuda.is_available():
        return _unsupported(case, "torch sees no CUDA device")
    # The runner gave this process its own TRITON_CACHE_DIR; Inductor's cache goes beside it, fresh,
    # so that every kernel is generated and compiled here and nothing comes from an earlier run.
    triton_cache = os.environ["TRITON_CACHE_DIR"]
    inductor_cache = os.path.join(os.path.dirname(triton_cache), "inductor")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache
    os.environ["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] = "1"
    import torch._inductor.config

    torch._inductor.config.force_disable_caches = True  # in case torch read the variable before us

    return _compile_on_gpu(torch, case, plan, kernels_dir, case_dir, triton_cache)


def _turn_at_autotuning(turn: GpuLock, then):
    """Take the GPU when Inductor first times its candidates (AlgorithmSelectorCache.benchmark,
    which also makes their inputs), not before: Dynamo's trace, the lowering and the candidates'
    precompile are CPU work (about 3 of the 5 s a max-autotune mm compile takes on the H100),
    done while other cases use the GPU. Once taken the GPU stays this case's until the compile
    has run and been checked; `then()` runs once it is taken. Returns the undo, or None where
    this torch has no such method (the caller then takes the GPU for the whole compile)."""
    try:
        from torch._inductor.select_algorithm import AlgorithmSelectorCache
    except ImportError:
        return None
    original = AlgorithmSelectorCache.__dict__.get("benchmark")
    if not callable(original):
        return None

    def benchmark(self, *args, **kwargs):
        turn.take()
        then()
        return original(self, *args, **kwargs)

    AlgorithmSelectorCache.benchmark = benchmark
    return lambda: setattr(AlgorithmSelectorCache, "benchmark", original)


def _compile_on_gpu(torch, case: dict, plan: dict, kernels_dir: str, case_dir: str, triton_cache: str) -> dict:
    from torch._inductor import list_mode_options
    from torch._inductor.utils import run_and_get_code

    p = {**(plan.get("problem") or {}), **case.get("constexprs", {})}
    m, n, k = int(p.get("M", 4096)), int(p.get("N", 4096)), int(p.get("K", 4096))
    extra = dict(case.get("options") or {})
    options = {**list_mode_options(MODE), **extra}
    rec = {"id": case["id"], "status": "ok", "error": None, "artifacts": {}}
    info = {"mode": MODE, "options": extra, "problem": {"M": m, "N": n, "K": k, "dtype": "float16"},
            "torch": torch.__version__, "settings": settings(torch, options)}
    rec["inductor"] = info
    mm = load_kernel(kernels_dir, case["kernel"]["file"], case["kernel"]["function"])
    # mode= for the claim as users make it; options= (the mode's own plus the case's) otherwise,
    # since torch.compile takes one or the other.
    fn = torch.compile(mm, mode=MODE) if not extra else torch.compile(mm, options=options)
    # The GPU is this case's from Inductor's autotuning until its compiled code has run and been
    # checked; tracing and precompiling before, and keeping its kernels after (dozens of
    # disassemblies), are CPU work done while other cases use the GPU.
    # The inputs are allocated now (no kernel runs) and filled once the GPU is this case's: a
    # fill is a kernel, and waiting for the GPU to make them would put the whole compile after
    # every other case's benchmarks.
    a = torch.empty((m, k), device="cuda", dtype=torch.float16)
    b = torch.empty((k, n), device="cuda", dtype=torch.float16)
    filled: list = []

    def fill(inputs=(a, b)):
        if not filled:
            torch.manual_seed(0)
            for t in inputs:
                t.normal_()
            filled.append(True)

    # first in line: seconds of disassembly follow this turn, which then overlap the benchmarks
    turn = GpuLock(first=True)
    # Without GEMM autotuning nothing would take the GPU before the compiled code runs.
    autotunes = bool(options.get("max_autotune_gemm", options.get("max_autotune")))
    undo = _turn_at_autotuning(turn, then=fill) if autotunes else None
    if undo is None:
        turn.take()
        fill()
    info["gpu_turn"] = "from autotuning on" if undo else "the whole compile"
    try:
        t0 = time.perf_counter()
        out, codes = run_and_get_code(fn, a, b)
        turn.take()
        if not filled:  # nothing was autotuned: the compiled code ran on unfilled inputs, without the GPU
            info["gpu_turn"] = "from the compiled code's second run on (nothing was autotuned)"
            fill()
            out = fn(a, b)
        torch.cuda.synchronize()
        rec["compile_s"] = round(time.perf_counter() - t0, 4)
        ref = torch.mm(a, b)
        err = (out.float() - ref.float()).abs().max().item()
        info["check"] = {"max_abs_err": err, "ref": "torch.mm",
                         "ok": bool(err <= 1e-2 * max(1.0, ref.float().abs().max().item()))}
        del a, b, out, ref, fill
        torch.cuda.empty_cache()
    finally:
        if undo:
            undo()
        turn.give()
    t_keep = time.perf_counter()
    os.makedirs(os.path.join(case_dir, "inductor"), exist_ok=True)
    code = "\n".join(codes)
    with open(os.path.join(case_dir, "inductor", "output_code.py"), "w") as f:
        f.write(code)
    rec["artifacts"]["inductor_code"] = "inductor/output_code.py"
    info["chosen"] = chosen(code)
    sys.stderr.flush()  # Inductor printed its AUTOTUNE table there: the case's compile.log
    log_path = os.path.join(case_dir, "compile.log")
    if os.path.isfile(log_path):
        with open(log_path, errors="replace") as f:
            info["autotune"] = autotune_table(f.read())
    caches = [triton_cache, os.environ["TORCHINDUCTOR_CACHE_DIR"]]
    info["kernels"] = _keep_kernels(case_dir, code, caches, info["chosen"], plan)
    # Where the case's time went: waiting for the GPU, holding it, keeping its kernels after.
    info["phase_s"] = {"gpu_wait": round(turn.waited, 3), "gpu": round(turn.held, 3),
                       "keep": round(time.perf_counter() - t_keep, 3)}
    judged, why = pick_judged(info["kernels"])
    info["judged"] = {"key": judged["key"] if judged else None, "why": why}
    if judged is None:
        rec.update(status="compile_error", error=f"{why} (chosen: {', '.join(info['chosen']) or 'nothing'})")
        return rec
    for lv, path in judged["ir"].items():
        rec["artifacts"][lv] = path
    rec["tma"], rec["tma_ops"] = judged["tma"], judged["tma_ops"]
    info["tma_used"] = bool(judged.get("chosen") and any(judged["tma"].values()))
    tma_rows = [r for r in info.get("autotune", []) if "tma" in r["choice"]]
    best_tma = f"; its fastest TMA candidate {tma_rows[0]['choice']} ran at {tma_rows[0]['percent']:g}% of the " \
               f"winner's speed" if tma_rows else ""
    info["summary"] = (f"Inductor {MODE} chose {', '.join(info['chosen']) or 'nothing'}; "
                       f"{sum(1 for x in info['kernels'] if any(x['tma'].values()))} of {len(info['kernels'])} "
                       f"Triton kernels it compiled show TMA{best_tma}")
    return rec


def _keep_kernels(case_dir: str, code: str, caches: list, chosen_names: list, plan: dict) -> list:
    """Copy every compiled kernel's IR and source into the case folder, count its TMA ops.

    Each kernel's SASS costs a disassembler run of about 0.45 s whatever its size, and a
    max-autotune compile leaves 20-40 kernels whose cubins name a fresh temporary source path (so
    the SASS cache never holds them): they are disassembled side by side, not one after another."""
    defined = {k["name"]: k for k in wrapper_kernels(code)}
    by_path = {k["path"]: k for k in defined.values() if k["path"]}
    kernels = list(compiled_kernels(*caches))
    kept = []
    for i, k in enumerate(kernels):
        dest = os.path.join("inductor", f"{i:02d}-{k['name']}")
        os.makedirs(os.path.join(case_dir, dest), exist_ok=True)
        ir, texts = {}, {}
        for lv in (*IR_LEVELS, "cubin"):
            if lv in k["files"]:
                rel = f"{dest}/kernel.{lv}"
                shutil.copyfile(k["files"][lv], os.path.join(case_dir, rel))
                ir[lv] = rel
                if lv != "cubin":
                    with open(k["files"][lv], errors="replace") as f:
                        texts[lv] = f.read()
        kept.append((dest, ir, texts))
    wanted = [(dest, ir) for dest, ir, _ in kept if plan.get("sass", True) and "cubin" in ir]
    with ThreadPoolExecutor(max_workers=max(1, min(DISASSEMBLERS_AT_ONCE, len(wanted)))) as pool:
        # the threads wait on the disassembler's processes, so the GIL is no limit
        sass = dict(zip((dest for dest, _ in wanted),
                        pool.map(lambda w: disassemble(os.path.join(case_dir, w[1]["cubin"]))[0], wanted)))
    out = []
    for k, (dest, ir, texts) in zip(kernels, kept):
        if sass.get(dest) is not None:
            with open(os.path.join(case_dir, dest, "kernel.sass"), "w") as f:
                f.write(sass[dest])
            ir["sass"], texts["sass"] = f"{dest}/kernel.sass", sass[dest]
        source = None
        if k["source_path"] and os.path.isfile(k["source_path"]):
            with open(k["source_path"], errors="replace") as f:
                source = f.read()
            with open(os.path.join(case_dir, dest, "kernel.py"), "w") as f:
                f.write(source)
        # Tied to the wrapper by the source file's path; by name only where a path is missing on
        # either side (autotuning candidates share their names with the kernel that won).
        wrapped = by_path.get(k["source_path"])
        if wrapped is None and (not k["source_path"] or not by_path):
            wrapped = defined.get(k["name"])
        tma, tma_ops = oracle.scan_all(texts)
        out.append({"key": k["key"], "name": k["name"], "chosen": bool(wrapped and wrapped["name"] in chosen_names),
                    "source": f"{dest}/kernel.py" if source is not None else None,
                    "tma_api": tma_in_source(source or ""), "ir": {lv: p for lv, p in ir.items() if lv != "cubin"},
                    "tma": tma, "tma_ops": tma_ops})
    return out
