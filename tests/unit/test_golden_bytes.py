"""Bundle bytes are a contract: the same capture, epoch and reprokit give the same .tgz, byte for
byte, release after release. These digests were taken from bundles packed before the writer's
options were gathered into BundleOptions; a change here must be deliberate (a format change, a
README wording), never a side effect of a refactoring. To accept one, repack and paste the new
digest, and say why in the commit."""

from __future__ import annotations

import hashlib

import pytest

from reprokit.bundle import writer
from reprokit.bundle.writer import write_bundle
from reprokit.options import BundleOptions, Origin
from tests.helpers.fake_capture import EXECUTOR, PROFILE_H100, STACK, make_capture

GOLDEN = {
    # Repacked when the manifest gained templates_sha256 (what wrote the bundle).
    "compile-only": ("triton-3.5-cu130-h100-20261122T060012Z-65b5045922.tgz",
                     "f0a8edb648e93734a3810b39891b5d4a90960dee937434dfec20ac3b3a96788f"),
    "gpu": ("triton-3.5-cu130-h100-20261122T060012Z-b81c41449e.tgz",
            "24b55dc4e6ae7fee1608fe915be7b814984de4f75e1f99ed3077686c74737869"),
}


@pytest.mark.parametrize("mode", sorted(GOLDEN))
def test_an_unchanged_capture_packs_to_the_golden_bytes(tmp_path, mode, monkeypatch):
    # The manifest names the templates' digest (reprokit.bundle.templates), which moves with every
    # reproducer template: fixed here, so that these bytes pin the writer alone.
    monkeypatch.setattr(writer, "templates_sha256", lambda: "0" * 64)
    cap = make_capture(tmp_path / "capture", mode=mode)
    # No host environment: what the bundle holds must not depend on who packs it.
    path = write_bundle(cap, Origin(STACK, PROFILE_H100, EXECUTOR, mode), BundleOptions(tmp_path / "out", environ={}))
    name, digest = GOLDEN[mode]
    assert path.name == name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
