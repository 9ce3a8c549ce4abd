"""IR excerpts for a report: the lines around each TMA data-movement op of a level, or, where a
kernel shows none, around the global loads and stores a TMA would have replaced. Display only:
line numbers are the file's own, so a maintainer finds them in the bundle."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Mapping

from reprokit.common.oracle import op_lines

# Levels a report shows: the layout decision (TTGIR), the last text the compiler wrote (PTX) and
# what the hardware runs (SASS). TTIR and LLVM IR add length, rarely insight.
SHOWN_LEVELS = ("ttgir", "ptx", "sass")

# Where a TMA would be when there is none: global memory traffic done another way.
_STAND_IN = {
    "ttir": [r"\btt\.load\b", r"\btt\.store\b"],
    "ttgir": [r"\btt\.load\b", r"\btt\.store\b", r"\b(?:triton_gpu|ttg)\.async_copy_global_to_local\b"],
    "llir": [r"\bld\.global\b", r"\bst\.global\b", r"\bload\b.*addrspace\(1\)", r"\bstore\b.*addrspace\(1\)"],
    "ptx": [r"\bld\.global\b", r"\bst\.global\b", r"\bcp\.async\.c[ag]\b"],
    "sass": [r"\bLDGSTS\b", r"\bLDG\b", r"\bSTG\b"],
}
_STAND_IN_RE = {k: re.compile("|".join(v)) for k, v in _STAND_IN.items()}
_COMMENT = {"ttir": "//", "ttgir": "//", "llir": ";", "ptx": "//", "sass": None}
# Noise that only makes lines long: MLIR location suffixes and SASS instruction encodings.
_LOC = re.compile(r"\s+loc\((?:#loc\d*|\"[^\"]*\"(?::\d+:\d+)?)\)\s*$")
_SASS_ENCODING = re.compile(r"\s*/\* 0x[0-9a-f]+ \*/\s*$")
_MAX_LINE = 160


@dataclass(frozen=True)
class Excerpt:
    level: str
    path: str            # the IR file, relative to the bundle root
    kind: str            # "tma": around TMA ops; "stand-in": around plain global loads/stores; "none"
    anchors: int         # how many anchor lines the file has
    shown: int           # how many of them the windows show
    windows: tuple       # ((line number, 1-based, text), ...) per window
    marks: tuple = ()    # anchor line numbers shown

    def text(self) -> str:
        """Plain text: a header line, then numbered lines, anchors marked with '>'."""
        what = {"tma": "TMA data-movement ops",
                "stand-in": "no TMA op; the global loads/stores a TMA would replace",
                "none": "no TMA op and no global load/store"}[self.kind]
        more = f", {self.shown} of {self.anchors} shown" if self.shown < self.anchors else ""
        out = [f"{self.path}: {what}{more}"]
        width = len(str(max((n for w in self.windows for n, _ in w), default=1)))
        # The indentation every shown line shares (SASS listings carry a deep one) is dropped.
        indent = min((len(line) - len(line.lstrip()) for w in self.windows for _, line in w if line.strip()), default=0)
        for i, window in enumerate(self.windows):
            if i:
                out.append(" " * width + " ...")
            for n, line in window:
                out.append(f"{n:>{width}}{'>' if n in self.marks else ' '} {line[indent:]}".rstrip())
        return "\n".join(out)


def _clean(level: str, line: str) -> str:
    line = line.rstrip()
    line = _SASS_ENCODING.sub("", line) if level == "sass" else _LOC.sub("", line)
    line = line.replace("\t", "    ")
    return line if len(line) <= _MAX_LINE else line[:_MAX_LINE - 3] + "..."


def _stand_ins(level: str, lines: list[str]) -> list[tuple[int, str]]:
    mark = _COMMENT[level]
    out = []
    for i, line in enumerate(lines):
        m = _STAND_IN_RE[level].search(line)
        if m and (mark is None or mark not in line[:m.start()]):
            out.append((i, m.group(0).split()[0]))
    return out


def _pick(anchors: list[tuple[int, str]], n: int) -> list[int]:
    """The first line of each distinct op (a load and a store say more than two loads), then
    the next ones in file order, up to n."""
    firsts: dict = {}
    for line, op in anchors:
        firsts.setdefault(op, line)
    picked = sorted(firsts.values())[:n]
    for line, _ in anchors:
        if len(picked) >= n:
            break
        if line not in picked:
            picked.append(line)
    return sorted(picked)


def _noise(level: str, line: str) -> bool:
    s = _clean(level, line).strip()   # a SASS encoding on a line of its own cleans to nothing
    return not s or (level == "ptx" and (s in ("// begin inline asm", "// end inline asm") or s.startswith(".loc")))


def excerpt(level: str, path: str, text: str, *, context: int = 2, max_anchors: int = 3) -> Excerpt:
    """The excerpt of one IR file: at most `max_anchors` anchors with `context` lines either
    side (blank lines and PTX's inline-asm and .loc markers neither shown nor counted),
    overlapping windows merged."""
    lines = text.splitlines()
    found = sorted(set(op_lines(level, text)))
    kind = "tma"
    if not found:
        found, kind = _stand_ins(level, lines), "stand-in"
    if not found:
        return Excerpt(level, path, "none", 0, 0, ())
    anchors = sorted({line for line, _ in found})
    picked = _pick(found, max_anchors)
    kept = [i for i, line in enumerate(lines) if not _noise(level, line) or i in picked]
    where = {i: k for k, i in enumerate(kept)}
    spans: list[list[int]] = []
    for a in picked:
        k = where[a]
        lo, hi = max(0, k - context), min(len(kept) - 1, k + context)
        if spans and lo <= spans[-1][1] + 1:
            spans[-1][1] = hi
        else:
            spans.append([lo, hi])
    windows = tuple(tuple((kept[k] + 1, _clean(level, lines[kept[k]])) for k in range(lo, hi + 1)) for lo, hi in spans)
    return Excerpt(level, path, kind, len(anchors), len(picked), windows, tuple(a + 1 for a in picked))


def case_excerpts(artifacts: Mapping[str, str], read, levels=SHOWN_LEVELS) -> list[Excerpt]:
    """Excerpts of one case's IR (its record's artifacts); `read(rel)` returns the bytes of a bundle member or None."""
    out = []
    for level in levels:
        rel = artifacts.get(level)
        if not rel:
            continue
        data = read(rel)
        if data is not None:
            out.append(excerpt(level, rel, data.decode("utf-8", "replace")))
    return out
