"""`reprokit run` (what `make bundle` calls): every chosen stack, one bundle each, and a
cross-stack verdict table at the end."""

from __future__ import annotations

import json
from pathlib import Path

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from reprokit.commands._common import add_run_args, check_workers, console, say
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.gpu import choose_mode
from reprokit.runs import grid, run_stacks

_STYLE = {"tma": "green", "no-tma": "yellow", "rejected": "cyan", "crashed": "red", "error": "red",
          "timeout": "red", "unsupported": "dim", "inconclusive": "magenta", "failed": "red"}


def print_grid(outcomes, title: str) -> None:
    """The case-by-stack verdict table, then one line per stack: its bundle or why it failed."""
    names, rows = grid(outcomes)
    t = Table(title=title)
    t.add_column("case", no_wrap=True)
    for n in names:
        t.add_column(n[len("triton-"):] if n.startswith("triton-") else n, no_wrap=True)
    for cid, cells in rows:
        t.add_row(cid, *[f"[{_STYLE.get(c.split()[0], 'white')}]{c}[/]" for c in cells])
    console().print(t)
    for o in outcomes:
        say(f"{o.stack}: {o.bundle}" if o.ok else f"{o.stack}: FAILED: {o.error}")
        for w in o.warnings:
            say(f"{o.stack}: warning: {w}")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run", help="run the suite on every chosen stack and write one bundle per stack",
        description="Capture the control suite on each stack (docker, venv or local), pack one bundle per "
                    "stack under --out, and print a case-by-stack table of verdicts.",
        epilog="example: reprokit run --gpu h100 --stacks triton-3.0-cu129,triton-3.5-cu130 --executor venv",
    )
    add_run_args(p)
    p.add_argument("--stacks", default="all", help="comma-separated stack names from stacks.toml (default all)")
    p.add_argument("--out", type=Path, default=Path("bundles"), help="folder for the bundles (default bundles/)")
    p.add_argument("--share", action="store_true", help="also scrub host name, user, home paths and GPU serials")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    cfg = load_config()
    profile = cfg.gpu(args.gpu)
    if args.executor == "local":
        # This interpreter is one stack: the one whose Triton it has.
        if args.stacks != "all":
            raise UsageError("--executor local runs this interpreter's own Triton; --stacks needs venv or docker")
        stacks = [local_stack()]
    else:
        stacks = cfg.select_stacks(args.stacks)
    workers = check_workers(args.workers)
    mode = choose_mode(profile, args.mode, say=say)
    executor = make_executor(args.executor, with_torch=(mode == "gpu"), say=say, stacks=stacks)
    with Progress(TextColumn("{task.description}"), BarColumn(), TextColumn("{task.fields[state]}"),
                  TimeElapsedColumn(), console=console(), transient=False, disable=args.json) as bar:
        tasks = {s.name: bar.add_task(s.name, total=2, state="waiting") for s in stacks}
        steps_done = {"capturing": 0, "bundling": 1, "done": 2, "failed": 2}

        def progress(name: str, state: str) -> None:
            bar.update(tasks[name], completed=steps_done[state], state=state)

        outcomes = run_stacks(stacks, profile, executor, args.out, workers=workers, mode=mode, only=args.cases,
                              case_timeout_s=args.case_timeout, share=args.share, progress=progress)
    if args.json:
        print(json.dumps({"gpu": profile.key, "mode": mode, "executor": executor.name, "stacks": [
            {"stack": o.stack, "bundle": str(o.bundle) if o.bundle else None, "error": o.error,
             "warnings": list(o.warnings)} for o in outcomes]},
            indent=1))
    else:
        print_grid(outcomes, f"TMA verdicts on {profile.key} ({profile.arch}), {mode}, executor {executor.name}")
    return 0 if all(o.ok for o in outcomes) else 3
