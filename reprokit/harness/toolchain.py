"""The NVIDIA tools a traced case compiles with again: the ptxas (and libdevice) that the program
chose instead of Triton's own, as reprokit.trace.inprogram.listen.toolchain recorded them.

    use(case) -> dict    called in the case's own process, before its compile

Inductor points TRITON_PTXAS_PATH at the ptxas inside torch's package, in the program and in its
compile workers. That ptxas gives the PTX its `.version` and the cubin its code, and its version
is part of Triton's cache key: a capture with Triton's own ptxas compiles the same TTIR, TTGIR and
LLVM IR into another PTX and cubin. So a case recorded with torch's ptxas uses the ptxas inside
the torch this stack has, as Inductor itself would on it. A tool the stack does not have (no
torch, a torch without one, a path of the program's own) is said in the record, never guessed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys


def use(case: dict) -> dict:
    """Set the environment of this case's compile to the tools its program used. Returns what
    was used ({"ptxas": {"from", "file", "version"}}) and, under "missing", why a tool the program
    used is not here (then Triton's own compiles, and a traced case that differs says why)."""
    wanted = (case.get("trace") or {}).get("toolchain") or {}
    out: dict = {}
    for tool in ("ptxas", "libdevice"):
        want = wanted.get(tool)
        if not isinstance(want, dict) or not want.get("env"):
            continue
        path = _find(want)
        if path is None:
            out.setdefault("missing", []).append(
                f"the program compiled with {_describe(tool, want)}, which this stack does not have "
                f"(Triton's own {tool} compiled here)")
            continue
        os.environ[want["env"]] = path
        used = {"from": want["from"], "file": want.get("file")}
        if tool == "ptxas":
            used["version"] = _version(path)
        out[tool] = used
    if "ptxas" in out:
        _forget_ptxas_version()
    return out


def _describe(tool: str, want: dict) -> str:
    version = f" {want['version']}" if want.get("version") else ""
    if want.get("from") == "torch":
        return f"torch's {tool}{version} (torch/{want.get('file')})"
    return f"a {tool}{version} at a path of its own"


def _find(want: dict) -> str | None:
    """The tool on this stack: a file inside the torch this interpreter imports."""
    if want.get("from") != "torch" or not want.get("file"):
        return None
    import importlib.util

    loaded = sys.modules.get("torch")
    if loaded is not None:  # the stack's torch, or reprokit's stand-in for a stack with none (no file)
        where = getattr(loaded, "__file__", None)
        roots = [os.path.dirname(where)] if where else []
    else:
        spec = importlib.util.find_spec("torch")
        roots = list(spec.submodule_search_locations or []) if spec is not None else []
    for root in roots:
        path = os.path.normpath(os.path.join(root, want["file"]))
        if path.startswith(os.path.normpath(root) + os.sep) and os.path.isfile(path):
            return path
    return None


def _version(path: str) -> str | None:
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    m = re.search(r"release (\d+\.\d+)", out)
    return m.group(1) if m else None


def _forget_ptxas_version() -> None:
    """Triton caches the ptxas version it read (functools.lru_cache, part of its cache key); a
    process that asked before this case set its ptxas would key the compile by the other one."""
    try:
        from triton.backends.nvidia import compiler
    except ImportError:
        return
    clear = getattr(getattr(compiler, "get_ptxas_version", None), "cache_clear", None)
    if clear is not None:
        clear()
