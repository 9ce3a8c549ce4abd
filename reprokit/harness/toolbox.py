"""The harness's toolbox, under every language's compiler: loading a kernel file as a module,
finding and asking the NVIDIA tools (the wheel's ptxas, cuobjdump, nvdisasm), disassembling a
cubin through the SASS cache, a cubin's digest, a compiler error in one line, and a case's timeout.

It imports no Triton at module level, and nothing above it in the harness, so the per-language
modules (triton_case, cudacpp, inductor) and the launcher all stand on it.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
import sys
import time
import types
from typing import Sequence

from reprokit.harness import elf


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


# --- the NVIDIA tools shipped in the wheel ---------------------------------------------------

# What turns a cubin into SASS, in order of preference, with its arguments.
DISASSEMBLERS = (("cuobjdump", ("-sass",)), ("nvdisasm", ("-c",)))


def nvidia_bin_dir() -> str:
    import triton  # the Triton under test: only once a tool is looked for

    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")


def tool_path(name: str) -> str | None:
    """The tool this Triton would run: its env override, else the wheel's copy, else PATH."""
    env = os.environ.get(f"TRITON_{name.upper().replace('-', '_')}_PATH")
    if env and os.access(env, os.X_OK):
        return env
    p = os.path.join(nvidia_bin_dir(), name)
    if os.access(p, os.X_OK):
        return p
    for d in os.environ.get("PATH", "").split(os.pathsep):
        q = os.path.join(d, name)
        if os.access(q, os.X_OK):
            return q
    return None


_VERSION_RE = re.compile(r"(?:release \S+, )?V(\d+\.\d+\.\d+)")


@functools.lru_cache(maxsize=None)
def tool_version(path: str | None) -> str | None:
    if not path:
        return None
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = _VERSION_RE.search(out)
    return m.group(1) if m else (out.strip().splitlines()[-1] if out.strip() else None)


@functools.lru_cache(maxsize=None)
def file_digest(path: str) -> str:
    """sha256 of a tool's bytes (cached per process, and warmed before the fork)."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


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
    for tool, args in DISASSEMBLERS:
        path = tool_path(tool)
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


def _sass_key(tool_path: str, args: Sequence[str], cubin: bytes) -> str:
    h = hashlib.sha256()
    h.update(file_digest(tool_path).encode())
    h.update(("\0".join(args) + "\0").encode())
    h.update(cubin_digest(cubin).encode())
    return h.hexdigest()


def cubin_digest(cubin: bytes) -> str:
    """sha256 of a cubin less its .debug_line section, which is all that differs between two
    compiles of one kernel: ptxas writes the name of Triton's temporary .ptx file there. The
    SASS listing never prints it (two such cubins disassemble to the same text)."""
    return elf.digest_without(cubin, (b".debug_line",))


# The sections that say what runs: the machine code, the resources and attributes the driver
# reads (registers, parameters, barriers), shared memory and the parameter bank. Left out with the
# debug sections: initialised globals and the bank that points at them, which with debug on hold
# the device asserts' messages, and those name the source file.
_CODE = (b".text.", b".nv.info", b".nv.shared.", b".nv.constant0")


def cubin_code_digest(cubin: bytes) -> str:
    """sha256 of a cubin's code sections by name and content (_CODE): what runs, whatever file the
    kernel was compiled from. Two compiles of one kernel from modules at two paths differ in their
    debug sections (the line table names the file and its mtime, the embedded PTX its path), and
    with debug on (Inductor compiles with debug=True) in the assert messages, which name the file,
    and the symbols and strings that index them; none of that is code. A cubin that is no ELF we
    read is hashed whole."""
    parts = elf.sections(cubin)
    if not parts:
        return hashlib.sha256(cubin).hexdigest()
    h = hashlib.sha256()
    for sec in sorted(parts, key=lambda x: x.name):
        if not sec.name.startswith(_CODE):
            continue
        body = b"" if sec.kind == elf.SHT_NOBITS else cubin[sec.offset:sec.offset + sec.size]
        h.update(b"%s %d %d\0" % (sec.name, sec.kind, sec.size))
        h.update(body)
    return h.hexdigest()


_LOC = re.compile(r"^#loc\d*\s*=.*$|\s*loc\((?:[^()]|\([^()]*\))*\)|\s*loc\(#loc\d*\)", re.M)


def ttir_digest(text: str) -> str:
    """sha256 of TTIR without its source locations (they name the file and line it was compiled
    from): one kernel compiled from a file at another path gives the same digest."""
    lines = [ln.rstrip() for ln in _LOC.sub("", text).splitlines() if ln.strip()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


_LLVM_DEBUG = re.compile(r",?\s*!dbg !\d+|^!\d+ = .*$|^declare void @llvm\.dbg\..*$", re.M)
_PTX_LINE = re.compile(r"^\s*(\.loc|\.file|//).*$", re.M)
_PTX_SECTION = re.compile(r"^\s*\.section\s+\.debug.*?^\s*}", re.M | re.S)


def stage_digest(stage: str, text: str) -> str:
    """sha256 of one IR level less what names the file it came from: MLIR locations (ttir,
    ttgir), LLVM debug metadata (llir), PTX line directives and debug sections (ptx). Two
    compiles of one kernel from modules at two paths give the same digests; where they differ,
    the first level that does says where the compiles parted."""
    if stage == "llir":
        text = _LLVM_DEBUG.sub("", text)
    elif stage == "ptx":
        text = _PTX_LINE.sub("", _PTX_SECTION.sub("", text))
    else:
        return ttir_digest(text)
    lines = [ln.rstrip() for ln in text.splitlines() if ln.strip()]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


# Triton's compile metadata that says how a kernel was compiled (options and what they gave),
# compared key by key when two compiles differ; paths and the hash are left out.
METADATA_SKIP = ("hash", "extern_libs", "name", "triton_version")


def compile_options(meta: dict) -> dict:
    """The comparable part of a compile's metadata JSON (the cache's <kernel>.json)."""
    return {k: v for k, v in sorted(meta.items()) if k not in METADATA_SKIP
            and (v is None or isinstance(v, (bool, int, float, str, list)))}


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


def one_line(e: BaseException) -> str:
    """The most telling line of a compiler exception (MLIR diagnostics, ptxas fatals, Triton's message)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip()]
    if lines and not lines[-1].strip("^~ ") and e.__cause__ is not None:
        # 3.3/3.4 CompilationErrors end at the source line's caret; the words are in the cause.
        return one_line(e.__cause__)
    fatal = next((ln for ln in lines if re.search(r"\bfatal\s*:", ln)), None)
    if fatal and fatal != lines[0]:  # the tool's own complaint beats Triton's wrapper line
        return f"{lines[0].rstrip(':')}: {fatal}"[:500]
    for i, ln in enumerate(lines):
        if re.search(r"\b(error|fatal)\s*:", ln):
            if ln.endswith(":") and i + 1 < len(lines):  # "codegen error:" + the tool's own line
                return f"{ln} {lines[i + 1]}"[:500]
            return ln[:500]
    return (lines[-1] if lines else type(e).__name__)[:500]


def case_timeout(case: dict, plan: dict) -> float:
    """Seconds a case's process may take: the case's own `timeout_s`, else the plan's, else 300."""
    return float(case.get("timeout_s") or plan.get("timeout_s") or 300)
