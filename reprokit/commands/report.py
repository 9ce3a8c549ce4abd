"""`reprokit report B.tgz [more.tgz ...]`: a GitHub issue body (markdown) or a self-contained html
page over one or more bundles of one GPU profile."""

from __future__ import annotations

import sys

from reprokit.commands._common import add_time_args, timing_options
from reprokit.commands.argtypes import existing_file, out_file
from reprokit.report import FORMATS, check_out, render, write


def add_parser(sub) -> None:
    p = sub.add_parser(
        "report", help="a GitHub issue body (md) or a self-contained html page over bundles",
        description="Verify each bundle, compare them (the first is the baseline column) and write a report: "
                    "--format md is ready issue bodies for triton-lang/triton, one per template the findings need "
                    "(bug, bad codegen, performance: environment, verdict grid, IR around the TMA ops of each "
                    "interesting case, crash evidence, minimal and MLIR reproducers, each bundle's sha256); --format html is one self-contained page with the grid and plots of what "
                    "differs across the stacks. The same bundles give the same bytes.",
        epilog="example: reprokit report bundles/golden/h100-triton-3.0.0/*.tgz "
               "bundles/golden/h100-triton-3.6.0/*.tgz --format html --out /tmp/report.html",
    )
    p.add_argument("bundles", type=existing_file, nargs="+", metavar="BUNDLE", help="bundle .tgz files, baseline first")
    p.add_argument("--format", choices=FORMATS, default="md", help="md (default) or html")
    p.add_argument("--out", type=out_file, default=None, metavar="FILE",
                   help="write here (atomically) instead of standard output")
    p.add_argument("--newest", type=existing_file, default=None, metavar="BUNDLE",
                   help="a replay of the first bundle on the newest release (reprokit replay B.tgz --stacks NEWEST): "
                        "each finding says whether it still shows there, 'fixed in X.Y.Z' where not")
    p.add_argument("--mixed-profiles", action="store_true",
                   help="allow bundles of different GPU profiles side by side (refused by default)")
    add_time_args(p)
    p.set_defaults(func=run)


def run(args) -> int:
    topts = timing_options(args)
    inputs = list(args.bundles) + ([args.newest] if args.newest else [])
    out = check_out(args.out, inputs) if args.out is not None else None
    text = render(args.bundles, args.format, mixed_profiles=args.mixed_profiles, timing_options=topts,
                  newest=args.newest)
    if out is None:
        sys.stdout.write(text)
    else:
        write(text, out)
        print(f"reprokit: wrote {out} ({len(text.encode())} bytes)", file=sys.stderr)
    return 0
