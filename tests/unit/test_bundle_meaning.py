"""verify checks what a bundle claims against what it carries: plan and results name the same
cases, and every TMA count and verdict is the oracle's own on the bundle's IR, even when a
forger recomputed the manifest and SHA256SUMS."""

from __future__ import annotations

import subprocess
import tarfile

import pytest

from reprokit.bundle.reader import open_bundle, verify
from reprokit.bundle.writer import write_bundle
from reprokit.errors import BundleInvalid, OutputExists
from reprokit.options import BundleOptions
from tests.helpers.bundle_tools import ORIGIN, edit_json, make_bundle, reseal
from tests.helpers.fake_capture import make_capture


@pytest.fixture(scope="module")
def bundle(tmp_path_factory):
    return make_bundle(tmp_path_factory.mktemp("meaning"))


def _case(doc, cid):
    return next(c for c in doc["cases"] if c["id"] == cid)


def _sums_hold(path, tmp_path) -> bool:
    with tarfile.open(path) as t:
        root = t.getmembers()[0].name
        t.extractall(tmp_path, filter="data")
    return subprocess.run(["sha256sum", "-c", "--quiet", "SHA256SUMS"], cwd=tmp_path / root).returncode == 0


def test_a_forged_verdict_with_recomputed_sums_is_caught(bundle, tmp_path):
    def forge(doc):
        c = _case(doc, "block_ptr.p0")
        c.update(verdict="tma", met=True, reason="TMA at sass (sass=2)")

    forged = reseal(bundle, tmp_path / "forged.tgz", lambda f: edit_json(f, "results.json", forge))
    assert _sums_hold(forged, tmp_path / "x")  # coreutils alone see nothing wrong
    problems = verify(forged)
    assert any(p.startswith("results.json: case block_ptr.p0: verdict is 'tma', but the oracle gives 'no-tma'")
               for p in problems), problems
    assert any("met is True, but the oracle gives False" in p for p in problems)


def test_forged_counts_are_recounted_from_the_ir(bundle, tmp_path):
    forged = reseal(bundle, tmp_path / "forged.tgz", lambda f: edit_json(
        f, "results.json", lambda d: _case(d, "block_ptr.p0")["tma"].update(sass=2, ptx=1)))
    problems = verify(forged)
    assert "results.json: case block_ptr.p0: tma.sass is 2, but the oracle counts 0 in " \
           "cases/block_ptr.p0/kernel.sass" in problems
    assert any(p.startswith("results.json: case block_ptr.p0: tma.ptx is 1") for p in problems)


def test_plan_and_results_must_name_the_same_cases(bundle, tmp_path):
    def drop_and_rename(doc):
        doc["cases"] = [c for c in doc["cases"] if c["id"] != "experimental_descriptor.p0"]
        _case(doc, "block_ptr.p0")["family"] = "tensor_descriptor"

    forged = reseal(bundle, tmp_path / "mixed.tgz", lambda f: edit_json(f, "results.json", drop_and_rename))
    problems = verify(forged)
    assert "results.json: no result for case experimental_descriptor.p0, which plan.json names" in problems
    assert any("case block_ptr.p0: family is 'tensor_descriptor', but plan.json says 'block_ptr'" in p
               for p in problems)
    extra = reseal(bundle, tmp_path / "extra.tgz", lambda f: edit_json(
        f, "plan.json", lambda d: d["cases"].remove(_case(d, "block_ptr.p0"))))
    assert "results.json: case block_ptr.p0 is not in plan.json" in verify(extra)


def test_a_forgery_that_edits_the_ir_too_passes_every_content_check(bundle, tmp_path):
    """What meaning checks cannot catch: IR and results forged together. Only a signature can."""
    sass = "        /*0040*/                   UTMALDG.2D [UR8], [UR4] ;\n" \
           "        /*0050*/                   UTMASTG.2D [UR4], [UR8] ;\n"

    def forge(files):
        rel = "cases/block_ptr.p0/kernel.sass"
        files[rel] = files[rel] + sass.encode()

        def claim(doc):
            c = _case(doc, "block_ptr.p0")
            c["tma"]["sass"] = 2
            c["tma_ops"]["sass"] = {"UTMALDG": 1, "UTMASTG": 1}
            c.update(verdict="tma", met=True)
        return edit_json(files, "results.json", claim)

    forged = reseal(bundle, tmp_path / "forged.tgz", forge)
    assert verify(forged) == []


def test_an_edited_capture_is_refused_on_read_by_the_one_check(tmp_path):
    """The harness's verdict is the one recorded; the writer packs what it is handed and verify,
    the one check, recounts it from the bundle's own IR."""
    cap = make_capture(tmp_path / "cap")
    import json

    results = json.loads((cap / "results.json").read_text())
    _case(results, "block_ptr.p0").update(verdict="tma", met=True)
    (cap / "results.json").write_text(json.dumps(results))
    packed = write_bundle(cap, ORIGIN, BundleOptions(tmp_path / "out"))
    assert any(p.startswith("results.json: case block_ptr.p0: verdict is 'tma', but the oracle gives 'no-tma'")
               for p in verify(packed))
    with pytest.raises(BundleInvalid, match="verdict is 'tma', but the oracle gives 'no-tma'"):
        open_bundle(packed)


def test_the_name_covers_every_file_and_a_different_bundle_is_never_replaced(tmp_path):
    a = make_capture(tmp_path / "a")
    b = make_capture(tmp_path / "b")
    (b / "logs" / "harness.log").write_text("only a log differs\n")

    def pack(cap, out):
        return write_bundle(cap, ORIGIN, BundleOptions(out))

    pa, pb = pack(a, tmp_path / "o1"), pack(b, tmp_path / "o2")
    assert pa.name != pb.name
    assert pack(a, tmp_path / "o1") == pa  # the same capture again: the same name and bytes, accepted
    # A different bundle already under a's name (renamed by hand, or another tool) stays as it was.
    other = tmp_path / "o3" / pa.name
    other.parent.mkdir()
    other.write_bytes(pb.read_bytes())
    with pytest.raises(OutputExists, match="holds a different bundle; it was not replaced"):
        pack(a, tmp_path / "o3")
    assert other.read_bytes() == pb.read_bytes()
    assert sorted(p.name for p in other.parent.iterdir()) == [pa.name]
