"""`reprokit show`: what a bundle holds (stack, GPU, mode, verdicts), read in memory, never extracted."""

from __future__ import annotations

import json

from rich.table import Table

from reprokit.bundle.reader import Limits, open_bundle
from reprokit.bundle.readme import pinned, what_ran
from reprokit.commands._common import console, flat_case, verdict_table
from reprokit.commands.argtypes import existing_file


def add_parser(sub) -> None:
    p = sub.add_parser(
        "show", help="summarise a bundle without extracting it",
        description="Verify a bundle in memory (as `reprokit verify` does) and print its stack, GPU profile, "
                    "mode, provenance and verdict table. Nothing is written to disk.",
        epilog="example: reprokit show bundles/triton-3.5-cu130-h100-20261122T060012Z-1f8a14230e.tgz --json",
    )
    p.add_argument("bundle", type=existing_file, metavar="BUNDLE", help="a bundle .tgz")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.set_defaults(func=run)


def summary(b) -> dict:
    m = b.manifest
    return {
        "bundle": str(b.path), "name": b.name, "sha256": b.sha256, "format": m["format"], "reprokit": m["reprokit"],
        "created": m["created"], "mode": m["mode"], "suite": m["suite"], "stack": m["stack"], "profile": m["profile"],
        "executor": m["executor"], "ran": what_ran(m, b.env), "parent": m["parent"], "triton": b.records.triton,
        "share": m["share"]["applied"], "redacted": m["redaction"]["variables"], "files": len(b.members),
        "cases": [flat_case(c) for c in b.records.cases],
    }


def run(args) -> int:
    b = open_bundle(args.bundle, Limits.from_env(environ=args.host.environ), keep=lambda rel: False)
    s = summary(b)
    if args.json:
        print(json.dumps(s, indent=1))
        return 0
    stack, profile = s["stack"], s["profile"]
    facts = Table(show_header=False, box=None, pad_edge=False)
    facts.add_column(style="bold")
    facts.add_column()
    pins = pinned(stack)
    rows = [
        ("bundle", f"{s['name']} ({s['files']} files)"), ("sha256", s["sha256"]),
        ("stack", f"{stack['name']}" + (f" (pinned: {pins})" if pins else "")),
        ("base image", f"{stack['base_image']} (pinned)" if stack.get("base_image") else "-"),
        ("GPU", f"{profile['key']}: {profile['name']}, {profile['arch']}"), ("mode", s["mode"]),
        ("executor", s["executor"]["name"]), ("ran", s["ran"]),
        ("created", f"{s['created']} by reprokit {s['reprokit']}"),
        ("parent", s["parent"] or "-"), ("share mode", "applied" if s["share"] else "no"),
        ("redacted", ", ".join(s["redacted"]) or "-"),
    ]
    for k, v in rows:
        facts.add_row(k, v)
    c = console()
    c.print(facts)
    c.print(verdict_table(b.records.cases, title=f"{stack['name']} (triton {s['triton']}) on {profile['key']}, "
                                                    f"{s['mode']}"))
    return 0
