"""`reprokit bundle`: pack an existing capture folder into a bundle and print its path."""

from __future__ import annotations

import json
from pathlib import Path

from reprokit.bundle.reader import check
from reprokit.commands.argtypes import existing_dir, is_sha256, out_dir, sha256_or_file
from reprokit.errors import BundleUnusable, CaptureInvalid, FileSystemError, UsageError
from reprokit.options import BundleOptions, Origin
from reprokit.run.publish import publish

# Where a capture can have run, for the manifest; `unknown` when the caller does not say.
BUNDLE_EXECUTORS = ("docker", "venv", "local", "unknown")


def add_parser(sub) -> None:
    p = sub.add_parser(
        "bundle", help="pack a capture folder into a verifiable .tgz bundle",
        description="Pack a capture folder (see docs/capture-format.md) into "
                    "<out>/<stack>-<gpu>-<UTC time>-<hash>.tgz with a manifest, SHA256SUMS and a README. "
                    "Secrets are redacted; --share also removes host name, user, home paths and GPU ids. "
                    "The bundle's time (and so its name and bytes) comes from SOURCE_DATE_EPOCH when set, "
                    "else from when the capture finished.",
        epilog="example: reprokit bundle /tmp/cap --out bundles --share",
    )
    p.add_argument("capture", type=existing_dir, metavar="CAPTURE_DIR", help="a capture folder")
    p.add_argument("--out", type=out_dir, default=Path("bundles"), help="folder for the bundle (default bundles/)")
    p.add_argument("--share", action="store_true",
                   help="also replace host name, user name, home paths and GPU serials/UUIDs in every file")
    p.add_argument("--parent", type=sha256_or_file, default=None, metavar="SHA256|BUNDLE",
                   help="the bundle this capture replays: its sha256, or the .tgz itself")
    p.add_argument("--executor", choices=BUNDLE_EXECUTORS, default="unknown",
                   help="where the capture ran (docker, venv, local), for the manifest (default: unknown)")
    p.set_defaults(func=run)


def parent_sha256(value: str | None) -> str | None:
    """A parent given as a sha256 or as the parent bundle's file (sha256_or_file let it in)."""
    if value is None or is_sha256(value):
        return value
    try:
        report = check(Path(value))
    except BundleUnusable as e:
        raise UsageError(f"--parent {value}: not a bundle: {e}") from None
    if report.problems:
        raise UsageError(f"--parent {value}: not a valid bundle: {report.problems[0]}")
    return report.sha256


def run(args) -> int:
    capture, out = args.capture.resolve(), args.out.resolve()
    if out == capture or capture in out.parents:
        # The bundle would land among the files it packs, and the next bundle of it would hold it.
        raise UsageError(f"--out {args.out}: inside the capture folder {args.capture}; choose a folder outside it")
    plan_path = args.capture / "plan.json"
    try:
        plan = json.loads(plan_path.read_bytes())
    except FileNotFoundError:
        raise UsageError(f"{args.capture}: no plan.json; not a capture folder") from None
    except IsADirectoryError:
        raise UsageError(f"{args.capture}: plan.json is a folder; not a capture folder") from None
    except OSError as e:  # no permission, an I/O error: the system's refusal, exit 5
        raise FileSystemError.of(plan_path, e, "cannot be read") from None
    except ValueError as e:
        raise CaptureInvalid(f"{plan_path}: unreadable: {e}") from None
    if not isinstance(plan, dict) or not all(isinstance(plan.get(k), (dict, str)) for k in ("stack", "profile", "mode")):
        raise CaptureInvalid(f"{plan_path}: lacks stack, profile or mode")
    origin = Origin(stack=plan["stack"], profile=plan["profile"], executor={"name": args.executor}, mode=plan["mode"])
    options = BundleOptions.from_host(args.host, args.out, share=args.share, parent=parent_sha256(args.parent))
    path = publish(args.capture, origin, options)
    print(path)
    return 0
