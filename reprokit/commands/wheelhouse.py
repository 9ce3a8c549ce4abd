"""`reprokit wheelhouse`: on a connected machine, the wheels an offline GPU host needs to run the
host side (see docs/offline.md)."""

from __future__ import annotations

import json

from reprokit.commands._common import say
from reprokit.commands.argtypes import (
    extras_list,
    out_dir,
    platform_tag,
    python_version,
)
from reprokit.errors import DIST
from reprokit.wheelhouse import DEFAULT_EXTRAS, WheelhouseOptions, make


def add_parser(sub) -> None:
    p = sub.add_parser(
        "wheelhouse", help="download the wheels an offline GPU host needs for reprokit's host side",
        description="Download reprokit's own wheel and every wheel its host side needs (not triton or torch: a "
                    "local run uses the GPU host's own) into --out, for the GPU host's Python and platform. Copy "
                    "the folder there and install with pip install --no-index --find-links (docs/offline.md).",
        epilog="example: reprokit wheelhouse --out wheels --python-version 3.12 --platform manylinux_2_28_x86_64",
    )
    p.add_argument("--out", type=out_dir, required=True, help="folder to download into")
    p.add_argument("--python-version", type=python_version, default=None, metavar="X.Y", help="the GPU host's Python (default: this one)")
    p.add_argument("--platform", type=platform_tag, action="append", default=[], metavar="TAG",
                   help="pip platform tag of the GPU host, repeatable (default: this machine's)")
    p.add_argument("--extras", type=extras_list, default=",".join(DEFAULT_EXTRAS), metavar="A,B",
                   help=f"pyproject extras to add (default {','.join(DEFAULT_EXTRAS)}, what make installs; '' for none)")
    p.add_argument("--json", action="store_true", help="print the wheels as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    extras = tuple(e.strip() for e in args.extras.split(",") if e.strip())
    opts = WheelhouseOptions(args.out, args.python_version, tuple(args.platform), extras)
    wheels = make(opts, echo=None if args.json else say, tmp=args.host.tmp)
    if args.json:
        print(json.dumps({"out": str(args.out), "wheels": [w.name for w in wheels]}, indent=1))
    else:
        # The distribution's name (errors.DIST): on the index, `reprokit` is another project.
        what = f"'{DIST}[{','.join(extras)}]'" if extras else DIST
        say(f"{len(wheels)} wheels in {args.out}; on the GPU host: "
            f"pip install --no-index --find-links {args.out} {what}")
    return 0
