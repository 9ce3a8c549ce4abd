"""`reprokit bisect --case ID --versions A..B --gpu G`: the first Triton release on the package
index where a case's status or verdict changes, in O(log n) compile-only captures."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
)

from reprokit.commands._common import add_project_arg, console, say
from reprokit.commands.argtypes import (
    case_id,
    gpu_profile,
    metric_spec,
    non_negative_number,
    out_dir,
    positive_int,
    version_range,
)
from reprokit.compare.metric import parse_metric
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.executors import make_executor
from reprokit.options import BundleOptions, GpuOptions, Listener, quiet
from reprokit.run.bisect import PackageIndex, bisect, list_releases, max_captures, parse_range, scan
from reprokit.suite import expand_cases, load_suite
from reprokit.userspec.plan import checked, project_run
from reprokit.userspec.project import for_run


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bisect", help="find the first Triton release where a case's verdict, or a metric of its compile, changes",
        description="List the Triton releases from FIRST to LAST on the package index (pip, for the Python the "
                    "stacks are built with; releases without a wheel for it are skipped and named), then bisect: "
                    "compile-only captures of the one case, each in a stack built on demand (a stacks.toml stack "
                    "where one pins that release), following its status and verdict or --metric: regs, smem, "
                    "spills, tma:LEVEL or op:NAME@LEVEL, changed when it moves by more than --threshold. Ends with the two boundary bundles under --out and one answer "
                    "line. Assumes one change inside the range, like git bisect.",
        epilog="example: reprokit bisect --case tensor_descriptor.p0 --versions 3.4.0..3.9.0 --gpu h100 --metric regs\n"
               "example: reprokit bisect --case tensor_descriptor.p0 --versions 3.4.0..3.9.0 --gpu h100 --metric regs --scan",
    )
    p.add_argument("--case", required=True, type=case_id,
                   help="a case id of the suite (e.g. tensor_descriptor.p0), or of the project's reprokit.toml")
    p.add_argument("--versions", required=True, type=version_range, metavar="FIRST..LAST", help="inclusive range of Triton releases")
    p.add_argument("--gpu", required=True, type=gpu_profile, help="GPU profile from stacks.toml")
    p.add_argument("--executor", choices=("venv", "docker"), default="venv")
    p.add_argument("--out", type=out_dir, default=Path("bundles"), help="where the boundary bundles go")
    p.add_argument("--metric", type=metric_spec, default="verdict", metavar="METRIC",
                   help="what to follow: verdict (default), regs, smem, spills, tma:LEVEL or op:NAME@LEVEL")
    p.add_argument("--threshold", type=non_negative_number, default=None, metavar="N",
                   help="a numeric metric counts as changed only when it moves by more than N (default 0)")
    p.add_argument("--scan", action="store_true",
                   help="capture every release in the range (--jobs at once) instead of bisecting, keep every "
                        "bundle, and name each transition (regressed in X, fixed in Y); releases that cannot run "
                        "the case are listed as unsupported")
    p.add_argument("--jobs", type=positive_int, default=4, metavar="N",
                   help="--scan: releases captured at once (default 4)")
    p.add_argument("--json", action="store_true", help="print the bisection as JSON")
    add_project_arg(p)
    p.set_defaults(func=run)


def run(args) -> int:
    cfg = load_config()
    profile = args.gpu
    lo, hi = parse_range(args.versions)
    metric = parse_metric(args.metric, args.threshold)
    # A project's declared cases (reprokit.toml, here or above, or --project), else the suite.
    project = for_run(args.project)
    if project is None:
        known, where = [c["id"] for c in expand_cases(load_suite())], "the suite"
    else:
        known, where = [c["id"] for c in checked(project).cases], project.shown
    if args.case not in known:
        raise UsageError(f"no case {args.case!r} in {where}; e.g. {', '.join(known[:4])}")
    with project_run(project, GpuOptions(profile, "compile-only"), args.host.tmp, only=args.case) as plan, \
            make_executor(args.executor, args.host, report=quiet if args.json else say) as executor:
        return _bisect(args, cfg, profile, lo, hi, executor, metric, plan)


def _bisect(args, cfg, profile, lo: str, hi: str, executor, metric, plan) -> int:

    # The Python the venv stacks are built with; docker stacks pin their own, and pip on this
    # interpreter's version is the nearest question to ask.
    python = getattr(executor, "python", None) or os.path.realpath(sys.executable)
    releases = list_releases(lo, hi, python, PackageIndex())
    if not args.json:
        say(f"releases {lo}..{hi} with a wheel for Python {releases.python}: {', '.join(releases.usable)}")
        if releases.skipped:
            say(f"skipped (no wheel for Python {releases.python}): {', '.join(releases.skipped)}")
        if releases.note:
            say(f"note: {releases.note}")
    if args.scan:
        return _scan(args, cfg, profile, releases, executor, metric, plan)
    total = max_captures(len(releases.usable))
    with Progress(TextColumn("bisect {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[last]}"), TimeElapsedColumn(), console=console(),
                  disable=args.json) as bar:
        task = bar.add_task(args.case, total=total, last="")

        class Steps(Listener):
            def step(self, step) -> None:
                rel = "" if step.same_as_first is None else (" (as the first)" if step.same_as_first else " (changed)")
                seen = f"{step.status}/{step.verdict}" + ("" if metric.kind == "verdict" else f", {metric.text(step.value)}")
                bar.update(task, advance=1, last=f"{step.version}: {seen}")
                if not args.json:
                    bar.console.print(f"step {step.n}: triton {step.version} ({step.stack}): {seen}{rel}")

        result = bisect(args.case, profile, releases, cfg, executor, BundleOptions.from_host(args.host, args.out),
                        listener=Steps(), metric=metric, plan=plan)
        bar.update(task, total=len(result.steps), completed=len(result.steps))
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    for b in result.bundles:
        say(f"bundle: {b}")
    print(result.answer)
    return 0


def _scan(args, cfg, profile, releases, executor, metric, plan) -> int:
    with Progress(TextColumn("scan {task.description}"), BarColumn(), MofNCompleteColumn(),
                  TextColumn("{task.fields[last]}"), TimeElapsedColumn(), console=console(),
                  disable=args.json) as bar:
        task = bar.add_task(args.case, total=len(releases.usable), last="")

        class Steps(Listener):
            def step(self, step) -> None:
                seen = f"{step.status}/{step.verdict}" + ("" if metric.kind == "verdict" else f", {metric.text(step.value)}")
                bar.update(task, advance=1, last=f"{step.version}: {seen}")

        result = scan(args.case, profile, releases, cfg, executor, BundleOptions.from_host(args.host, args.out),
                      listener=Steps(), metric=metric, plan=plan, jobs=args.jobs)
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    for p in result.points:
        seen = p.error if not p.runs else (f"{p.status}/{p.verdict}" + ("" if metric.kind == "verdict" else f", {metric.text(p.value)}"))
        say(f"triton {p.version} ({p.stack}): {p.status if not p.runs else 'runs'}: {seen}")
    for b in result.bundles:
        say(f"bundle: {b}")
    say(f"{len(result.points)} releases captured in {result.wall_s:.1f} s, {args.jobs} at once")
    print(result.answer)
    return 0
