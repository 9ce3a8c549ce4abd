"""`reprokit replay BUNDLE`: rerun a bundle's own plan and kernel sources, on its own stack or on
others, write new bundles that name it as their parent, and judge them against what it recorded."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.commands._common import (
    EXECUTORS,
    StackBars,
    add_gpu_args,
    add_time_args,
    console,
    default_workers,
    gpu_from_args,
    harness_error_message,
    say,
    say_outcomes,
    timing_options,
)
from reprokit.commands.argtypes import (
    existing_file,
    glob_list,
    out_dir,
    positive_int,
    stack_list,
)
from reprokit.compare.render import change_lines, grid_table
from reprokit.compare.sources import open_verified
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.gpu import host_board
from reprokit.options import BundleOptions, RunOptions
from reprokit.run.replay import replay, request, same_board_reference


def add_parser(sub) -> None:
    p = sub.add_parser(
        "replay", help="rerun a bundle's own plan and kernels on its stack or on others, and judge the result",
        description="Verify BUNDLE, then run the plan.json and kernels/ it carries (never today's suite) on the "
                    "bundle's own stack pins, or on --stacks from stacks.toml to compare versions. Each run "
                    "writes a new bundle whose manifest names BUNDLE's sha256 as its parent. One grid follows: "
                    "the bundle's recorded results first, one column per replay, each cell that moved marked "
                    "(status, verdict, TMA ops per level, shared memory, registers, spills, normalised IR), with "
                    "the numbers that moved. Exit 0: reproduced, or only normalised IR moved (listed); 1: a "
                    "verdict, status or metric moved (with --strict, IR too); 2: unusable input; "
                    "3: a stack could not run; 4: cases failed in the harness.",
        epilog="example: reprokit replay bundles/examples/triton-3.0-cu129-h100.tgz "
               "--stacks triton-3.6-cu130,triton-3.9-cu132 --executor venv",
    )
    p.add_argument("bundle", type=existing_file, metavar="BUNDLE", help="a bundle .tgz")
    p.add_argument("--stacks", type=stack_list, default=None, help="stacks from stacks.toml to replay on (default: the bundle's own)")
    p.add_argument("--cases", type=glob_list, default=None, metavar="GLOBS", help="replay only these of the bundle's cases")
    p.add_argument("--candidates", action="store_true",
                   help="a traced bundle: also replay the autotune configs the program's autotuner did not choose "
                        "(by default only the chosen ones)")
    p.add_argument("--executor", choices=EXECUTORS, default="auto")
    p.add_argument("--workers", type=positive_int, default=None, help="cases compiled at once (default: CPU count)")
    p.add_argument("--out", type=out_dir, default=Path("bundles"), help="folder for the new bundles (default bundles/)")
    p.add_argument("--share", action="store_true")
    p.add_argument("--all", action="store_true", help="list every case, not only those that moved")
    p.add_argument("--strict", action="store_true", help="exit 1 when only the normalised IR moved, too")
    p.add_argument("--json", action="store_true", help="print the grid as JSON")
    add_gpu_args(p)
    add_time_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    if args.executor == "local" and args.stacks is not None:
        raise UsageError("--executor local replays on this interpreter's own Triton; --stacks needs venv or docker")
    topts = timing_options(args)
    bundle = open_verified(args.bundle)   # verified before any stack is built
    if args.stacks is not None:
        stacks = load_config().select_stacks(args.stacks)
    elif args.executor == "local":
        stacks = [local_stack()]
    else:
        stacks = None
    req = request(bundle, stacks, args.cases, candidates=args.candidates)  # what it runs, said (or refused) before anything starts
    for chosen, other in req.instead:
        say(f"replay: {chosen}, the config the trace chose, does not fit {req.profile.key} "
            f"(its recorded capture says so; a GPU's autotuner never picks it): {other} runs instead")
    gpu = gpu_from_args(args, req.profile, req.mode)
    # Times are judged on one board: on another, the bundle's own stack is measured here too.
    req = same_board_reference(req, args.executor, gpu.on_gpu, host_board(gpu.host) if gpu.on_gpu else None)
    out = BundleOptions.from_host(args.host, args.out, share=args.share)
    with StackBars([s.name for s in req.stacks], off=args.json) as bars, \
            make_executor(args.executor, args.host, with_torch=gpu.on_gpu, report=bars.note,
                          stacks=list(req.stacks)) as executor:
        result = replay(req, executor, gpu, RunOptions(workers=default_workers(args.workers)), out, listener=bars,
                        timing_options=topts)
    grid, code = result.grid, result.exit_code_for(args.strict)
    for o in result.outcomes:
        if o.harness_errors:
            say(f"reprokit: {harness_error_message(o.stack, list(o.harness_errors))}")
    if args.json:
        print(json.dumps({"parent": result.parent, "bundle": result.bundle, "own_stack": result.own_stack,
                          "reproduced": result.reproduced, "exit_code": code,
                          "instead": [{"chosen": c, "ran": o} for c, o in req.instead],
                          "stacks": [{"stack": o.stack, "bundle": str(o.bundle) if o.bundle else None,
                                      "error": o.error, "harness_errors": list(o.harness_errors)}
                                     for o in result.outcomes],
                          "grid": grid.to_dict()}, indent=1))
        return code
    title = f"replay of {result.bundle} on {req.profile.key}, {gpu.mode}, executor {executor.name}"
    console().print(grid_table(grid, title, only_moved=not args.all and grid.moved))
    say_outcomes(result.outcomes)
    for line in change_lines(grid):
        print(line)
    if result.own_stack and not grid.failed:
        if result.reproduced:
            print("reproduced: status, verdict, TMA counts and normalised IR are equal, no time FASTER or SLOWER")
        elif not grid.significant():
            print("reproduced in verdicts and metrics; only the normalised IR moved (above)")
        else:
            print("NOT reproduced on the bundle's own stack")
    return code
