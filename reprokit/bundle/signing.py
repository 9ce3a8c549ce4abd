"""Signed bundles: who made a bundle, checkable with OpenSSH alone.

A signature is a detached SSH signature (`ssh-keygen -Y sign`, namespace `reprokit-bundle`) of
the .tgz's bytes, in `<bundle>.sig` beside it. Checksums and the oracle's recount catch edits
that leave the IR alone; a forger who edits IR and results together and recomputes every sum is
caught only here, because the signature covers the exact bytes a known key signed. Anyone can
check one without reprokit:

    ssh-keygen -Y verify -f allowed_signers -I SIGNER -n reprokit-bundle -s B.tgz.sig < B.tgz

`allowed_signers` is OpenSSH's own format (one `principal key-type key` per line; see
ssh-keygen(1), ALLOWED SIGNERS).

A signature proves two separate things, and verify says which it checked: that the .sig is
intact and covers these exact bytes (always checked, from the key the signature carries), and
that this key belongs to someone the receiver trusts (only with an allowed_signers file). A .sig
that fails the first is never reported as "signed".
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from reprokit import locks
from reprokit.errors import FileSystemError, OutputExists, UsageError

NAMESPACE = "reprokit-bundle"


@dataclass(frozen=True)
class Signature:
    """What verify says about a bundle's origin.

    status: `unsigned` (no .sig), `unchecked` (a .sig that is a valid signature of these exact
    bytes by the key `fingerprint`, whose owner nobody vouched for: no --allowed-signers), `valid`
    (the same, by a key in --allowed-signers, as `signer`) or `invalid` (anything else).
    """

    status: str
    path: Path | None      # the .sig file, when there is one
    signer: str | None     # the allowed-signers principal, when valid
    fingerprint: str | None  # the signing key's SHA256 fingerprint, when the signature is intact
    reason: str            # one line for people

    def to_dict(self) -> dict:
        return {"status": self.status, "file": str(self.path) if self.path else None, "signer": self.signer,
                "fingerprint": self.fingerprint, "reason": self.reason}


def sig_path(bundle: Path) -> Path:
    return Path(str(bundle) + ".sig")


def verify_command(bundle: Path, allowed: str = "allowed_signers", signer: str = "SIGNER") -> str:
    name = Path(bundle).name
    return f"ssh-keygen -Y verify -f {allowed} -I {signer} -n {NAMESPACE} -s {name}.sig < {name}"


def _ssh_keygen() -> str:
    tool = shutil.which("ssh-keygen")
    if tool is None:
        raise UsageError("ssh-keygen (OpenSSH 8.1 or newer) is needed for signatures; install openssh-client")
    return tool


def _run(argv: list[str], stdin_path: Path) -> subprocess.CompletedProcess:
    try:
        with open(stdin_path, "rb") as f:
            return subprocess.run(argv, stdin=f, capture_output=True, timeout=120, check=False)
    except OSError as e:
        raise FileSystemError.of(stdin_path, e, "cannot read") from None


def _why(r: subprocess.CompletedProcess) -> str:
    """ssh-keygen's first complaint: its first stderr line names the cause ("Couldn't parse
    signature: missing header", "incorrect signature"); later lines only repeat that it failed."""
    for stream in (r.stderr, r.stdout):
        lines = [ln.strip() for ln in stream.decode(errors="replace").splitlines() if ln.strip()]
        if lines:
            return lines[0]
    return "no output"


# check-novalidate's report of an intact signature (OpenSSH 8.1+):
#   Good "reprokit-bundle" signature with ED25519 key SHA256:hS0EO9Im...
_GOOD = re.compile(r'^Good "[^"]*" signature with (\S+) key (SHA256:[A-Za-z0-9+/=]+)\s*$', re.MULTILINE)


_ARMOUR = b"-----BEGIN SSH SIGNATURE-----"


def _check_replaceable(final: Path) -> None:
    """A .sig already there is replaced only when it is an SSH signature (an earlier signing);
    any other file under that name is the user's: refused, left as it is."""
    if not (final.exists() or final.is_symlink()):
        return
    try:
        with open(final, "rb") as f:
            ours = not final.is_symlink() and final.is_file() and f.read(len(_ARMOUR)) == _ARMOUR
    except OSError:
        ours = False
    if not ours:
        raise OutputExists(f"{final} exists and is not an SSH signature; it was left as it is (move it away to sign)")


def sign(bundle: Path, key: Path) -> Path:
    """Write `<bundle>.sig`, signed with the SSH private key at `key`; return its path.

    The signature is written aside and renamed into place only when ssh-keygen succeeded, so a
    failed or interrupted signing leaves the previous .sig (or none), never half of one.
    """
    bundle, key = Path(bundle), Path(key)
    tool = _ssh_keygen()
    if not key.is_file():
        raise UsageError(f"--key {key}: no such key file")
    final = sig_path(bundle)
    with locks.hold(final, "signature"), locks.temp(final.parent, f".{final.name}", "partial", is_dir=False) as tmp:
        _check_replaceable(final)  # under the lock: nobody else writes it meanwhile
        r = _run([tool, "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE], bundle)
        if r.returncode != 0 or not r.stdout.startswith(_ARMOUR):
            raise UsageError(f"ssh-keygen could not sign with {key}: {_why(r)}")
        try:
            tmp.path.write_bytes(r.stdout)
            os.chmod(tmp.path, 0o644)
            tmp.finish(final)
        except OSError as e:
            raise FileSystemError.of(final, e, "cannot write the signature") from None
    return final


def check(bundle: Path, allowed_signers: Path | None) -> Signature:
    """The bundle's signature status (see Signature).

    Integrity first, for every .sig, with or without allowed_signers: `ssh-keygen -Y
    check-novalidate` proves the signature is well formed, in reprokit's namespace, and made over
    these exact bytes by the key it carries; it says nothing of whose key that is. Only then,
    when allowed_signers is given, is the key looked up there.
    """
    bundle = Path(bundle)
    sig = sig_path(bundle)
    if sig.is_file() and not bundle.is_file():
        return Signature("invalid", sig, None, None, f"{sig.name}: no bundle file to check it against")
    if not sig.is_file():
        if allowed_signers is None:
            return Signature("unsigned", None, None, None, "unsigned (no .sig beside it): origin not attested")
        return Signature("invalid", None, None, None,
                         f"{sig.name}: missing, but --allowed-signers asks for a signature")
    if allowed_signers is not None:
        allowed_signers = Path(allowed_signers)
        if not allowed_signers.is_file():
            raise UsageError(f"--allowed-signers {allowed_signers}: no such file")
    tool = _ssh_keygen()
    r = _run([tool, "-Y", "check-novalidate", "-n", NAMESPACE, "-s", str(sig)], bundle)
    good = _GOOD.search(r.stdout.decode(errors="replace")) if r.returncode == 0 else None
    if good is None:
        why = _why(r)
        # A well-formed signature over other bytes says "incorrect signature"; everything else
        # (not base64, no header, another namespace, an unknown format) is not a reprokit signature.
        what = ("does not match the bundle's bytes" if "incorrect signature" in why
                else "not a reprokit bundle signature")
        return Signature("invalid", sig, None, None, f"{sig.name}: {what} ({why})")
    key = f"{good.group(1)} key {good.group(2)}"
    if allowed_signers is None:
        return Signature("unchecked", sig, None, good.group(2),
                         f"signed by {key}, not checked against a trusted signer "
                         "(pass --allowed-signers to check who signed)")
    found = _run([tool, "-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)], bundle)
    principals = [p for p in found.stdout.decode(errors="replace").split() if p]
    if found.returncode != 0 or not principals:
        return Signature("invalid", sig, None, good.group(2),
                         f"{sig.name}: signed by {key}, which is not in {allowed_signers}")
    why = "no principal matched"
    for principal in principals:
        r = _run([tool, "-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE,
                  "-s", str(sig)], bundle)
        if r.returncode == 0:
            return Signature("valid", sig, principal, good.group(2),
                             f"signed by {principal} ({key}, in {allowed_signers})")
        why = _why(r)
    # An intact signature by a listed key that the listing refuses (an expired or
    # namespace-restricted entry in allowed_signers).
    return Signature("invalid", sig, None, good.group(2),
                     f"{sig.name}: signed by {key}, refused by {allowed_signers} ({why})")
