"""`reprokit init`: start a project of your own kernels (a commented reprokit.toml, and with
--example a kernel and a case that calls it)."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.commands._common import say
from reprokit.commands.argtypes import out_dir
from reprokit.userspec import starter


def add_parser(sub) -> None:
    p = sub.add_parser(
        "init", help="write a starter reprokit.toml for a project of your own kernels",
        description="Write a commented reprokit.toml into FOLDER (default: the current folder): the project's "
                    "kernels, its declared cases (docs/user-cases.md), and any stacks or GPU profiles of its own. "
                    "With --example, also a kernel and a case that calls it. An existing file is never replaced.",
        epilog="example: reprokit init --example && reprokit check && reprokit run --gpu h100 --stacks triton-3.6-cu130",
    )
    p.add_argument("folder", nargs="?", type=out_dir, default=Path("."),
                   help="the project's folder, made when missing (default: the current folder)")
    p.add_argument("--example", action="store_true",
                   help=f"also write {starter.EXAMPLE_KERNEL} and a case that calls it")
    p.add_argument("--json", action="store_true", help="print the files written as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    written = starter.write(args.folder, example=args.example)
    if args.json:
        print(json.dumps({"written": [str(p) for p in written]}, indent=1))
    else:
        for p in written:
            say(f"wrote {p}")
        say("next: reprokit check, then reprokit run --gpu h100 --stacks triton-3.6-cu130 (docs/user-cases.md)")
    return 0
