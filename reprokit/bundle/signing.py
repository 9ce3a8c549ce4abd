"""Signed bundles: who made a bundle, checkable with OpenSSH alone.

A signature is a detached SSH signature (`ssh-keygen -Y sign`, namespace `reprokit-bundle`) of
the .tgz's bytes, in `<bundle>.sig` beside it. Checksums and the oracle's recount catch edits
that leave the IR alone; a forger who edits IR and results together and recomputes every sum is
caught only here, because the signature covers the exact bytes a known key signed. Anyone can
check one without reprokit:

    ssh-keygen -Y verify -f allowed_signers -I SIGNER -n reprokit-bundle -s B.tgz.sig < B.tgz

`allowed_signers` is OpenSSH's own format (one `principal key-type key` per line; see
ssh-keygen(1), ALLOWED SIGNERS).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from reprokit import locks
from reprokit.errors import FileSystemError, UsageError

NAMESPACE = "reprokit-bundle"


@dataclass(frozen=True)
class Signature:
    """What verify says about a bundle's origin."""

    status: str            # unsigned | unchecked | valid | invalid
    path: Path | None      # the .sig file, when there is one
    signer: str | None     # the allowed-signers principal, when valid
    reason: str            # one line for people

    def to_dict(self) -> dict:
        return {"status": self.status, "file": str(self.path) if self.path else None, "signer": self.signer,
                "reason": self.reason}


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
            return subprocess.run(argv, stdin=f, capture_output=True, timeout=120)
    except OSError as e:
        raise FileSystemError.of(stdin_path, e, "cannot read") from None


def _last_line(data: bytes) -> str:
    lines = [ln for ln in data.decode(errors="replace").splitlines() if ln.strip()]
    return lines[-1].strip() if lines else "no output"


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
        r = _run([tool, "-Y", "sign", "-q", "-f", str(key), "-n", NAMESPACE], bundle)
        if r.returncode != 0 or not r.stdout.startswith(b"-----BEGIN SSH SIGNATURE-----"):
            raise UsageError(f"ssh-keygen could not sign with {key}: {_last_line(r.stderr)}")
        try:
            tmp.path.write_bytes(r.stdout)
            os.chmod(tmp.path, 0o644)
            tmp.finish(final)
        except OSError as e:
            raise FileSystemError.of(final, e, "cannot write the signature") from None
    return final


def check(bundle: Path, allowed_signers: Path | None) -> Signature:
    """The bundle's signature status. With allowed_signers, a missing or bad signature is
    `invalid`; without, a present one is `unchecked` and none is `unsigned`."""
    bundle = Path(bundle)
    sig = sig_path(bundle)
    if not sig.is_file():
        if allowed_signers is None:
            return Signature("unsigned", None, None, "unsigned (no .sig beside it): origin not attested")
        return Signature("invalid", None, None, f"{sig.name}: missing, but --allowed-signers asks for a signature")
    if allowed_signers is None:
        return Signature("unchecked", sig, None, f"signed ({sig.name}); pass --allowed-signers to check who signed")
    allowed_signers = Path(allowed_signers)
    if not allowed_signers.is_file():
        raise UsageError(f"--allowed-signers {allowed_signers}: no such file")
    tool = _ssh_keygen()
    found = _run([tool, "-Y", "find-principals", "-s", str(sig), "-f", str(allowed_signers)], bundle)
    principals = [p for p in found.stdout.decode(errors="replace").split() if p]
    if found.returncode != 0 or not principals:
        return Signature("invalid", sig, None, f"{sig.name}: not made by any key in {allowed_signers}")
    for principal in principals:
        r = _run([tool, "-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE,
                  "-s", str(sig)], bundle)
        if r.returncode == 0:
            return Signature("valid", sig, principal, f"signed by {principal} (key in {allowed_signers})")
        why = _last_line(r.stderr or r.stdout)
    return Signature("invalid", sig, None, f"{sig.name}: does not match the bundle's bytes ({why})")
