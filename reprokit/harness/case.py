"""Compiling one case inside its own forked process: IR at every level, SASS, metadata, ptxas.

Runs in the child that the runner forks per case. Everything it learns goes to
`cases/<id>/metadata.json`; a crash or timeout leaves no metadata, and the runner then builds
the record from the exit status and compile.log instead.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import subprocess
import sys
import time
import traceback
import types

from reprokit.harness import compat, elf, oracle, write_json

# Triton's asm keys, in pipeline order, and the file suffix each is written under.
STAGES = (("ttir", "ttir"), ("ttgir", "ttgir"), ("llir", "llir"), ("ptx", "ptx"), ("cubin", "cubin"))

_PTXAS_INFO = {
    "registers": re.compile(r"Used (\d+) registers"),
    "spill_stores": re.compile(r"(\d+) bytes spill stores"),
    "spill_loads": re.compile(r"(\d+) bytes spill loads"),
    "stack_frame": re.compile(r"(\d+) bytes stack frame"),
}


class PtxasRecorder:
    """Wraps subprocess.run in this (forked) process to see which ptxas really ran, and how.

    Triton builds the ptxas command itself and throws its `-v` log away; recording the call is
    the only way to know the binary, the flags and the register/spill report for certain.
    """

    def __init__(self):
        self.calls = []
        self._orig = subprocess.run

    def install(self):
        subprocess.run = self._run

    def _run(self, *args, **kwargs):
        cmd = args[0] if args else kwargs.get("args")
        argv = shlex.split(cmd) if isinstance(cmd, str) else [str(a) for a in (cmd or [])]
        is_ptxas = bool(argv) and os.path.basename(argv[0]).startswith("ptxas") and "--version" not in argv
        if not is_ptxas:
            return self._orig(*args, **kwargs)
        log_path = None
        stderr = kwargs.get("stderr")
        if hasattr(stderr, "name") and isinstance(stderr.name, str):
            log_path = stderr.name
        elif isinstance(cmd, str):
            m = re.search(r"2>\s*(\S+)", cmd)
            log_path = m.group(1) if m else None
        start = time.perf_counter()
        rc = None
        try:
            proc = self._orig(*args, **kwargs)
            rc = proc.returncode
            return proc
        except subprocess.CalledProcessError as e:
            rc = e.returncode
            raise
        finally:
            log = ""
            if log_path and os.path.exists(log_path):
                with open(log_path, errors="replace") as f:
                    log = f.read()
            self.calls.append({"argv": _without_redirects(argv), "returncode": rc,
                               "seconds": round(time.perf_counter() - start, 4), "log": log})


def _without_redirects(argv: list) -> list:
    """3.0 runs ptxas through a shell string ending in `2> LOG`: keep the command, not the plumbing."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "2>":
            skip = True
        elif not a.startswith("2>"):
            out.append(a)
    return out


def load_module(kernels_dir: str, file: str):
    """The kernel file's module, executed once per process (a module that raises is not kept)."""
    path = os.path.join(kernels_dir, file)
    name = "reprokit_kernels_" + re.sub(r"\W", "_", os.path.splitext(file)[0])
    mod = sys.modules.get(name)
    if mod is None:
        # Compiled by hand rather than through importlib, which makes the path absolute: the
        # file name lands in every IR level's source locations, and must not name this host.
        with open(path) as f:
            code = compile(f.read(), path, "exec")
        mod = types.ModuleType(name)
        mod.__file__ = path
        sys.modules[name] = mod
        try:
            exec(code, mod.__dict__)
        except BaseException:
            del sys.modules[name]
            raise
    return mod


def load_kernel(kernels_dir: str, file: str, function: str):
    mod = load_module(kernels_dir, file)
    try:
        return getattr(mod, function)
    except AttributeError:
        raise LookupError(f"{file} defines no kernel {function!r}") from None


def prepare_case(case: dict, plan: dict, kernels_dir: str):
    """What comes before the compile: the kernel's module loaded (its code runs here, in the
    case's own process) and its ASTSource made. The runner lets this happen while the previous
    case still compiles. A CUDA C++ or torch.compile case has nothing to prepare: its kernels'
    folder is handed on."""
    if case.get("language") in ("cuda", "inductor"):
        return kernels_dir
    fn = load_kernel(kernels_dir, case["kernel"]["file"], case["kernel"]["function"])
    return compat.make_source(fn, case["signature"], case.get("constexprs", {}), case.get("divisible_by_16", []))


def compile_case(case: dict, plan: dict, case_dir: str, src) -> dict:
    """Compile one case's prepared ASTSource and write its artifacts; return the record for
    metadata.json. The runner has already set aside cases whose API this release lacks.
    """
    if case.get("language") == "cuda":
        from reprokit.harness import cudacpp

        return cudacpp.compile_case(case, plan, src, case_dir)
    if case.get("language") == "inductor":
        from reprokit.harness import inductor

        return inductor.compile_case(case, plan, src, case_dir)
    rec = {"id": case["id"], "status": "ok", "error": None, "artifacts": {}}
    import triton

    # Built before the compile's `try`: a fault of ours here is a harness error, never a result.
    target = compat.gpu_target(plan["profile"]["capability"])
    options = compat.compile_options(case["num_warps"], case["num_stages"])
    recorder = PtxasRecorder()
    recorder.install()
    t0 = time.perf_counter()
    try:
        compiled = triton.compile(src, target=target, options=options)
    except Exception as e:  # noqa: BLE001 - what the compiler raises is this case's result, by design
        rec["compile_s"] = round(time.perf_counter() - t0, 4)
        removed = compat.removed_api(e)
        rec.update(status="unsupported" if removed else "compile_error", error=removed or _one_line(e),
                   exception=type(e).__name__)
        traceback.print_exc()
        _record_ptxas(rec, recorder, case_dir)
        return rec
    rec["compile_s"] = round(time.perf_counter() - t0, 4)
    texts = {}
    for key, ext in STAGES:
        data = compiled.asm.get(key)
        if data is None:
            continue
        path = os.path.join(case_dir, "kernel." + ext)
        if isinstance(data, bytes):
            with open(path, "wb") as f:
                f.write(data)
        else:
            with open(path, "w") as f:
                f.write(data)
            texts[key] = data
        rec["artifacts"][key] = "kernel." + ext
    if "cubin" in rec["artifacts"] and case.get("sass", plan.get("sass", True)):
        add_sass(rec, case_dir, texts)
    rec["tma"], rec["tma_ops"] = oracle.scan_all(texts)
    md = compiled.metadata
    shared = int(getattr(md, "shared", 0) or 0)
    rec["metadata"] = {"shared_bytes": shared, "num_warps": getattr(md, "num_warps", case["num_warps"]),
                       "num_stages": getattr(md, "num_stages", case["num_stages"]),
                       "num_ctas": getattr(md, "num_ctas", 1), "target_arch": _arch(md)}
    _record_ptxas(rec, recorder, case_dir)
    limit = plan["profile"]["smem_per_block"]
    rec["launch"] = {"fits": shared <= limit, "shared_bytes": shared, "limit": limit}
    if shared > limit:
        rec["launch"]["reason"] = (f"needs {shared} B of shared memory per block; "
                                   f"{plan['profile']['key']} allows {limit}")
    return rec


def add_sass(rec: dict, case_dir: str, texts: dict) -> None:
    """Disassemble case_dir/kernel.cubin into kernel.sass (through the SASS cache): the text joins
    `texts` for the oracle, the tool and its time (or why there is none) join the record."""
    t_sass = time.perf_counter()
    sass, tool, note = disassemble(os.path.join(case_dir, "kernel.cubin"))
    rec["sass_s"] = round(time.perf_counter() - t_sass, 4)
    rec["sass_tool"] = tool
    if sass is not None:
        with open(os.path.join(case_dir, "kernel.sass"), "w") as f:
            f.write(sass)
        rec["artifacts"]["sass"] = "kernel.sass"
        texts["sass"] = sass
    else:
        rec["sass_error"] = note


def _arch(md):
    target = getattr(md, "target", None)
    return getattr(target, "arch", None) if target is not None else None


def _record_ptxas(rec: dict, recorder: PtxasRecorder, case_dir: str) -> None:
    if not recorder.calls:
        return
    call = recorder.calls[-1]
    with open(os.path.join(case_dir, "ptxas.log"), "w") as f:
        f.write(call["log"])
    rec["artifacts"]["ptxas_log"] = "ptxas.log"
    path = call["argv"][0]
    rec["ptxas"] = {"path": path, "version": compat.tool_version(path), "argv": call["argv"],
                    "returncode": call["returncode"], "seconds": call["seconds"]}
    md = rec.setdefault("metadata", {})
    for key, rx in _PTXAS_INFO.items():
        found = [int(x) for x in rx.findall(call["log"])]
        if found:
            md[key] = max(found)


def disassemble(cubin_path: str):
    """SASS text from the wheel's cuobjdump, else nvdisasm; (text, tool, why-not).

    Each run of the disassembler costs its start-up, about 0.45 s with CUDA 12.8 and 1.2 s with
    12.4 whatever the kernel's size (cuobjdump restarts it per ELF even inside one fatbin), which
    is more than most compiles here. So when $REPROKIT_SASS_CACHE names a folder, the text is
    kept there under a key of the tool's own bytes, its arguments and the cubin's bytes: the same
    cubin through the same binary gives the same text, and a repeated capture skips the run.
    """
    notes = []
    cache = sass_cache_dir()
    cubin = None
    for tool, args in compat.DISASSEMBLERS:
        path = compat.tool_path(tool)
        if not path:
            notes.append(f"{tool} not found")
            continue
        key = None
        if cache:
            if cubin is None:
                with open(cubin_path, "rb") as f:
                    cubin = f.read()
            key = _sass_key(path, args, cubin)
            text = _cache_get(cache, key)
            if text is not None:
                return text, {"name": tool, "path": path, "cache": key}, None
        p = subprocess.run([path, *args, cubin_path], capture_output=True, text=True, errors="replace")
        if p.returncode == 0 and p.stdout.strip():
            if key:
                _cache_put(cache, key, p.stdout)
            return p.stdout, {"name": tool, "path": path}, None
        notes.append(f"{tool} failed: {(p.stderr or p.stdout).strip().splitlines()[-1:] or ['no output']}")
    return None, None, "; ".join(notes)


def sass_cache_dir():
    d = os.environ.get("REPROKIT_SASS_CACHE")
    return d if d and os.path.isdir(d) else None


def _sass_key(tool_path: str, args: list, cubin: bytes) -> str:
    h = hashlib.sha256()
    h.update(compat.file_digest(tool_path).encode())
    h.update(("\0".join(args) + "\0").encode())
    h.update(cubin_digest(cubin).encode())
    return h.hexdigest()


def cubin_digest(cubin: bytes) -> str:
    """sha256 of a cubin less its .debug_line section, which is all that differs between two
    compiles of one kernel: ptxas writes the name of Triton's temporary .ptx file there. The
    SASS listing never prints it (two such cubins disassemble to the same text)."""
    return elf.digest_without(cubin, (b".debug_line",))


def _cache_get(cache: str, key: str):
    try:
        with open(os.path.join(cache, key[:2], key + ".sass"), errors="replace") as f:
            return f.read() or None
    except OSError:
        return None


def _cache_put(cache: str, key: str, text: str) -> None:
    """Written under a temp name and renamed: a reader sees the whole entry or none (a full disk
    or a read-only cache only costs the next run its disassembly)."""
    d = os.path.join(cache, key[:2])
    tmp = os.path.join(d, f".{key}.{os.getpid()}.tmp")
    try:
        os.makedirs(d, exist_ok=True)
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, os.path.join(d, key + ".sass"))
    except OSError:
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _one_line(e: BaseException) -> str:
    """The most telling line of a compiler exception (MLIR diagnostics, ptxas fatals, Triton's message)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    if lines and not lines[-1].strip("^~ ") and e.__cause__ is not None:
        # 3.3/3.4 CompilationErrors end at the source line's caret; the words are in the cause.
        return _one_line(e.__cause__)
    fatal = next((ln for ln in lines if re.search(r"\bfatal\s*:", ln)), None)
    if fatal and fatal != lines[0]:  # the tool's own complaint beats Triton's wrapper line
        return f"{lines[0].rstrip(':')}: {fatal}"[:500]
    for i, ln in enumerate(lines):
        if re.search(r"\b(error|fatal)\s*:", ln):
            if ln.endswith(":") and i + 1 < len(lines):  # "codegen error:" + the tool's own line
                return f"{ln} {lines[i + 1]}"[:500]
            return ln[:500]
    return (lines[-1] if lines else type(e).__name__)[:500]


def child_main(case: dict, plan: dict, kernels_dir: str, case_dir: str, wait_for_go=None) -> int:
    """Body of the forked child; stdout/stderr already point at compile.log.

    With `wait_for_go`, the case is prepared first and compiled only once that returns True
    (False: the run was called off, leave no record).
    """
    src = error = None
    try:
        src = prepare_case(case, plan, kernels_dir)
    except Exception as e:  # noqa: BLE001 - reported once the case's turn comes
        traceback.print_exc()
        error = e
    if wait_for_go is not None and not wait_for_go():
        return 0
    if error is not None:
        rec = _harness_error(case, error)
    else:
        try:
            rec = compile_case(case, plan, case_dir, src)
        except Exception as e:  # noqa: BLE001 - a harness-side failure must still leave a record
            traceback.print_exc()
            rec = _harness_error(case, e)
        if rec.get("status") == "ok" and plan.get("mode") == "gpu":
            rec["gpu"] = _on_gpu(case, plan, kernels_dir, case_dir, rec)
    sys.stdout.flush()
    sys.stderr.flush()
    write_json(os.path.join(case_dir, "metadata.json"), rec)
    return 0


def _on_gpu(case: dict, plan: dict, kernels_dir: str, case_dir: str, rec: dict) -> dict:
    """Launch, check and benchmark the compiled case (reprokit.harness.launch); a failure of the
    harness itself there is kept as the case's GPU result, not lost with the compile's record."""
    aot = None
    if "cubin" in rec["artifacts"]:
        with open(os.path.join(case_dir, rec["artifacts"]["cubin"]), "rb") as f:
            aot = cubin_digest(f.read())
    try:
        from reprokit.harness import launch

        gpu = launch.run_on_gpu(case, plan, kernels_dir, case_dir, aot)
    except Exception as e:  # noqa: BLE001 - as for the compile: a record, never a lost case
        traceback.print_exc()
        return {"status": "harness_error", "error": f"{type(e).__name__}: {_one_line(e)}"}
    if os.path.exists(os.path.join(case_dir, "bench.json")):
        rec["artifacts"]["bench"] = "bench.json"
    return gpu


def _harness_error(case: dict, e: BaseException) -> dict:
    return {"id": case["id"], "status": "harness_error", "error": f"{type(e).__name__}: {_one_line(e)}",
            "artifacts": {}}
