"""The comparison grid: cases down, result sets across, each cell judged against the first column.

Public API (what `replay`, `diff` and `report` build on):

    from reprokit.compare.grid import compare, Grid
    grid = compare([rs0, rs1, ...])          # ResultSets, bundle paths or capture folders
    grid.columns   -> tuple[Column]          # column 0 is the baseline (a replay's recorded bundle)
    grid.rows      -> tuple[Row]             # one per case id, in the baseline's order, then new ones
    row.cells      -> tuple[Cell]            # one per column; Cell.present is False where a case is absent
    cell.moved     -> tuple[str]             # what differs from column 0's cell: "status", "verdict",
                                             # "tma.<level>", "ir.<level>", "shared_bytes", "registers",
                                             # "spill_stores", "spill_loads", "gpu_status", "correct",
                                             # "outputs" (a declared call's outputs, neither
                                             # bit-exact nor within its dtype's tolerance), "present",
                                             # "time" (FASTER or SLOWER at a size: reprokit.compare.timing)
    cell.ops       -> tuple[OpDelta]         # where an IR level moved: ops added (+n) / removed (-n)
    cell.change    -> str                    # the class of what moved, the first that holds of:
                                             # "verdict" (status, verdict, presence, GPU status,
                                             # correctness, a call's outputs), "metric" (TMA ops per level, registers,
                                             # spills, shared memory, a time judged FASTER/SLOWER),
                                             # "ir" (normalised IR only), "" (nothing)
    cell.metrics   -> tuple[MetricDelta]     # the numbers of what moved: regs 127 -> 94
    grid.moved     -> bool                   # any cell of any column moved
    grid.significant(strict) -> bool         # a verdict or metric moved (with strict, IR too):
                                             # what `replay` and `diff` exit 1 on
    grid.changes() -> tuple[ColumnChanges]   # per column: verdicts that moved, families that became
                                             # (un)supported, cases that moved
    grid.to_dict() -> dict                   # `--json` (format 1); dicts only here, at the edge

A replay on its own stack *reproduces* when nothing moved: status, verdict, TMA counts per level,
resources and the normalised IR (reprokit.compare.normalise) are all equal. On GPU bundles a
cell also carries correctness and its measured time, and `time_ratio` against column 0.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from reprokit.bundle.reader import Bundle
from reprokit.compare import boards, timing
from reprokit.compare.normalise import LEVELS, ops
from reprokit.compare.sources import ResultSet, open_result_set
from reprokit.records import CaseRecord

FORMAT = 1
RAW = "raw:"   # an IR level kept only as the sha256 of its raw text (condensed sweep points)
RESOURCES = ("shared_bytes", "registers", "spill_stores", "spill_loads")
# What moved, by class, most telling first (cell.change).
VERDICT_FIELDS = ("present", "status", "verdict", "gpu_status", "correct", "inputs", "outputs")
CHANGES = ("verdict", "metric", "ir")


def change_class(moved: Iterable[str]) -> str:
    """The class of a cell's moved fields: "verdict", "metric", "ir" or "" (nothing moved)."""
    moved = tuple(moved)
    if any(f in VERDICT_FIELDS for f in moved):
        return "verdict"
    if any(not f.startswith("ir.") for f in moved):
        return "metric"
    return "ir" if moved else ""


@dataclass(frozen=True)
class MetricDelta:
    name: str                  # "regs", "smem", "spill_stores", "spill_loads", "tma.<level>"
    before: int | float | None
    after: int | float | None

    def text(self) -> str:
        return f"{self.name} {_num(self.before)} -> {_num(self.after)}"


def _num(v) -> str:
    return "-" if v is None else (f"{v:g}" if isinstance(v, float) else str(v))


@dataclass(frozen=True)
class Column:
    key: str
    label: str
    role: str                  # recorded | replay | bundle | capture | failed
    stack: str | None
    triton: str | None
    profile: str | None
    mode: str | None
    path: str | None
    sha256: str | None
    parent: str | None
    error: str | None = None   # a replay that could not run: its cells are all absent
    board: str | None = None   # env.json's board identity (sha256 of the UUID); None: unknown
    # Against column 0 (reprokit.compare.boards): "same board", "another board", "board unknown";
    # None where either ran compile-only.
    board_relation: str | None = None
    times_against: str | None = None  # the column whose same-board times this one's labels judge

    @classmethod
    def of(cls, rs: ResultSet) -> Column:
        return cls(rs.key, rs.label, rs.role, rs.stack.get("name"), rs.triton, rs.profile, rs.mode, rs.path,
                   rs.sha256, rs.parent, board=rs.board)

    @classmethod
    def failed(cls, key: str, label: str, error: str, triton: str | None = None) -> Column:
        return cls(key, label, "failed", key, triton, None, None, None, None, None, error)


@dataclass(frozen=True)
class OpDelta:
    level: str
    op: str
    delta: int                 # > 0 added, < 0 removed (against column 0)


@dataclass(frozen=True)
class Cell:
    present: bool
    status: str | None = None
    verdict: str | None = None
    expect: str | None = None
    met: bool | None = None
    tma: tuple = ()            # ((level, count), ...) for the levels the case produced
    shared_bytes: int | None = None
    registers: int | None = None
    spill_stores: int | None = None
    spill_loads: int | None = None
    fits: bool | None = None   # launchable within the profile's shared memory per block
    ir: tuple = ()             # ((level, hash of the normalised text or None), ...) over LEVELS
    error: str | None = None
    failing_pass: str | None = None
    gpu_status: str | None = None   # GPU runs: ok, out_of_resources, illegal_address, ...
    correct: bool | None = None
    time_s: float | None = None      # the record's headline median (gpu.bench[0])
    times: tuple = ()                # ((method, seconds), ...): every method the record has, headline first
    outputs: tuple = ()              # a declared call on a GPU: ((tensor, summary), ...) (harness.kinds.callgpu)
    deterministic: bool | None = None  # a declared call on a GPU: its relaunches gave the same bytes
    inputs: tuple = ()               # a declared call on a GPU: ((tensor, sha256 before the launch), ...)
    # Against the first column, each output's check: ((tensor, {match, max_abs, max_rel, against}), ...)
    output_checks: tuple = ()
    time_ratio: float | None = None  # against the first column, by a method both records have
    # Against the first column, per benchmarked size, the kernel's time judged from both sides'
    # raw samples (reprokit.compare.timing): ((size, Judgement), ...); `time_label` is the one
    # that says most (FASTER/SLOWER over AMBIGUOUS over SAME).
    time_labels: tuple = ()
    moved: tuple = ()
    ops: tuple = ()            # OpDelta, where an IR level moved
    metrics: tuple = ()        # MetricDelta for each metric that moved

    @property
    def change(self) -> str:
        return change_class(self.moved)

    def tma_at(self, level: str) -> int | None:
        return dict(self.tma).get(level)

    def ir_at(self, level: str) -> str | None:
        return dict(self.ir).get(level)

    def to_dict(self) -> dict:
        if not self.present:
            return {"present": False, "moved": list(self.moved)}
        d = asdict(self)
        d["tma"] = dict(self.tma)
        d["ir"] = dict(self.ir)
        d["moved"] = list(self.moved)
        d["ops"] = [asdict(o) for o in self.ops]
        d["times"] = dict(self.times)
        d["outputs"] = dict(self.outputs)
        d["inputs"] = dict(self.inputs)
        d["output_checks"] = dict(self.output_checks)
        d["metrics"] = [asdict(m) for m in self.metrics]
        d["change"] = self.change
        d["time_labels"] = [{"size": size, **j.to_dict()} for size, j in self.time_labels]
        d["time_label"] = self.time_label
        return d

    @property
    def time_label(self) -> str | None:
        labels = [j.label for _, j in self.time_labels]
        for want in (timing.SLOWER, timing.FASTER, timing.AMBIGUOUS, timing.SAME):
            if want in labels:
                return want
        return None


@dataclass(frozen=True)
class Row:
    case: str
    family: str | None
    control: str | None
    cells: tuple               # Cell per column

    @property
    def moved(self) -> bool:
        return any(c.moved for c in self.cells)

    @property
    def change(self) -> str:
        """The most telling class of change in any column (CHANGES order), or ""."""
        found = {c.change for c in self.cells}
        return next((k for k in CHANGES if k in found), "")


@dataclass(frozen=True)
class ColumnChanges:
    column: str
    moved_cases: tuple         # case ids with any moved field
    verdicts: tuple            # ((case, from, to), ...)
    statuses: tuple            # ((case, from, to), ...)
    became_unsupported: tuple  # families supported in column 0, unsupported throughout here
    became_supported: tuple
    by_change: tuple = ()      # ((class, count), ...) over CHANGES, for the classes that occur

    def to_dict(self) -> dict:
        return {"column": self.column, "moved_cases": list(self.moved_cases), "by_change": dict(self.by_change),
                "verdicts": [{"case": c, "from": a, "to": b} for c, a, b in self.verdicts],
                "statuses": [{"case": c, "from": a, "to": b} for c, a, b in self.statuses],
                "became_unsupported": list(self.became_unsupported),
                "became_supported": list(self.became_supported)}


@dataclass(frozen=True)
class Grid:
    columns: tuple
    rows: tuple

    @property
    def moved(self) -> bool:
        return any(r.moved for r in self.rows)

    @property
    def failed(self) -> tuple:
        return tuple(c for c in self.columns if c.error)

    def significant(self, strict: bool = False) -> bool:
        """Whether a verdict or a metric moved anywhere (with `strict`, normalised IR too)."""
        wanted = set(CHANGES) if strict else {"verdict", "metric"}
        return any(c.change in wanted for r in self.rows for c in r.cells[1:])

    def column_index(self, key: str) -> int:
        for i, c in enumerate(self.columns):
            if c.key == key:
                return i
        raise KeyError(key)

    def row(self, case: str) -> Row:
        for r in self.rows:
            if r.case == case:
                return r
        raise KeyError(case)

    def cell(self, case: str, column: str) -> Cell:
        return self.row(case).cells[self.column_index(column)]

    def changes(self) -> tuple:
        out = []
        for i, col in enumerate(self.columns[1:], start=1):
            moved, verdicts, statuses = [], [], []
            classes: Counter = Counter()
            for r in self.rows:
                base, cell = r.cells[0], r.cells[i]
                if cell.moved:
                    moved.append(r.case)
                    classes[cell.change] += 1
                if "verdict" in cell.moved or "present" in cell.moved:
                    verdicts.append((r.case, base.verdict, cell.verdict))
                if "status" in cell.moved or "present" in cell.moved:
                    statuses.append((r.case, base.status, cell.status))
            out.append(ColumnChanges(col.key, tuple(moved), tuple(verdicts), tuple(statuses),
                                     *self._support_shift(i), tuple((k, classes[k]) for k in CHANGES if classes[k])))
        return tuple(out)

    def _support_shift(self, i: int) -> tuple[tuple, tuple]:
        fams: dict = {}
        for r in self.rows:
            if r.family:
                fams.setdefault(r.family, []).append((r.cells[0], r.cells[i]))
        lost, gained = [], []
        for fam, pairs in fams.items():
            both = [(a, b) for a, b in pairs if a.present and b.present]
            if not both:
                continue
            base_uns = all(a.status == "unsupported" for a, _ in both)
            col_uns = all(b.status == "unsupported" for _, b in both)
            if col_uns and not base_uns:
                lost.append(fam)
            elif base_uns and not col_uns:
                gained.append(fam)
        return tuple(lost), tuple(gained)

    def to_dict(self) -> dict:
        return {
            "format": FORMAT,
            "levels": list(LEVELS),
            "columns": [asdict(c) for c in self.columns],
            "moved": self.moved,
            "significant": self.significant(),
            "cases": [{"id": r.case, "family": r.family, "control": r.control, "moved": r.moved, "change": r.change,
                       "cells": [c.to_dict() for c in r.cells]} for r in self.rows],
            "changes": [c.to_dict() for c in self.changes()],
        }


def _correct(case: CaseRecord) -> bool | None:
    """GPU runs: whether the launched kernel's output matched the reference (results.json's
    gpu.correctness.ok); None where the case did not run on a GPU."""
    v = (case.gpu.get("correctness") or {}).get("ok")
    return v if isinstance(v, bool) else None


def _times(case: CaseRecord) -> tuple:
    """GPU runs: the kernel's median time at the first benchmarked size (gpu.bench[0]), in
    seconds, by each method the record has, its headline first: (("profiler", s), ("events", s)).
    Records from before the profiler timed launches have events alone (their median_ms)."""
    def num(v):
        return float(v) * 1e-3 if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    for row in case.gpu.get("bench") or []:
        k = row.get("kernel") or {}
        if num(k.get("median_ms")) is None:
            continue
        found = {"profiler": num((k.get("profiler") or {}).get("median_ms")),
                 "events": num((k.get("events") or {}).get("median_ms"))}
        headline = k.get("headline") or "events"
        found[headline] = num(k["median_ms"])
        return tuple((m, found[m]) for m in [headline] + [m for m in found if m != headline] if found[m] is not None)
    return ()


def _cell(rs: ResultSet, case: CaseRecord | None) -> Cell:
    if case is None:
        return Cell(present=False)
    meta = case.metadata
    times = _times(case)
    tma = case.tma
    ir: list[tuple[str, str | None]] = []
    kept_as_hash = case.ir_sha256
    for lv in LEVELS:
        text = rs.normalised(case.id, lv)
        if text is not None:
            ir.append((lv, _digest(text)))
        else:
            # A condensed sweep point keeps only the sha256 of its raw IR: "raw:" marks a level
            # that exists but can be compared only with another raw hash.
            ir.append((lv, f"{RAW}{kept_as_hash[lv][:16]}" if kept_as_hash.get(lv) else None))
    return Cell(present=True, status=case.status, verdict=case.verdict, expect=case.expect,
                met=case.met, tma=tuple((lv, tma[lv]) for lv in LEVELS if lv in tma),
                shared_bytes=meta.get("shared_bytes"), registers=meta.get("registers"),
                spill_stores=meta.get("spill_stores"), spill_loads=meta.get("spill_loads"), fits=case.fits, ir=tuple(ir),
                error=case.error, failing_pass=case.failing_pass,
                gpu_status=case.gpu_status, correct=_correct(case),
                time_s=times[0][1] if times else None, times=times,
                outputs=tuple(sorted((case.gpu.get("outputs") or {}).items())),
                deterministic=(case.gpu.get("determinism") or {}).get("deterministic"),
                inputs=tuple(sorted(((case.gpu.get("inputs") or {}).get("sha256") or {}).items())))


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _ir_comparable(a: str | None, b: str | None) -> bool:
    """Normalised-text hashes compare with each other, raw hashes with each other, and a level
    present against one absent always moves; a raw hash against a normalised one says nothing."""
    if a is None or b is None:
        return True
    return a.startswith(RAW) == b.startswith(RAW)


def _moved(base: Cell, cell: Cell) -> tuple:
    if base.present != cell.present:
        return ("present",)
    if not cell.present:
        return ()
    out = [f for f in ("status", "verdict") if getattr(base, f) != getattr(cell, f)]
    bt, ct = dict(base.tma), dict(cell.tma)
    out += [f"tma.{lv}" for lv in LEVELS if bt.get(lv) != ct.get(lv)]
    # A resource is ptxas's report: a compile Triton took from its cache (a trace's capture
    # seeded with the program's own) ran no ptxas and has none. Unknown on one side is no move.
    out += [f for f in RESOURCES if getattr(base, f) != getattr(cell, f)
            and getattr(base, f) is not None and getattr(cell, f) is not None]
    bi, ci = dict(base.ir), dict(cell.ir)
    out += [f"ir.{lv}" for lv in LEVELS if bi.get(lv) != ci.get(lv) and _ir_comparable(bi.get(lv), ci.get(lv))]
    # GPU facts count where both sides ran on a GPU: a compile-only replay of a GPU bundle has
    # nothing to say about them.
    for f in ("gpu_status", "correct"):
        a, b = getattr(base, f), getattr(cell, f)
        if a is not None and b is not None and a != b:
            out.append(f)
    if _inputs_differ(base, cell):
        out.append("inputs")  # launched from other inputs: their outputs say nothing of the kernel
    elif any(c["match"] in ("differs", "missing", "inexact") for _, c in output_checks(base, cell)):
        out.append("outputs")
    return tuple(out)


def _inputs_differ(base: Cell, cell: Cell) -> bool:
    """Both calls launched, from other values of a tensor that neither wrote (an output's
    contents before the launch, often torch.empty's, are left out: a kernel that reads them
    shows it in its outputs)."""
    if not (base.inputs and cell.inputs):
        return False
    written = {n for n, _ in base.outputs} | {n for n, _ in cell.outputs}
    a, b = dict(base.inputs), dict(cell.inputs)
    return any(a.get(n) != b.get(n) for n in sorted(set(a) | set(b)) if n not in written)


def output_checks(base: Cell, cell: Cell) -> tuple:
    """A call's outputs against column 0's, ((tensor, {match, max_abs, max_rel, against}), ...):
    bit-exact where both runs were deterministic, else within the dtype's tolerance
    (harness.kinds.callgpu.compare_output; "differs", "missing" and "inexact" move). Where column 0
    launched nothing (a trace, or a compile-only bundle), the outputs its trace recorded are the
    reference (`reference` of each output: "differs" moves)."""
    if base.outputs and cell.outputs:
        # The harness's own rule, loaded only where both sides launched a call case and kept outputs.
        from reprokit.harness.kinds.callgpu import compare_output

        det = (bool(base.deterministic), bool(cell.deterministic))
        a, b = dict(base.outputs), dict(cell.outputs)
        return tuple((n, {**compare_output(a.get(n), b.get(n), det), "against": "column 0"})
                     for n in sorted(set(a) | set(b)))
    if not base.outputs:
        return tuple((n, {"match": ref["match"], "against": "recorded",
                          **{k: ref[k] for k in ("max_abs", "max_rel") if k in ref}})
                     for n, o in cell.outputs if (ref := o.get("reference") or {}).get("match"))
    return ()


def moved_summary(cell: Cell, max_ops: int = 3) -> str:
    """What moved, with its numbers: 'regs 127 -> 94, smem 1024 -> 1152, +1 cp.async.bulk.wait_group
    (ptx)'. Status and verdict show in the cell itself; when the status moved, the rest follows from
    it and is left out. IR that moved with no op count changed is named by level ('ir: ttgir')."""
    if "status" in cell.moved or "present" in cell.moved:
        return ""
    parts = [m.text() for m in cell.metrics]
    for f in cell.moved:
        if f in ("gpu_status", "correct", "inputs"):
            parts.append({"gpu_status": "gpu", "correct": "correct", "inputs": "launched from other inputs"}[f])
        elif f == "outputs":
            off = [f"{name} {c['match']}" + (f" max abs {c['max_abs']:.3g}" if isinstance(c.get("max_abs"), float) else "")
                   for name, c in cell.output_checks if c["match"] not in ("exact", "close")]
            against = cell.output_checks[0][1]["against"] if cell.output_checks else "column 0"
            parts.append(f"outputs vs {against}: {', '.join(off)}" if off else "outputs differ")
    deltas = sorted(cell.ops, key=lambda d: (-abs(d.delta), d.level, d.op))
    parts += [f"{'+' if d.delta > 0 else '-'}{abs(d.delta)} {d.op} ({d.level})" for d in deltas[:max_ops]]
    if len(deltas) > max_ops:
        parts.append(f"+{len(deltas) - max_ops} more op changes")
    quiet = [f[3:] for f in cell.moved if f.startswith("ir.") and not any(d.level == f[3:] for d in cell.ops)]
    if quiet:
        parts.append("ir: " + ",".join(quiet))
    return ", ".join(parts)


def op_deltas(a: ResultSet, b: ResultSet, case: str, level: str) -> tuple:
    """Ops at one level of one case: added in b (delta > 0) and removed from a (delta < 0)."""
    ta, tb = a.normalised(case, level), b.normalised(case, level)
    ca = ops(level, ta) if ta is not None else Counter()
    cb = ops(level, tb) if tb is not None else Counter()
    out = [OpDelta(level, op, cb[op] - ca[op]) for op in sorted(set(ca) | set(cb)) if cb[op] != ca[op]]
    return tuple(sorted(out, key=lambda d: (-abs(d.delta), d.op)))


def size_key(size: dict) -> str:
    """A benchmark size as text: "4096x4096" (M, N, K in that order)."""
    return "x".join(str(size[k]) for k in ("M", "N", "K") if k in size)


def time_labels(base_rs: ResultSet, rs: ResultSet, case: str, opts: timing.TimingOptions = timing.DEFAULT,
                board: str | None = boards.SAME_BOARD) -> tuple:
    """((size, Judgement), ...) for the kernel at every size both sides benchmarked; `board`: how
    the two sides' boards relate (anything but the same board is judged against the cross-board
    tolerance, reprokit.compare.boards)."""
    base = {size_key(r.get("size") or {}): r for r in base_rs.bench_runs(case)}
    out = []
    for run in rs.bench_runs(case):
        key = size_key(run.get("size") or {})
        old_raw = (base.get(key) or {}).get("raw") or {}
        new_raw = run.get("raw") or {}
        if old_raw.get("kernel") and new_raw.get("kernel"):
            if board in (None, boards.SAME_BOARD):
                j = timing.judge_raw(old_raw["kernel"], new_raw["kernel"], opts)
            else:
                j = boards.judge_across(old_raw, new_raw, run.get("size") or {}, opts, board)
            if j is not None:
                out.append((key, j))
    return tuple(out)


def _judge(base: Cell, cell: Cell, base_rs: ResultSet, rs: ResultSet, case: str,
           opts: timing.TimingOptions = timing.DEFAULT, *, time_rs: ResultSet | None = None,
           board: str | None = boards.SAME_BOARD) -> Cell:
    """`cell` against column 0's `base`; its times against `time_rs` (column 0's by default),
    whose board relates to this one's as `board` says."""
    from dataclasses import replace

    moved = _moved(base, cell)
    time_rs = time_rs or base_rs
    labels = time_labels(time_rs, rs, case, opts, board) if base.present and cell.present else ()
    if any(j.moved for _, j in labels):  # only FASTER or SLOWER moves a time
        moved = moved + ("time",)
    deltas: list = []
    for f in moved:
        # Ops are listed where both sides have IR: a case that did not compile on one side says
        # so in its status, not as every op removed.
        if f.startswith("ir.") and base.ir_at(f[3:]) is not None and cell.ir_at(f[3:]) is not None:
            deltas += op_deltas(base_rs, rs, case, f[3:])
    # Times are compared by one method: the profiler's where both records have it, else the
    # events' (which every GPU record has); never one record's profiler against the other's
    # events, which also count each launch's start (about 3 us on the H100).
    ratio = None
    base_t = dict(base.times)
    for method, t in sorted(cell.times, key=lambda mt: mt[0] != "profiler"):
        if base_t.get(method):
            ratio = round(t / base_t[method], 4)
            break
    return replace(cell, moved=moved, ops=tuple(deltas), time_ratio=ratio, time_labels=labels,
                   metrics=_metric_deltas(base, cell, moved), output_checks=output_checks(base, cell))


_METRIC_NAMES = {"shared_bytes": "smem", "registers": "regs", "spill_stores": "spill_stores",
                 "spill_loads": "spill_loads"}


def _metric_deltas(base: Cell, cell: Cell, moved: tuple) -> tuple:
    out = []
    for f in moved:
        if f.startswith("tma."):
            out.append(MetricDelta(f, base.tma_at(f[4:]), cell.tma_at(f[4:])))
        elif f in _METRIC_NAMES:
            out.append(MetricDelta(_METRIC_NAMES[f], getattr(base, f), getattr(cell, f)))
    return tuple(out)


def as_result_set(item, role: str = "bundle") -> ResultSet:
    if isinstance(item, ResultSet):
        return item
    if isinstance(item, (str, Path)):
        return open_result_set(Path(item), role=role)
    if isinstance(item, Bundle):
        return ResultSet.from_bundle(item, role=role)
    raise TypeError(f"cannot compare a {type(item).__name__}")


def _unique_keys(sets: list[ResultSet]) -> list[ResultSet]:
    from dataclasses import replace

    seen: Counter = Counter()
    out = []
    for rs in sets:
        seen[rs.key] += 1
        out.append(rs if seen[rs.key] == 1 else replace(rs, key=f"{rs.key}#{seen[rs.key]}"))
    return out


def compare(items: Sequence, *, failed: Iterable[Column] = (), timing_options: timing.TimingOptions = timing.DEFAULT,
            time_reference: str | None = None) -> Grid:
    """The grid of `items` (ResultSets, Bundles, bundle paths or capture folders), judged against
    the first. A Column among the items (Column.failed: a stack that did not run) keeps its place
    and holds absent cells that are not judged; `failed` appends more such columns.

    Times are judged on one board: with `time_reference` (a column's key: a replay of the
    bundle's own stack, measured on the board of every column after the first) each other column's
    time labels are judged against that column, and that column against column 0. Without one,
    a column on another or an unknown board than column 0 is judged against the cross-board
    tolerance (reprokit.compare.boards)."""
    entries = [it if isinstance(it, Column) else as_result_set(it) for it in list(items) + list(failed)]
    sets = _unique_keys([e for e in entries if isinstance(e, ResultSet)])
    if not sets or isinstance(entries[0], Column):
        raise ValueError("compare() needs a result set first")
    it = iter(sets)
    entries = [e if isinstance(e, Column) else next(it) for e in entries]
    order: list[str] = []
    info: dict = {}
    for rs in sets:
        for c in rs.cases:
            if c.id not in info:
                order.append(c.id)
                info[c.id] = (c.family, c.control)
    base_rs = sets[0]
    ref = next((rs for rs in sets[1:] if rs.key == time_reference), None)
    if time_reference is not None and ref is None:
        raise ValueError(f"compare(): no column {time_reference!r} to judge times against")
    against = {e.key: _time_reference(base_rs, ref, e) for e in sets[1:]}
    rows = []
    for cid in order:
        base = _cell(base_rs, base_rs.case(cid))
        cells = [base]
        for e in entries[1:]:
            if isinstance(e, Column):
                cells.append(Cell(present=False))
            else:
                time_rs, board = against[e.key]
                cells.append(_judge(base, _cell(e, e.case(cid)), base_rs, e, cid, timing_options,
                                    time_rs=time_rs, board=board))
        family, control = info[cid]
        rows.append(Row(cid, family, control, tuple(cells)))
    columns = [e if isinstance(e, Column) else Column.of(e) for e in entries]
    columns = [columns[0]] + [_related(c, columns[0], against) for c in columns[1:]]
    return Grid(tuple(columns), tuple(rows))


def _time_reference(base_rs: ResultSet, ref: ResultSet | None, rs: ResultSet) -> tuple:
    """(the result set whose times judge `rs`'s, how their boards relate): the same-board
    reference for every column but itself (the reference is judged against column 0). The
    caller names a reference only for columns measured on its board (one replay, one host),
    which their records may not say (--share leaves the identity out)."""
    if ref is not None and rs is not ref:
        return ref, boards.SAME_BOARD
    rel = boards.relation(base_rs.mode, base_rs.board, rs.mode, rs.board)
    return base_rs, rel if rel is not None else boards.SAME_BOARD


def _related(col: Column, base: Column, against: dict) -> Column:
    from dataclasses import replace

    rel = boards.relation(base.mode, base.board, col.mode, col.board)
    time_rs, _ = against.get(col.key, (None, None))
    return replace(col, board_relation=rel, times_against=time_rs.key if time_rs is not None else None)


__all__ = ["Cell", "Column", "ColumnChanges", "Grid", "MetricDelta", "OpDelta", "Row", "compare", "op_deltas",
           "as_result_set", "change_class", "moved_summary", "CHANGES", "FORMAT", "RESOURCES", "LEVELS", "VERDICT_FIELDS"]
