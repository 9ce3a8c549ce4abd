"""`reprokit diff A B`: the comparison grid of two bundles (or capture folders), the ops each
case gained and lost per IR level, or the unified diff of one case's normalised IR."""

from __future__ import annotations

import json
from dataclasses import replace

from reprokit.commands._common import add_time_args, console, say, timing_options
from reprokit.commands.argtypes import case_id, existing_path, natural
from reprokit.compare.grid import change_class, compare
from reprokit.compare.irdiff import check_case, check_level, profile_problem, unified
from reprokit.compare.normalise import LEVELS
from reprokit.compare.render import change_lines, grid_table, ops_lines
from reprokit.compare.sources import open_result_set
from reprokit.errors import UsageError


def add_parser(sub) -> None:
    p = sub.add_parser(
        "diff", help="compare two bundles: moved verdicts, ops added/removed, unified IR diffs",
        description="Compare bundle B with bundle A case by case: status, verdict, TMA ops per level, shared "
                    "memory, registers, spills, and the IR at every level once normalised (locations, temp paths, "
                    "cache hashes, SSA names and dialect spelling removed), with the ops each case gained and lost. "
                    "--case (and --level) prints the unified diff of that case's normalised IR instead. Nothing is "
                    "printed when A and B agree. Exit 0: no verdict or metric moved (IR-only changes are listed); "
                    "1: a verdict, status or metric (TMA ops, registers, spills, shared memory) moved, or with "
                    "--strict anything, normalised IR included; 2: unusable input.",
        epilog="example: reprokit diff bundles/examples/triton-3.4-cu129-h100.tgz "
               "bundles/examples/triton-3.5-cu130-h100.tgz --case tensor_descriptor.p0 --level ttgir",
    )
    p.add_argument("a", type=existing_path, help="bundle (.tgz) or capture folder")
    p.add_argument("b", type=existing_path, help="bundle (.tgz) or capture folder")
    p.add_argument("--case", type=case_id, default=None, help="print the unified diff of this case's normalised IR")
    p.add_argument("--level", default=None, choices=LEVELS, help="only this IR level (default: every level)")
    p.add_argument("--context", type=natural, default=3, metavar="N", help="lines of context in unified diffs")
    p.add_argument("--any-profile", action="store_true", help="compare bundles made for different GPU profiles")
    p.add_argument("--strict", action="store_true", help="exit 1 when only the normalised IR moved, too")
    p.add_argument("--json", action="store_true", help="print the grid (and any unified diffs) as JSON")
    add_time_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.context < 0:
        raise UsageError(f"--context must be 0 or more, got {args.context}")
    topts = timing_options(args)
    a = open_result_set(args.a, key="a")
    b = open_result_set(args.b, key="b")
    if a.label == b.label:

        a, b = replace(a, label=f"A {a.label}"), replace(b, label=f"B {b.label}")
    problem = profile_problem(a, b)
    if problem and not args.any_profile:
        raise UsageError(problem)
    levels = (args.level,) if args.level else LEVELS
    if args.level:
        check_level(args.level)
    if args.case:
        check_case(args.case, a, b)
        diffs = {lv: unified(a, b, args.case, lv, context=args.context) for lv in levels}
        grid = compare([a, b], timing_options=topts)
        row = grid.row(args.case)
        moved = [f for f in row.cells[1].moved if not f.startswith("ir.") or f[3:] in levels]
        if args.json:
            print(json.dumps({"case": args.case, "moved": moved, "cell_a": row.cells[0].to_dict(),
                              "cell_b": row.cells[1].to_dict(), "diffs": diffs}, indent=1))
        else:
            for lv in levels:
                if diffs[lv]:
                    print(diffs[lv], end="")
            other = [f for f in moved if not f.startswith("ir.")]
            if other:
                say(f"{args.case}: also moved: {', '.join(other)}")
        significant = change_class(moved) in ("verdict", "metric")
        return 1 if significant or (args.strict and (moved or any(diffs.values()))) else 0
    grid = compare([a, b], timing_options=topts)
    code = 1 if grid.significant(args.strict) else 0
    if args.json:
        print(json.dumps(grid.to_dict(), indent=1))
        return code
    if not grid.moved:
        say(f"no differences ({len(grid.rows)} cases)")
        return 0
    console().print(grid_table(grid, f"{a.label} -> {b.label}", only_moved=True))
    for line in change_lines(grid):
        print(line)
    for line in ops_lines(grid, 1, levels):
        print(line)
    return code
