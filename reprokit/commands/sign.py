"""`reprokit sign`: an SSH signature of a bundle, `<bundle>.sig` beside it, after verifying it."""

from __future__ import annotations

import json

from reprokit.bundle.reader import Limits, check
from reprokit.bundle.signing import sign, verify_command
from reprokit.commands.argtypes import existing_file, key_file
from reprokit.errors import BundleInvalid


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sign", help="sign a bundle with an SSH key (writes BUNDLE.sig)",
        description="Verify BUNDLE, then sign its bytes with an SSH private key (`ssh-keygen -Y sign`, namespace "
                    "reprokit-bundle) into BUNDLE.sig. Anyone holding your public key in an allowed_signers file "
                    "checks it with `reprokit verify BUNDLE --allowed-signers FILE`, or with OpenSSH alone: "
                    "ssh-keygen -Y verify -f allowed_signers -I SIGNER -n reprokit-bundle -s BUNDLE.sig < BUNDLE",
        epilog="example: reprokit sign bundles/triton-3.5-cu130-h100-20261122T060012Z-afebd0af86.tgz "
               "--key ~/.ssh/id_ed25519",
    )
    p.add_argument("bundle", type=existing_file, metavar="BUNDLE", help="a bundle .tgz")
    p.add_argument("--key", required=True, type=key_file, help="SSH private key file (e.g. ~/.ssh/id_ed25519)")
    p.add_argument("--json", action="store_true", help='print {"bundle", "signature", "sha256", "check"}')
    p.set_defaults(func=run)


def run(args) -> int:
    report = check(args.bundle, Limits.from_env(environ=args.host.environ))
    if report.problems:  # a signature vouches for a bundle: never for a broken one
        raise BundleInvalid(f"{args.bundle}: not a valid bundle, not signed: {report.problems[0]}",
                            [f"{args.bundle}: not signed: {p}" for p in report.problems])
    path = sign(args.bundle, args.key)
    if args.json:
        print(json.dumps({"bundle": str(args.bundle), "signature": str(path), "sha256": report.sha256,
                          "check": verify_command(args.bundle)}, indent=1))
    else:
        print(path)
    return 0
