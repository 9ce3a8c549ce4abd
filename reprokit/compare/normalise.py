"""IR normalisation per level, and the ops each normalised line carries.

Two compiles of one kernel differ in ways that say nothing about the compiler's decisions:
location info (MLIR `loc(...)` and `#loc` lines, LLVM `!dbg`, PTX `.loc`/`.file` and DWARF
sections), temp paths, cache hashes, SASS addresses and encodings, SSA names (3.6 names values
after their Python variables, `%pm`, where 3.0 numbers them, `%4`) and the TTGIR dialect's
spelling (`triton_gpu.`/`triton_nvidia_gpu.` up to 3.2, `ttg.`/`ttng.` from 3.3). `normalise(level,
text)` removes exactly those, so two texts that still differ differ in a real way; `ops(level,
text)` names the operation on each normalised line (MLIR op, LLVM opcode or callee, PTX or SASS
opcode) for "ops added and removed".
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from reprokit.common.oracle import LEVELS

__all__ = ["LEVELS", "ir_hash", "normalise", "ops"]

# Anywhere: temp files and folders, Triton cache keys (hex sha256 or base32 of it), home folders.
_TMP = re.compile(r"/tmp/[\w.+-]+(?:/[\w.+-]+)*")
_HEX_HASH = re.compile(r"\b[0-9a-f]{40,64}\b")
_B32_HASH = re.compile(r"\b[A-Z2-7]{52}\b")

# MLIR
_MLIR_LOC_LINE = re.compile(r"^\s*#loc\d*\s*=\s*loc\(")
_MLIR_SSA = re.compile(r"%[A-Za-z_$.\-0-9][\w$.\-]*")
_MLIR_DEF = re.compile(r"^(\s*)(%[\w$.\-]+(?::\d+)?(?:\s*,\s*%[\w$.\-]+(?::\d+)?)*)\s*=\s*(.*)$")
_MLIR_BLOCK = re.compile(r"\^bb\d+")
_DIALECTS = ((re.compile(r"\btriton_nvidia_gpu\."), "ttng."), (re.compile(r"\btriton_gpu\."), "ttg."))
_MLIR_OP = re.compile(r'^(?:%[^=]*=\s*)?"?([A-Za-z_]\w*\.[\w.]+)"?')

# LLVM IR
# Two patterns that each open with a literal, which re scans for fast (an optional first
# character would make it try every position of megabytes of IR).
_DBG = (re.compile(r", !dbg !\d+"), re.compile(r" !dbg !\d+"))
_LL_DEBUG_LINE = re.compile(r"^!(?:\d+|llvm\.dbg\.\w+) = .*(?:!DI|Debug Info Version|Dwarf Version)|^!llvm\.dbg\.")
_LL_META = re.compile(r"!\d+\b")
_LL_ATTR = re.compile(r"#\d+\b")
_LL_OP = re.compile(r"^(?:%[\w.]+ = )?(?:(?:tail|musttail|notail) )?(\w+)")
_LL_CALLEE = re.compile(r"@([\w.$]+)\(")
_LL_ASM = re.compile(r'asm(?: sideeffect)?(?: alignstack)?(?: inteldialect)? "([^"]*)"')

# PTX
_PTX_DROP = re.compile(r"^(?:\.loc\b|\.file\b|//|\$L__(?:tmp|func_begin|func_end|pubTypes|info)\w*:"
                       r"|\.b(?:8|16|32|64)\s)")   # the last: DWARF data, even outside its section
_PTX_COMMENT = re.compile(r"\s*//.*$")
_PTX_OP = re.compile(r"^(?:@!?%\w+\s+)?([a-z][\w.:]*)")

# SASS (cuobjdump / nvdisasm listings)
_SASS_ENC = re.compile(r"/\*\s*0x[0-9a-f]+\s*\*/")
_SASS_ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/")
_SASS_OP = re.compile(r"^(?:@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_.]*)")


def _common(text: str) -> str:
    """Temp paths and cache hashes made neutral. They live in paths, so the callers only hand
    over lines with a '/' in them (after SASS has lost its /* */ columns): the regexes cost."""
    text = _TMP.sub("<tmp>", text)
    text = _HEX_HASH.sub("<hash>", text)
    return _B32_HASH.sub("<hash>", text)


def _strip_mlir_locs(line: str) -> str:
    """Remove every ` loc(...)` with balanced parentheses, strings respected."""
    out = []
    i = 0
    while True:
        j = line.find("loc(", i)
        if j < 0 or (j > 0 and (line[j - 1].isalnum() or line[j - 1] in "_.#")):
            if j < 0:
                out.append(line[i:])
                break
            out.append(line[i:j + 4])
            i = j + 4
            continue
        out.append(line[i:j].rstrip(" "))
        depth, k, quoted = 0, j + 3, False
        while k < len(line):
            ch = line[k]
            if quoted:
                if ch == "\\":
                    k += 1
                elif ch == '"':
                    quoted = False
            elif ch == '"':
                quoted = True
            elif ch == "(":
                depth += 1
            elif ch == ")":
                depth -= 1
                if depth == 0:
                    break
            k += 1
        i = k + 1
    return "".join(out)


class _Renamer:
    """Names in order of first appearance: %v0, %v1, ... (what a rename cannot change)."""

    def __init__(self, prefix: str):
        self.prefix = prefix
        self.names: dict = {}

    def __call__(self, m: re.Match) -> str:
        name = m.group(0)
        if name not in self.names:
            self.names[name] = f"{self.prefix}{len(self.names)}"
        return self.names[name]


class _ValueNamer:
    """MLIR SSA values named after what defines them: `%v<hash of the defining op, its operands
    already renamed>`. A release's own names (`%4`, `%pm`) drop out, and an op added or removed
    renames only the values that depend on it, not every value after it (as numbering would), so
    a one-op change stays a one-line diff. Values no op line defines (function and block
    arguments, loop induction variables) are numbered in order of appearance: %a0, %a1, ..."""

    def __init__(self) -> None:
        self.names: dict = {}
        self.taken: set = set()
        self.args = 0

    def use(self, m: re.Match) -> str:
        name = m.group(0)
        if name not in self.names:
            self.names[name] = f"%a{self.args}"
            self.args += 1
        return self.names[name]

    def line(self, line: str) -> str:
        m = _MLIR_DEF.match(line)
        if not m:
            return _MLIR_SSA.sub(self.use, line)
        indent, lhs, rhs = m.groups()
        rhs = _MLIR_SSA.sub(self.use, rhs)
        base = "%v" + hashlib.sha256(rhs.encode()).hexdigest()[:6]
        out = []
        results = [r.strip() for r in lhs.split(",")]
        for i, res in enumerate(results):
            name, _, pack = res.partition(":")
            new = base if len(results) == 1 else f"{base}_{i}"
            k = 1
            while new in self.taken:  # the same op twice (a release that does not CSE it)
                k += 1
                new = f"{base}_{k}" if len(results) == 1 else f"{base}_{i}_{k}"
            self.taken.add(new)
            self.names[name] = new
            out.append(new + (f":{pack}" if pack else ""))
        return f"{indent}{', '.join(out)} = {rhs}"


def _mlir(text: str) -> list[str]:
    lines = []
    values, blocks = _ValueNamer(), _Renamer("^bb")
    for line in text.splitlines():
        if _MLIR_LOC_LINE.match(line):
            continue
        line = _strip_mlir_locs(line)
        if "/" in line:  # before naming values, which hashes their defining text
            line = _common(line)
        for rx, short in _DIALECTS:
            line = rx.sub(short, line)
        line = _MLIR_BLOCK.sub(blocks, values.line(line))
        lines.append(line)
    return lines


def _llir(text: str) -> list[str]:
    lines = []
    meta, attrs = _Renamer("!"), _Renamer("#")
    # Every instruction carries `, !dbg !N`: one pass over the whole text, in C, not per line.
    for rx in _DBG:
        text = rx.sub("", text)
    for line in text.splitlines():
        s = line.strip()
        if s.startswith(";") or s.startswith("source_filename") or (s.startswith("!") and _LL_DEBUG_LINE.match(s)):
            continue
        if "!" in line:
            line = _LL_META.sub(meta, line)
        if "#" in line:
            line = _LL_ATTR.sub(attrs, line)
        lines.append(line)
    return lines


def _ptx(text: str) -> list[str]:
    lines = []
    in_debug = False
    for line in text.splitlines():
        s = line.strip()
        if in_debug:
            if s == "}":
                in_debug = False
            continue
        if s.startswith(".section") and ".debug_" in s:
            # `.section .debug_loc { }` opens and closes on one line.
            in_debug = not s.endswith("}")
            continue
        if _PTX_DROP.match(s):
            continue
        lines.append(" ".join(_PTX_COMMENT.sub("", s).split()))
    return lines


def _sass(text: str) -> list[str]:
    lines = []
    for line in _SASS_ENC.sub("", _SASS_ADDR.sub("", text)).splitlines():
        s = " ".join(line.split())
        if s and set(s) != {"."}:
            lines.append(s)
    return lines


_BY_LEVEL = {"ttir": _mlir, "ttgir": _mlir, "llir": _llir, "ptx": _ptx, "sass": _sass}


def normalise(level: str, text: str) -> str:
    """The text with location info, paths, hashes, addresses and SSA names made neutral; trailing
    space and blank lines dropped. One line per line of the input that carries meaning."""
    try:
        fn = _BY_LEVEL[level]
    except KeyError:
        raise ValueError(f"unknown IR level {level!r}; known: {', '.join(LEVELS)}") from None
    lines = (ln.rstrip() for ln in fn(text))
    lines = (_common(ln) if "/" in ln else ln for ln in lines)
    return "\n".join(ln for ln in lines if ln.strip()) + "\n"


def ir_hash(level: str, text: str) -> str:
    """A short sha256 of the normalised text: equal hashes mean no real change at this level."""
    return hashlib.sha256(normalise(level, text).encode()).hexdigest()[:16]


def _op(level: str, line: str) -> str | None:
    s = line.strip()
    if level in ("ttir", "ttgir"):
        m = _MLIR_OP.match(s)
        return m.group(1) if m else None
    if level == "llir":
        if not line.startswith((" ", "\t")) or s.endswith(":") or s in ("}", "{"):
            return None
        m = _LL_OP.match(s)
        if not m:
            return None
        op = m.group(1)
        if op == "call":
            asm = _LL_ASM.search(s)
            if asm:
                # The first opcode of the inline PTX: past predicates, braces and .reg lines.
                body = re.sub(r"\\0[9A]|[{};]", " ", asm.group(1))
                word = next((w for w in body.split() if re.match(r"^[a-z][\w.:]*$", w)), None)
                return f"asm {word}" if word else "asm"
            callee = _LL_CALLEE.search(s)
            return f"call @{callee.group(1)}" if callee else "call"
        return op
    if level == "ptx":
        if s.startswith((".", "{", "}", "$", ")", "(")) or not s.endswith(";"):
            return None
        m = _PTX_OP.match(s)
        return m.group(1) if m else None
    if level == "sass":
        if not s.endswith(";"):
            return None
        m = _SASS_OP.match(s)
        return m.group(1) if m else None
    raise ValueError(f"unknown IR level {level!r}")


def ops(level: str, normalised: str) -> Counter:
    """Op name -> how many lines carry it, over normalised text (see `normalise`)."""
    out: Counter = Counter()
    for line in normalised.splitlines():
        op = _op(level, line)
        if op:
            out[op] += 1
    return out
