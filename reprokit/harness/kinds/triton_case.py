"""Triton cases: a kernel file's @jit function compiled ahead of time for the plan's GPU, IR at
every level, SASS, metadata, and the ptxas that really ran.

Runs in the case's own forked process (reprokit.harness.case dispatches here by language).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import tempfile
import time
import traceback

from reprokit.common import oracle
from reprokit.harness import compat
from reprokit.harness.toolbox import add_sass, load_kernel, one_line, tool_version

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
            self.calls.append({"argv": [_no_temp_name(a) for a in _without_redirects(argv)], "returncode": rc,
                               "seconds": round(time.perf_counter() - start, 4), "log": log})


_TEMP_NAME = re.compile(r"tmp\w+")


def _no_temp_name(arg: str) -> str:
    """Triton's temporary .ptx and .o (tempfile's `tmpXXXXXXXX` in the temp folder) as `<tmp>.ptx`:
    a name drawn anew each compile is no fact about it, and would give each capture new bytes."""
    root = tempfile.gettempdir().rstrip("/") + "/"
    m = _TEMP_NAME.match(arg, len(root)) if arg.startswith(root) else None
    return "<tmp>" + arg[m.end():] if m else arg


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


def prepare(case: dict, kernels_dir: str):
    """The kernel's module loaded (its code runs here, in the case's own process) and its
    ASTSource made."""
    fn = load_kernel(kernels_dir, case["kernel"]["file"], case["kernel"]["function"])
    return compat.make_source(fn, case["signature"], case.get("constexprs", {}), case.get("divisible_by_16", []))


def compile_case(case: dict, plan: dict, case_dir: str, src, options: dict | None = None) -> dict:
    """Compile one case's prepared ASTSource with `options` (the case's warps and stages when
    None; a declared call brings the JIT's own) and write its artifacts; return the record for
    metadata.json. The runner has already set aside cases whose API this release lacks.
    """
    rec = {"id": case["id"], "status": "ok", "error": None, "artifacts": {}}
    import triton

    # Built before the compile's `try`: a fault of ours here is a harness error, never a result.
    target = compat.gpu_target(plan["profile"]["capability"])
    if options is None:
        options = compat.compile_options(case["num_warps"], case["num_stages"])
    recorder = PtxasRecorder()
    recorder.install()
    t0 = time.perf_counter()
    try:
        compiled = triton.compile(src, target=target, options=options)
    except Exception as e:  # noqa: BLE001 - what the compiler raises is this case's result, by design
        rec["compile_s"] = round(time.perf_counter() - t0, 4)
        removed = compat.removed_api(e)
        rec.update(status="unsupported" if removed else "compile_error", error=removed or one_line(e),
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
    rec["metadata"] = {"shared_bytes": shared, "num_warps": getattr(md, "num_warps", options.get("num_warps")),
                       "num_stages": getattr(md, "num_stages", options.get("num_stages")),
                       "num_ctas": getattr(md, "num_ctas", 1), "target_arch": _arch(md)}
    _record_ptxas(rec, recorder, case_dir)
    limit = plan["profile"]["smem_per_block"]
    rec["launch"] = {"fits": shared <= limit, "shared_bytes": shared, "limit": limit}
    if shared > limit:
        rec["launch"]["reason"] = (f"needs {shared} B of shared memory per block; "
                                   f"{plan['profile']['key']} allows {limit}")
    return rec


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
    rec["ptxas"] = {"path": path, "version": tool_version(path), "argv": call["argv"],
                    "returncode": call["returncode"], "seconds": call["seconds"]}
    md = rec.setdefault("metadata", {})
    for key, rx in _PTXAS_INFO.items():
        found = [int(x) for x in rx.findall(call["log"])]
        if found:
            md[key] = max(found)
