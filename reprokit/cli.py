"""The `reprokit` command line: argparse only. Each verb is a module in reprokit.commands with
`add_parser(subparsers)` and `run(args) -> int`; only `main()` turns errors into exit codes."""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from reprokit import __version__
from reprokit.errors import BundleInvalid, ReprokitError
from reprokit.options import HostEnv

VERBS = ("capture", "run", "replay", "bundle", "verify", "show", "prepare", "stacks")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="reprokit",
        description="Reproducibility bundles for GPU compiler investigations: does this stack emit TMA?",
        epilog="example: reprokit capture --gpu h100 --out /tmp/cap --executor local",
    )
    parser.add_argument("--version", action="version", version=f"reprokit {__version__}")
    sub = parser.add_subparsers(dest="verb", metavar="VERB")
    sub.required = True
    for verb in VERBS:
        importlib.import_module(f"reprokit.commands.{verb}").add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        # The one place the environment is read: verbs hand what they need down as options.
        args.host = HostEnv.from_environ(os.environ)
        return args.func(args)
    except BundleInvalid as e:
        for p in e.problems:
            print(f"reprokit: {p}", file=sys.stderr)
        return e.exit_code
    except ReprokitError as e:
        print(f"reprokit: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("reprokit: interrupted", file=sys.stderr)
        return 130
