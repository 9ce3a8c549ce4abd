"""`reprokit verify`: check a bundle's structure, checksums and schemas; exit 0, 1 or 2."""

from __future__ import annotations

import json

from reprokit.bundle import signing
from reprokit.bundle.reader import Limits, check
from reprokit.commands.argtypes import byte_size, existing_file, judged_file
from reprokit.errors import BundleUnusable


def add_parser(sub) -> None:
    p = sub.add_parser(
        "verify", help="verify a bundle (exit 0 valid, 1 invalid, 2 unusable)",
        description="Stream the bundle once without extracting it: gzip and tar integrity, every member a "
                    "regular file or folder under one root (no links, devices, absolute or '..' paths, "
                    "setuid bits, duplicates), size limits, the manifest's format and schema, every file's "
                    "size and sha256, no unlisted file, SHA256SUMS, the plan/results/env schemas (and a trace's "
                    "trace/trace.json), plan and results naming the same cases, every TMA count and verdict "
                    "recomputed from the bundle's own IR, and every tensor a trace kept read without torch. "
                    "Exit 0: valid. Exit 1: invalid, one line per problem. Exit 2: unusable input (missing, "
                    "not gzip or tar, truncated, refused as hostile or too large, or a bundle format this "
                    "reprokit cannot read).",
        epilog="example: reprokit verify bundles/triton-3.5-cu130-h100-20261122T060012Z-1f8a14230e.tgz "
               "--max-bytes 1G --json",
    )
    p.add_argument("bundle", type=judged_file, metavar="BUNDLE", help="a bundle .tgz")
    p.add_argument("--max-bytes", type=byte_size, default=None, metavar="N",
                   help="refuse bundles whose contents exceed N bytes (512M, 2G...; "
                        "default $REPROKIT_MAX_BUNDLE_BYTES or 2G)")
    p.add_argument("--max-member-bytes", type=byte_size, default=None, metavar="N",
                   help="refuse any file over N bytes (default $REPROKIT_MAX_MEMBER_BYTES or 512M)")
    p.add_argument("--allowed-signers", type=existing_file, default=None, metavar="FILE",
                   help="also require BUNDLE.sig to be a valid SSH signature by a key in FILE (OpenSSH's "
                        "allowed_signers format); without it, a BUNDLE.sig must still be a valid signature of "
                        "these bytes, and its key's fingerprint is reported, not checked against a trusted signer")
    p.add_argument("--json", action="store_true",
                   help='print {"bundle", "valid", "exit_code", "sha256", "files", "signature", "problems"}')
    p.set_defaults(func=run)


def run(args) -> int:
    limits = Limits.from_env(args.max_bytes, args.max_member_bytes, environ=args.host.environ)
    out: dict[str, str | int | None] = {"bundle": str(args.bundle), "sha256": None, "files": None}
    try:
        report = check(args.bundle, limits)
    except BundleUnusable as e:  # the verdict itself, reported like any other: this verb's output
        problems, code = list(getattr(e, "problems", None) or [str(e)]), e.exit_code
    else:
        problems, code = list(report.problems), (1 if report.problems else 0)
        out.update(sha256=report.sha256, files=report.files)
    sig = signing.check(args.bundle, args.allowed_signers)
    if sig.status == "invalid":
        problems.append(f"signature: {sig.reason}")
        code = code or 1
    if args.json:
        print(json.dumps({**out, "valid": code == 0, "exit_code": code, "signature": sig.to_dict(),
                          "problems": problems}, indent=1))
    elif code == 0:
        print(f"OK {args.bundle}: {out['files']} files, sha256 {out['sha256']}; {sig.reason}")
    else:
        for p in problems:
            print(p)
    return code
