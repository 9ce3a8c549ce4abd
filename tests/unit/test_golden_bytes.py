"""Bundle bytes are a contract: the same capture, epoch and reprokit give the same .tgz, byte for
byte, release after release. These digests were taken from bundles packed before the writer's
options were gathered into BundleOptions; a change here must be deliberate (a format change, a
README wording), never a side effect of a refactoring. To accept one, repack and paste the new
digest, and say why in the commit."""

from __future__ import annotations

import hashlib

import pytest

from reprokit.bundle.writer import write_bundle
from reprokit.options import BundleOptions, Origin
from tests.helpers.fake_capture import EXECUTOR, PROFILE_H100, STACK, make_capture

GOLDEN = {
    "compile-only": ("triton-3.5-cu130-h100-20261122T060012Z-afebd0af86.tgz",
                     "335e96bcbd51345bbfa2269c75c01afb70d89cf19d1f93767b91bf2632c9af39"),
    "gpu": ("triton-3.5-cu130-h100-20261122T060012Z-19366ddd89.tgz",
            "c646171aba26708c1230ed2e8e763245c73ff5bc7d86c2f6293e9b1c2a3eeb52"),
}


@pytest.mark.parametrize("mode", sorted(GOLDEN))
def test_an_unchanged_capture_packs_to_the_golden_bytes(tmp_path, mode):
    cap = make_capture(tmp_path / "capture", mode=mode)
    # No host environment: what the bundle holds must not depend on who packs it.
    path = write_bundle(cap, Origin(STACK, PROFILE_H100, EXECUTOR, mode), BundleOptions(tmp_path / "out", environ={}))
    name, digest = GOLDEN[mode]
    assert path.name == name
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
