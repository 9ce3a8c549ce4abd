"""`reprokit prepare` (what `make images` calls): build the chosen stacks' images or venvs ahead
of a run, without running anything in them."""

from __future__ import annotations

import json

from reprokit.commands._common import EXECUTORS, say
from reprokit.commands.argtypes import stack_list
from reprokit.config import load_config
from reprokit.errors import ExecutorError, FileSystemError, ReprokitError, UsageError
from reprokit.executors import make_executor


def add_parser(sub) -> None:
    p = sub.add_parser("prepare", help="build stack images (docker) or venvs ahead of a run",
                       epilog="example: reprokit prepare --stacks triton-3.5-cu130 --executor venv")
    p.add_argument("--stacks", type=stack_list, default="all", help="comma-separated stack names (default all)")
    p.add_argument("--executor", choices=[e for e in EXECUTORS if e != "local"], default="auto")
    p.add_argument("--with-torch", action="store_true", help="include torch (needed for GPU runs)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=run)


def run(args) -> int:
    stacks = load_config().select_stacks(args.stacks)
    if not stacks:
        raise UsageError("stacks.toml defines no stacks")
    out: dict[str, dict] = {}  # stack name: its facts, or its error
    with make_executor(args.executor, args.host, with_torch=args.with_torch, report=say, stacks=stacks) as executor:
        failed = _prepare_all(executor, stacks, out, args.json)
    if args.json:
        print(json.dumps({"executor": executor.name, "stacks": out}, indent=1, sort_keys=True))
    return ExecutorError.exit_code if failed else 0


def _prepare_all(executor, stacks, out: dict, quiet: bool) -> int:
    """Prepare each stack, noting its facts or its error in `out`; the number that failed."""
    failed = 0
    for stack in stacks:
        try:
            facts = executor.prepare(stack)
            out[stack.name] = {"ok": True, **{k: v for k, v in facts.items() if isinstance(v, (str, bool, int, float))}}
            if not quiet:
                say(f"{stack.name}: ready ({facts.get('image') or facts.get('tag') or facts.get('venv')})")
        except FileSystemError:
            raise  # the OS refused the cache: every other stack would fail the same way (exit 5)
        except ReprokitError as e:
            failed += 1
            out[stack.name] = {"ok": False, "error": str(e)}
            if not quiet:
                say(f"{stack.name}: FAILED: {e}")
    return failed
