"""`reprokit run` (what `make bundle` calls): every chosen stack, one bundle each, and a
cross-stack verdict table at the end."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.commands._common import (
    StackBars,
    add_project_arg,
    add_run_args,
    gpu_from_args,
    outcomes_exit_code,
    print_grid,
    run_options,
)
from reprokit.commands.argtypes import out_dir, stack_list
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.options import BundleOptions
from reprokit.run.stacks import run_stacks
from reprokit.suite import expand_cases, load_suite, select
from reprokit.userspec.plan import project_run
from reprokit.userspec.project import for_run


def add_parser(sub) -> None:
    p = sub.add_parser(
        "run", help="run the suite on every chosen stack and write one bundle per stack",
        description="Capture the control suite, or the declared cases of a project's reprokit.toml (here or "
                    "above, or --project; docs/user-cases.md), on each stack (docker, venv or local), pack one "
                    "bundle per stack under --out, and print a case-by-stack table of verdicts.",
        epilog="example: reprokit run --gpu h100 --stacks triton-3.0-cu129,triton-3.5-cu130 --executor venv",
    )
    add_run_args(p)
    add_project_arg(p)
    p.add_argument("--stacks", type=stack_list, default="all", help="comma-separated stack names from stacks.toml (default all)")
    p.add_argument("--out", type=out_dir, default=Path("bundles"), help="folder for the bundles (default bundles/)")
    p.add_argument("--share", action="store_true", help="also scrub host name, user, home paths and GPU serials")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    profile = args.gpu
    if args.executor == "local":
        # This interpreter is one stack: the one whose Triton it has.
        if args.stacks != "all":
            raise UsageError("--executor local runs this interpreter's own Triton; --stacks needs venv or docker")
        stacks = [local_stack()]
    else:
        stacks = load_config().select_stacks(args.stacks)
    # A project's declared cases (reprokit.toml, here or above, or --project), else the suite.
    project = for_run(args.project)
    if args.cases and project is None:
        # Said here, once, as capture says it: not as a failure of every stack (exit 3).
        select(expand_cases(load_suite()), args.cases)
    gpu = gpu_from_args(args, profile, args.mode)
    options = run_options(args)
    bundle = BundleOptions.from_host(args.host, args.out, share=args.share)
    with StackBars([s.name for s in stacks], off=args.json) as bars, \
            project_run(project, gpu, args.host.tmp, report=bars.note, only=args.cases,
                        timeout_s=args.case_timeout) as plan, \
            make_executor(args.executor, args.host, with_torch=gpu.on_gpu, report=bars.note, stacks=stacks) as executor:
        outcomes = run_stacks(stacks, executor, plan, options, bundle, bars)
    if args.json:
        print(json.dumps({"gpu": profile.key, "mode": gpu.mode, "executor": executor.name, "stacks": [
            {"stack": o.stack, "bundle": str(o.bundle) if o.bundle else None, "error": o.error,
             "warnings": list(o.warnings), "harness_errors": list(o.harness_errors)} for o in outcomes]},
            indent=1))
    else:
        print_grid(outcomes, f"TMA verdicts on {profile.key} ({profile.arch}), {gpu.mode}, executor {executor.name}")
    return outcomes_exit_code(outcomes)
