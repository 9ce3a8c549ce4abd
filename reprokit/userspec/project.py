"""Finding and reading a user's reprokit.toml: the Project (its folder, kernels, declared case
tables, stacks and GPU profiles of its own), and where in the file each table and key sits.

tomllib gives no line numbers, so `Lines` finds them by scanning the text for the case's
`[[case]]` header and its keys: what `reprokit check` prints as `file:line`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from reprokit.config import tomllib
from reprokit.errors import ConfigError, FileSystemError, UsageError

PROJECT_FILE = "reprokit.toml"
# The top-level tables a reprokit.toml may hold (docs/user-cases.md).
TOP_KEYS = ("project", "case", "sweep", "stacks", "gpus")
PROJECT_KEYS = ("name", "kernels", "timeout_s")


@dataclass(frozen=True)
class Project:
    """A parsed reprokit.toml. `cases` are its [[case]] tables as TOML gave them (checked and
    normalised by reprokit.userspec.check and .plan); `stacks` and `gpus` extend the defaults."""

    path: Path
    text: str
    raw: dict

    @property
    def root(self) -> Path:
        return self.path.parent

    @property
    def name(self) -> str:
        name = (self.raw.get("project") or {}).get("name")
        return name if isinstance(name, str) and name else self.root.name or "project"

    @property
    def cases(self) -> list:
        cases = self.raw.get("case", [])
        return cases if isinstance(cases, list) else []

    @property
    def sweeps(self) -> list:
        sweeps = self.raw.get("sweep", [])
        return sweeps if isinstance(sweeps, list) else []

    @property
    def shown(self) -> str:
        """The file's name as messages print it: relative to the current folder when inside it."""
        try:
            return str(self.path.relative_to(Path.cwd()))
        except ValueError:
            return str(self.path)

    def lines(self) -> Lines:
        return Lines(self.text)


def find(start: Path) -> Path | None:
    """The reprokit.toml in `start` or the nearest folder above it, if any."""
    start = Path(start).absolute()
    for folder in (start, *start.parents):
        candidate = folder / PROJECT_FILE
        try:
            if candidate.is_file():
                return candidate
        except PermissionError:
            # A folder this user may not search holds no project it could read (a shared machine's
            # 0700 home or temp folder above the working folder): keep looking above it.
            continue
    return None


def resolve(explicit: Path | None, cwd: Path) -> Path | None:
    """--project PATH (a reprokit.toml, or a folder that holds one) or, without it, the nearest
    reprokit.toml from `cwd` up; None when there is none."""
    if explicit is None:
        return find(cwd)
    p = Path(explicit)
    if p.is_dir():
        p = p / PROJECT_FILE
        if not p.is_file():
            raise UsageError(f"--project {explicit}: no {PROJECT_FILE} in that folder (reprokit init writes one)")
    elif not p.is_file():
        raise UsageError(f"--project {explicit}: no such file or folder")
    return p.absolute()


def load(path: Path) -> Project:
    """The project at `path`; a file that is not TOML is a ConfigError naming its line."""
    path = Path(path).absolute()
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"{path}:1: not UTF-8 text, so not a TOML file") from None
    except OSError as e:
        raise FileSystemError.of(path, e, "cannot read") from None
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(toml_problem(path, e)) from None
    return Project(path=path, text=text, raw=raw)


def toml_problem(path: Path, e: Exception) -> str:
    """tomllib's message as `file:line: why` (it says '(at line N, column M)')."""
    msg = str(e)
    m = re.search(r"\(at line (\d+), column \d+\)", msg)
    line = m.group(1) if m else "1"
    return f"{path}:{line}: not valid TOML: {re.sub(r' ?[(]at line.*[)]', '', msg) or msg}"


_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\"' -]+?)\s*\]\]?\s*(#.*)?$")


class Lines:
    """Line numbers (1-based) of tables and keys in a TOML text, found by scanning it."""

    def __init__(self, text: str):
        self.rows = text.splitlines()
        # (line, header name, is array-of-tables) for each table header
        self.headers = []
        for n, row in enumerate(self.rows, 1):
            m = _HEADER.match(row)
            if m and not row.lstrip().startswith("#"):
                self.headers.append((n, re.sub(r"\s+", "", m.group(1)).replace('"', "").replace("'", ""),
                                     row.lstrip().startswith("[[")))

    def case(self, index: int, array: str = "case") -> int:
        """The line of the index-th [[case]] (or [[array]]) header (1 when it cannot be found)."""
        starts = [n for n, name, arr in self.headers if arr and name == array]
        return starts[index] if index < len(starts) else 1

    def _case_span(self, index: int, array: str = "case") -> tuple[int, int]:
        """First and last line of the index-th case, its sub-tables ([case.args]) included."""
        start = self.case(index, array)
        end = len(self.rows)
        for n, name, arr in self.headers:
            if n > start and (name == array and arr or not name.startswith(f"{array}.")):
                end = n - 1
                break
        return start, end

    def case_key(self, index: int, key: str, table: str | None = None, array: str = "case") -> int:
        """The line where the index-th case (or [[array]] entry) sets `key` (in its sub-table
        `table`, e.g. "args", when given); the entry's header line when it cannot be found."""
        start, end = self._case_span(index, array)
        lo, hi = start, end
        if not table:
            sub = [n for n, name, _ in self.headers if start < n <= end and name == f"{array}.{key}"]
            if sub:
                return sub[0]   # the key is a sub-table: [case.args]
        if table:
            sub = [n for n, name, _ in self.headers if start < n <= end and name == f"{array}.{table}"]
            if sub:
                lo = sub[0]
                later = [n for n, _, _ in self.headers if n > lo]
                hi = min([end] + [n - 1 for n in later])
            else:
                # an inline table: `args = { a = ..., ... }` or keys spread over lines after it
                lo = self.case_key(index, table, array=array)
        pat = re.compile(rf"^\s*(\"{re.escape(key)}\"|'{re.escape(key)}'|{re.escape(key)})\s*=")
        inline = re.compile(rf"[{{,]\s*(\"{re.escape(key)}\"|{re.escape(key)})\s*=")
        for n in range(lo, hi + 1):
            row = self.rows[n - 1]
            if pat.match(row) or (table and inline.search(row)):
                return n
        return lo if table else start

    def table(self, name: str) -> int:
        """The line of the [name] header (1 when absent)."""
        return next((n for n, h, arr in self.headers if h == name and not arr), 1)

    def key(self, table: str, key: str) -> int:
        """The line of `key` in the [table] table (its header's line when not found)."""
        start = self.table(table)
        later = [n for n, _, _ in self.headers if n > start]
        end = min(later) - 1 if later else len(self.rows)
        pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
        return next((n for n in range(start, end + 1) if pat.match(self.rows[n - 1])), start)


def for_run(explicit: Path | None) -> Project | None:
    """The project a verb works on: --project's, else the nearest reprokit.toml from the current
    folder up, else None."""
    path = resolve(explicit, Path.cwd())
    return load(path) if path is not None else None
