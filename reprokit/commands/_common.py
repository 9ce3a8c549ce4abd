"""Arguments and output shared by several verbs (GPU profile, executor, workers, tables)."""

from __future__ import annotations

import os
import sys

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from reprokit.commands.argtypes import (
    clock_mhz,
    confidence,
    existing_path,
    fraction,
    glob_list,
    gpu_profile,
    microseconds,
    positive_int,
    positive_seconds,
)
from reprokit.common.oracle import LEVELS
from reprokit.common.rows import case_cells
from reprokit.compare.timing import DEFAULT as TIMING
from reprokit.compare.timing import TimingOptions
from reprokit.errors import ExecutorError, HarnessError
from reprokit.gpu import choose_gpu
from reprokit.options import Listener, RunOptions

EXECUTORS = ("auto", "docker", "venv", "local")


def add_run_args(p, *, default_executor: str = "auto") -> None:
    p.add_argument("--gpu", required=True, type=gpu_profile, help="GPU profile from stacks.toml (h100, h200, b200, rtx5090, gb10)")
    p.add_argument("--executor", choices=EXECUTORS, default=default_executor,
                   help=f"where stacks run (default {default_executor}; auto = docker when a daemon answers, else venv)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="cases compiled at once (default: CPU count)")
    p.add_argument("--mode", choices=("auto", "compile-only", "gpu"), default="auto",
                   help="auto: on the GPU when the host has the profile's GPU, else compile-only")
    p.add_argument("--cases", type=glob_list, default=None, metavar="GLOBS", help="only cases whose id matches, e.g. 'block_ptr.*'")
    p.add_argument("--case-timeout", type=positive_seconds, default=None, metavar="S",
                   help="seconds per case, more than 0 (default from the suite)")
    add_gpu_args(p)


def add_project_arg(p) -> None:
    p.add_argument("--project", type=existing_path, default=None, metavar="PATH",
                   help="a project's reprokit.toml (or its folder) whose declared cases run instead of the suite "
                        "(default: the nearest reprokit.toml from the current folder up, if any)")


def add_gpu_args(p) -> None:
    p.add_argument("--allow-gpu-mismatch", action="store_true",
                   help="run on a GPU whose name or memory is not the profile's (same capability); "
                        "the bundle records what differed")
    p.add_argument("--lock-clocks", type=clock_mhz, default=None, metavar="MHZ|max",
                   help="lock the GPU's SM clock for the run and reset it after (needs root; recorded). "
                        "Without it reprokit never changes a GPU setting")


def gpu_choice(args, profile, requested: str):
    """The run's GpuOptions: the host's GPU (looked at unless compile-only is asked) checked
    against the profile (reprokit.gpu), and the line that choice deserves (None: nothing to say),
    for the verb to say once its other checks have passed."""
    # --lock-clocks: clock_mhz normalised it at the door
    return choose_gpu(profile, requested, args.host.environ, allow_mismatch=args.allow_gpu_mismatch,
                      lock_clocks=args.lock_clocks)


def gpu_from_args(args, profile, requested: str):
    """gpu_choice's GpuOptions, its line said here."""
    gpu, line = gpu_choice(args, profile, requested)
    if line:
        say(line)
    return gpu


def run_options(args, **more) -> RunOptions:
    """RunOptions from the arguments add_run_args() made: workers (default one per CPU); `more`
    adds the verb's own (force)."""
    return RunOptions(workers=default_workers(args.workers), **more)


def default_workers(asked: int | None) -> int:
    """--workers as given, else one per CPU: run, capture, replay and sweep share this default,
    so that a replay of a bundle compiles as many cases at once as its capture did."""
    return asked or os.cpu_count() or 1


def add_time_args(parser) -> None:
    """The thresholds as options of a verb that compares times (diff, replay, report)."""
    g = parser.add_argument_group("time comparison (SAME/FASTER/SLOWER/AMBIGUOUS; docs/compare.md)")
    g.add_argument("--time-threshold", type=fraction, default=TIMING.threshold, metavar="FRACTION",
                   help=f"smallest relative change of a time that counts (default {TIMING.threshold:g})")
    g.add_argument("--time-min-us", type=microseconds, default=TIMING.min_abs_us, metavar="US",
                   help=f"smallest absolute change that counts, in us (default {TIMING.min_abs_us:g})")
    g.add_argument("--time-confidence", type=confidence, default=TIMING.confidence, metavar="P",
                   help=f"confidence of the bootstrap intervals (default {TIMING.confidence:g})")


def timing_options(args) -> TimingOptions:
    """TimingOptions from add_time_args' options (which check themselves: UsageError)."""
    return TimingOptions(threshold=args.time_threshold, min_abs_us=args.time_min_us, confidence=args.time_confidence)


class StackBars(Listener):
    """The Listener of `run` and `replay`: one rich bar per stack (capturing, bundling, done or
    failed), drawn on the terminal and off under --json; its notes go to stderr."""

    STEPS = {"capturing": 0, "bundling": 1, "done": 2, "failed": 2}

    def __init__(self, names: list[str], *, off: bool):
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[state]}"),
                            TimeElapsedColumn(), console=console(), transient=False, disable=off)
        self.tasks = {n: self.bar.add_task(n, total=2, state="waiting") for n in names}

    def __enter__(self) -> StackBars:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        self.bar.__exit__(*exc)

    def note(self, line: str) -> None:
        say(line)

    def stack(self, name: str, state: str) -> None:
        self.bar.update(self.tasks[name], completed=self.STEPS[state], state=state)


def console() -> Console:
    # Tables are wide; a pipe or CI log gets 200 columns rather than rich's 80.
    c = Console(highlight=False)
    return c if c.is_terminal else Console(highlight=False, width=200)


def say(msg: str) -> None:
    print(msg, file=sys.stderr)


def harness_error_message(where: str, ids: list[str]) -> str:
    """What a verb says (and exits 4 on) when cases failed in the harness rather than the compiler."""
    return (f"{where}: {len(ids)} case(s) failed in the harness, not in the compiler, so they prove nothing: "
            f"{', '.join(ids)} (each case's compile.log has the traceback)")


def grid(outcomes) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(stack names, [(case id, one cell per stack)]): verdict, with the status when it says more."""
    stacks = [o.stack for o in outcomes]
    order: list[str] = []
    cells: dict[str, dict[str, str]] = {}
    for o in outcomes:
        for c in o.results.cases if o.results else ():
            if c.id not in cells:
                order.append(c.id)
                cells[c.id] = {}
            text: str = c.verdict
            if c.fits is False:
                text += " (no launch)"
            cells[c.id][o.stack] = text
    rows = []
    for cid in order:
        rows.append((cid, [cells[cid].get(o.stack, "-" if o.ok else "failed") for o in outcomes]))
    return stacks, rows


_STYLE = {"tma": "green", "no-tma": "yellow", "rejected": "cyan", "crashed": "red", "error": "red",
          "timeout": "red", "unsupported": "dim", "inconclusive": "magenta", "failed": "red"}


def print_grid(outcomes, title: str) -> None:
    """The case-by-stack verdict table of `run` and `replay`, then one line per stack: its bundle
    or why it failed."""
    names, rows = grid(outcomes)
    t = Table(title=title)
    t.add_column("case", no_wrap=True)
    for n in names:
        t.add_column(n[len("triton-"):] if n.startswith("triton-") else n, no_wrap=True)
    for cid, cells in rows:
        t.add_row(cid, *[f"[{_STYLE.get(c.split()[0], 'white')}]{c}[/]" for c in cells])
    console().print(t)
    say_outcomes(outcomes)


def say_outcomes(outcomes) -> None:
    """One line per stack (reprokit.run.stacks.StackOutcome): its bundle or why it failed, then
    what it warned of."""
    for o in outcomes:
        say(f"{o.stack}: {o.bundle}" if o.ok else f"{o.stack}: FAILED: {o.error}")
        for w in o.warnings:
            say(f"{o.stack}: warning: {w}")


def outcomes_exit_code(outcomes) -> int:
    """What `run` and `replay` exit with: 3 when a stack could not run, 4 when cases failed in the
    harness (said once per stack), else 0."""
    for o in outcomes:
        if o.harness_errors:
            say(f"reprokit: {harness_error_message(o.stack, list(o.harness_errors))}")
    if not all(o.ok for o in outcomes):
        return ExecutorError.exit_code
    return HarnessError.exit_code if any(o.harness_errors for o in outcomes) else 0


def verdict_table(cases, title: str | None = None) -> Table:
    """A table of reprokit.records.CaseRecord."""
    columns = ("id", "status", "verdict", "expect", "met", *LEVELS, "shared_bytes", "launch")
    style = {("met", "yes"): "[green]yes[/]", ("met", "no"): "[red]no[/]", ("launch", "no"): "[yellow]no[/]"}
    t = Table(title=title, show_lines=False)
    for col in columns:
        name = {"id": "case", "shared_bytes": "smem"}.get(col, col)
        t.add_column(name, justify="right" if col in LEVELS or col == "shared_bytes" else "left", no_wrap=col == "id")
    for c in cases:
        cells = case_cells(c.to_json())  # the harness's own summary.tsv cells
        t.add_row(*[style.get((col, cells[col]), cells[col]) for col in columns])
    return t


def flat_case(c) -> dict:
    """The per-case record (reprokit.records.CaseRecord) of `--json` outputs."""
    return {"id": c.id, "family": c.family, "control": c.control, "status": c.status,
            "tma": dict(c.tma), "verdict": c.verdict, "expect": c.expect, "met": c.met,
            "reason": c.reason, "error": c.error, "launch": c.raw.get("launch")}
