"""SSH-signed bundles, with the real ssh-keygen: reprokit signs and checks, OpenSSH alone checks
too, and a forgery consistent with edited IR, which every content check accepts, fails here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.bundle import signing
from reprokit.bundle.reader import verify
from tests.helpers.bundle_tools import edit_json, make_bundle, reseal

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs OpenSSH's ssh-keygen")
ROOT = Path(__file__).resolve().parents[2]


def _cli(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd or ROOT, check=False)


def _key(folder: Path, who: str) -> tuple[Path, Path]:
    key = folder / f"id_{who}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", who, "-f", str(key)], check=True)
    allowed = folder / f"allowed_{who}"
    allowed.write_text(f"{who}@example.com {' '.join(key.with_suffix('.pub').read_text().split()[:2])}\n")
    return key, allowed


@pytest.fixture(scope="module")
def keys(tmp_path_factory):
    d = tmp_path_factory.mktemp("keys")
    return {"alice": _key(d, "alice"), "mallory": _key(d, "mallory")}


@pytest.fixture
def bundle(tmp_path):
    return make_bundle(tmp_path)


def _fingerprint(key: Path) -> str:
    """The key's SHA256 fingerprint, as OpenSSH itself prints it (`ssh-keygen -l`)."""
    out = subprocess.run(["ssh-keygen", "-l", "-f", f"{key}.pub"], capture_output=True, text=True, check=True)
    return out.stdout.split()[1]


def _openssh_verify(bundle: Path, allowed: Path, signer: str) -> int:
    cmd = signing.verify_command(bundle, str(allowed), signer)
    return subprocess.run(cmd, shell=True, cwd=bundle.parent, capture_output=True, check=False).returncode


def test_sign_then_verify_with_reprokit_and_with_openssh_alone(bundle, keys):
    key, allowed = keys["alice"]
    r = _cli("sign", bundle, "--key", key, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["signature"] == f"{bundle}.sig" and Path(out["signature"]).read_text().startswith(
        "-----BEGIN SSH SIGNATURE-----")
    r = _cli("verify", bundle, "--allowed-signers", allowed)
    assert r.returncode == 0 and "signed by alice@example.com" in r.stdout, r.stdout + r.stderr
    assert _openssh_verify(bundle, allowed, "alice@example.com") == 0
    # Someone else's allowed_signers: the signature is not theirs.
    r = _cli("verify", bundle, "--allowed-signers", keys["mallory"][1], "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["signature"]["status"] == "invalid"
    assert out["problems"] == [(f"signature: {bundle.name}.sig: signed by ED25519 key {_fingerprint(key)}, "
                               f"which is not in {keys['mallory'][1]}")]


def test_a_forgery_consistent_with_edited_ir_is_caught_by_the_signature(bundle, keys, tmp_path):
    key, allowed = keys["alice"]
    signing.sign(bundle, key)
    sass = b"        /*0040*/                   UTMALDG.2D [UR8], [UR4] ;\n"

    def forge(files):
        files["cases/block_ptr.p0/kernel.sass"] += sass

        def claim(doc):
            c = next(c for c in doc["cases"] if c["id"] == "block_ptr.p0")
            c["tma"]["sass"] = 1
            c["tma_ops"]["sass"] = {"UTMALDG": 1}
            c.update(verdict="tma", met=True)
        return edit_json(files, "results.json", claim)

    forged = tmp_path / "forged" / bundle.name
    forged.parent.mkdir()
    reseal(bundle, forged, forge)
    shutil.copyfile(f"{bundle}.sig", f"{forged}.sig")   # the original signature, carried along
    assert verify(forged) == []                          # every content check passes
    r = _cli("verify", forged, "--allowed-signers", allowed)
    assert r.returncode == 1
    assert r.stdout.strip().splitlines() == [
        (f"signature: {forged.name}.sig: does not match the bundle's bytes (Signature verification failed: "
        "incorrect signature)")], r.stdout
    assert _openssh_verify(forged, allowed, "alice@example.com") != 0
    # Stripping the signature does not help once the receiver asks for one.
    Path(f"{forged}.sig").unlink()
    r = _cli("verify", forged, "--allowed-signers", allowed)
    assert r.returncode == 1 and "missing, but --allowed-signers asks for a signature" in r.stdout


def test_unsigned_bundles_still_verify_and_say_so(bundle):
    r = _cli("verify", bundle)
    assert r.returncode == 0 and "unsigned (no .sig beside it)" in r.stdout
    assert json.loads(_cli("verify", bundle, "--json").stdout)["signature"]["status"] == "unsigned"


def test_sign_refuses_an_invalid_bundle_and_a_missing_key(bundle, keys, tmp_path):
    forged = reseal(bundle, tmp_path / "bad.tgz", lambda f: edit_json(
        f, "results.json", lambda d: d["cases"][0].update(verdict="tma", met=True)))
    r = _cli("sign", forged, "--key", keys["alice"][0])
    assert r.returncode == 1 and not Path(f"{forged}.sig").exists()
    assert "not signed: results.json: case block_ptr.p0: verdict is 'tma'" in r.stderr
    r = _cli("sign", bundle, "--key", tmp_path / "nokey")
    assert r.returncode == 2 and f"argument --key: {tmp_path / 'nokey'}: no such file" in r.stderr
    assert sorted(p.name for p in bundle.parent.iterdir()) == [bundle.name]


# What a receiver may find beside a bundle, and what verify must say of it. Each .sig is real
# ssh-keygen output (or plainly not), made against the bundle under test, another bundle, or
# with a key the receiver does not list.
def _no_header(bundle, keys, tmp_path):
    Path(f"{bundle}.sig").write_bytes(b"\x00\xff not a signature\n" * 40)


def _garbage(bundle, keys, tmp_path):
    Path(f"{bundle}.sig").write_bytes(b"-----BEGIN SSH SIGNATURE-----\nnot base64 at all\n"
                                      b"-----END SSH SIGNATURE-----\n")


def _another_bundles(bundle, keys, tmp_path):
    other = make_bundle(tmp_path / "other", source_date_epoch=1_600_000_000)
    assert other.read_bytes() != bundle.read_bytes()
    shutil.copyfile(signing.sign(other, keys["alice"][0]), f"{bundle}.sig")


def _another_namespace(bundle, keys, tmp_path):
    subprocess.run(["ssh-keygen", "-Y", "sign", "-q", "-f", str(keys["alice"][0]), "-n", "file", str(bundle)],
                   check=True, capture_output=True)


@pytest.mark.parametrize("forge, why", [
    (_no_header, ("not a reprokit bundle signature (", "missing header")),
    (_garbage, ("not a reprokit bundle signature (", "base64")),
    (_another_bundles, ("does not match the bundle's bytes (", "incorrect signature")),
    (_another_namespace, ("not a reprokit bundle signature (", "namespace does not match")),
])
@pytest.mark.parametrize("with_flag", [False, True], ids=["no-flag", "allowed-signers"])
def test_a_sig_that_is_not_this_bundles_signature_fails_with_or_without_the_flag(bundle, keys, tmp_path, forge,
                                                                                 why, with_flag):
    forge(bundle, keys, tmp_path)
    flag = ["--allowed-signers", keys["alice"][1]] if with_flag else []
    r = _cli("verify", bundle, *flag)
    assert r.returncode == 1, r.stdout + r.stderr
    # reprokit's words, then ssh-keygen's own reason (its wording varies a little across OpenSSH releases)
    assert r.stdout.startswith(f"signature: {bundle.name}.sig: {why[0]}") and why[1] in r.stdout, r.stdout
    assert "OK" not in r.stdout
    assert len(r.stdout.strip().splitlines()) == 1 and r.stderr == ""
    out = json.loads(_cli("verify", bundle, "--json", *flag).stdout)
    assert out["exit_code"] == 1 and out["valid"] is False
    assert out["signature"]["status"] == "invalid" and out["signature"]["fingerprint"] is None
    assert out["sha256"] and out["problems"] == [r.stdout.strip()]   # the bundle itself is fine


def test_another_keys_valid_signature_is_reported_unchecked_without_the_flag_and_refused_with_it(bundle, keys):
    key, _ = keys["mallory"]
    signing.sign(bundle, key)
    fp = _fingerprint(key)
    r = _cli("verify", bundle)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"signed by ED25519 key {fp}, not checked against a trusted signer" in r.stdout
    assert r.stdout.startswith(f"OK {bundle}:")
    out = json.loads(_cli("verify", bundle, "--json").stdout)
    assert out["exit_code"] == 0 and out["problems"] == []
    assert out["signature"] == {"status": "unchecked", "file": f"{bundle}.sig", "signer": None, "fingerprint": fp,
                                "reason": f"signed by ED25519 key {fp}, not checked against a trusted signer "
                                          "(pass --allowed-signers to check who signed)"}
    r = _cli("verify", bundle, "--allowed-signers", keys["alice"][1], "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 1 and out["exit_code"] == 1
    assert out["signature"]["status"] == "invalid" and out["signature"]["fingerprint"] == fp
    assert out["problems"] == [(f"signature: {bundle.name}.sig: signed by ED25519 key {fp}, "
                               f"which is not in {keys['alice'][1]}")]
    # The owner's own listing accepts it, naming the principal and the same key.
    r = _cli("verify", bundle, "--allowed-signers", keys["mallory"][1], "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 0 and out["signature"]["status"] == "valid"
    assert out["signature"]["signer"] == "mallory@example.com" and out["signature"]["fingerprint"] == fp


def test_an_unusable_bundle_beside_a_sig_is_unusable_not_signed(tmp_path, keys):
    bundle = tmp_path / "gone.tgz"
    Path(f"{bundle}.sig").write_text("whatever")
    r = _cli("verify", bundle, "--json")
    out = json.loads(r.stdout)
    assert r.returncode == 2 and out["signature"]["status"] == "invalid"
