"""`reprokit capture`: run the control suite in one stack and leave a capture folder."""

from __future__ import annotations

import json

from reprokit.commands._common import (
    add_project_arg,
    add_run_args,
    console,
    flat_case,
    gpu_choice,
    harness_error_message,
    run_options,
    say,
    verdict_table,
)
from reprokit.commands.argtypes import out_dir, stack_name
from reprokit.config import load_config
from reprokit.errors import HarnessError, UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.run.capture import capture, refuse_out
from reprokit.userspec.plan import project_run
from reprokit.userspec.project import for_run


def add_parser(sub) -> None:
    p = sub.add_parser(
        "capture", help="run the suite in one stack into a capture folder",
        description="Compile every case of the control suite (or of a project's reprokit.toml, here or above, or "
                    "--project) for a GPU profile in one stack, keeping IR at every level, SASS, compile metadata, "
                    "logs and an environment snapshot.",
        epilog="example: reprokit capture --gpu h100 --out /tmp/cap --executor local --json",
    )
    add_run_args(p, default_executor="local")
    add_project_arg(p)
    p.add_argument("--out", required=True, type=out_dir, help="capture folder to create")
    p.add_argument("--stack", type=stack_name, default=None, help="stack from stacks.toml (required unless --executor local)")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--json", action="store_true", help='print {"cases": [...]} instead of a table')
    p.set_defaults(func=run)


def run(args) -> int:
    profile = args.gpu
    if args.executor == "local" and args.stack:
        raise UsageError(f"--executor local captures this interpreter's own Triton; --stack {args.stack} needs "
                         f"venv or docker")
    # Every refusal before the GPU choice's notice, so that a refusal is the one line said: the
    # arguments (in the GPU choice), the folder (capture() checks it again under its lock), then
    # the stack.
    gpu, line = gpu_choice(args, profile, args.mode)
    refuse_out(args.out, args.force, args.host.environ.get("HOME"))
    if args.executor == "local":
        stack = local_stack()
    else:
        if not args.stack:
            raise UsageError(f"--stack is required with --executor {args.executor}; "
                             f"known: {', '.join(load_config().stacks)}")
        stack = load_config().stack(args.stack)
    if line:
        say(line)
    options = run_options(args, force=args.force)
    # A project's declared cases (reprokit.toml, here or above, or --project), else the suite.
    with project_run(for_run(args.project), gpu, args.host.tmp, report=say, only=args.cases,
                     timeout_s=args.case_timeout) as plan, \
            make_executor(args.executor, args.host, with_torch=gpu.on_gpu, report=say,
                          stacks=[stack]) as executor:
        cap = capture(stack, executor, args.out, plan, options)
    cases = cap.results.cases
    for w in cap.warnings():
        say(f"warning: {w}")
    problem = harness_error_message(f"{stack.name} ({cap.out_dir})", cap.harness_errors()) \
        if cap.harness_errors() else None
    if args.json:
        # One JSON document either way: a run with harness faults carries its error in it.
        print(json.dumps({"stack": stack.name, "gpu": profile.key, "mode": cap.mode, "out": str(cap.out_dir),
                          "warnings": cap.warnings(), "harness_errors": cap.harness_errors(), "error": problem,
                          "cases": [flat_case(c) for c in cases]}, indent=1))
        if problem:
            say(f"reprokit: {problem}")
            return HarnessError.exit_code
        return 0
    console().print(verdict_table(cases, title=f"{stack.name} (triton {cap.results.triton}) on {profile.key}, "
                                                f"{cap.mode}"))
    say(f"capture written to {cap.out_dir}")
    if problem:
        raise HarnessError(problem)
    return 0
