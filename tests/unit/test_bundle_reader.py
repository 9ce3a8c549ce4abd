"""The safe reader: hostile archives refused fast with their own message and nothing written
outside the folder given; tampered bundles refused with a message naming what changed."""

from __future__ import annotations

import gzip
import json
import os
import time
from pathlib import Path

import pytest

from reprokit.bundle.reader import Limits, check, extract, open_bundle, parse_size, verify
from reprokit.cli import main
from reprokit.errors import BundleInvalid, BundleRefused, BundleUnusable, UsageError
from tests.helpers.bundle_tools import HOSTILE_KINDS, hostile, make_bundle, repack

LIMITS = Limits(max_bundle_bytes=1 << 20, max_member_bytes=512 << 10)
IR = "cases/tensor_descriptor.p0/kernel.ttgir"


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    return make_bundle(tmp_path_factory.mktemp("reader"))


def _tree(root: Path) -> set:
    return {p.relative_to(root).as_posix() for p in root.rglob("*")}


@pytest.mark.parametrize("kind", sorted(HOSTILE_KINDS))
def test_hostile_archive_is_refused_fast_with_its_own_message(tmp_path, kind):
    arc = hostile(tmp_path, kind)
    dest = tmp_path / "sandbox" / "dest"
    dest.mkdir(parents=True)
    before = _tree(tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(BundleRefused) as e:
        verify(arc, LIMITS)
    with pytest.raises(BundleRefused) as e2:
        extract(arc, dest, LIMITS)
    assert time.perf_counter() - t0 < 2.0
    assert any(HOSTILE_KINDS[kind] in p for p in e.value.problems), e.value.problems
    assert e2.value.problems == e.value.problems
    # Other classes' messages do not fire: each class is told apart.
    others = [m for k, m in HOSTILE_KINDS.items() if k != kind and m not in HOSTILE_KINDS[kind]]
    assert not any(m in p for p in e.value.problems for m in others if kind != "absolute"), e.value.problems
    # Nothing was written anywhere: not in dest, not beside it, not where the archive aimed.
    assert _tree(tmp_path) == before
    assert not list(dest.iterdir())


def test_hostile_archive_exits_2_from_the_cli(tmp_path, capsys):
    arc = hostile(tmp_path, "symlink")
    assert main(["verify", str(arc)]) == 2
    out = capsys.readouterr().out
    assert "symbolic link" in out


def test_gzip_bomb_is_stopped_while_streaming(tmp_path):
    arc = hostile(tmp_path, "gzip-bomb")
    assert arc.stat().st_size < 1 << 20                  # small on disk, 128 MiB inside
    t0 = time.perf_counter()
    with pytest.raises(BundleRefused, match="compression bomb"):
        verify(arc, Limits(max_bundle_bytes=4 << 20, max_member_bytes=1 << 20))
    assert time.perf_counter() - t0 < 0.5


def test_limits_come_from_arguments_then_environment():
    env = {"REPROKIT_MAX_BUNDLE_BYTES": "3M", "REPROKIT_MAX_MEMBER_BYTES": "1024"}
    lim = Limits.from_env(environ=env)
    assert (lim.max_bundle_bytes, lim.max_member_bytes) == (3 << 20, 1024)
    assert Limits.from_env(max_bundle_bytes="2G", environ=env).max_bundle_bytes == 2 << 30
    assert parse_size("512MiB") == 512 << 20 and parse_size("77") == 77
    with pytest.raises(UsageError):
        parse_size("lots")


def test_env_limit_refuses_a_real_bundle(bundle):
    with pytest.raises(BundleRefused, match="per-member limit"):
        verify(bundle, Limits.from_env(environ={"REPROKIT_MAX_MEMBER_BYTES": "4096"}))


def test_valid_bundle_verifies_and_opens_in_memory(bundle, tmp_path):
    assert verify(bundle) == []
    report = check(bundle)
    assert report.valid and report.files > 20 and len(report.sha256) == 64
    b = open_bundle(bundle)
    assert b.root == bundle.name[: -len(".tgz")]
    assert b.manifest["mode"] == "compile-only" and b.results["cases"] and b.plan["cases"] and b.env["os"]
    assert b.read(IR).startswith(b"#blocked")
    assert b.sha256 == report.sha256
    out = extract(bundle, tmp_path / "x")
    assert out == tmp_path / "x" / b.root
    assert (out / IR).read_bytes() == b.read(IR)
    assert sorted(p.name for p in (tmp_path / "x").iterdir()) == [b.root]   # no work folder left
    with pytest.raises(UsageError, match="already exists"):
        extract(bundle, tmp_path / "x")


def _flip(files, rel=IR):
    data = bytearray(files[rel])
    data[len(data) // 2] ^= 0x01
    files[rel] = bytes(data)
    return files


def _manifest(edit):
    def apply(files):
        m = json.loads(files["manifest.json"])
        edit(m)
        files["manifest.json"] = json.dumps(m).encode()
        return files
    return apply


TAMPERS = {
    "flipped IR byte": (_flip, [f"{IR}: sha256", f"SHA256SUMS: {IR}: sha256 differs"]),
    "dropped listed file": (lambda f: {k: v for k, v in f.items() if k != IR},
                            [f"{IR}: listed in the manifest but missing", f"SHA256SUMS: lists {IR}"]),
    "unlisted file added": (lambda f: {**f, "cases/extra.txt": b"hello\n"},
                            ["cases/extra.txt: in the bundle but not listed in the manifest"]),
    "broken manifest JSON": (lambda f: {**f, "manifest.json": f["manifest.json"][:-20]},
                             ["manifest.json: not valid JSON"]),
    "required key removed": (_manifest(lambda m: m.pop("mode")),
                             ["manifest.json: $: 'mode' is a required property"]),
    "wrong type in manifest": (_manifest(lambda m: m["files"][0].update(size="12")),
                               ["manifest.json: $.files[0].size: '12' is not of type 'integer'"]),
    "results breaks its schema": (
        lambda f: {**f, "results.json": f["results.json"].replace(b'"verdict": "tma"', b'"verdict": "maybe"', 1)},
        ["results.json: $.cases[1].verdict: 'maybe' is not one of"]),
    "size mismatch": (_manifest(lambda m: next(e for e in m["files"] if e["path"] == IR).update(size=1)),
                      [f"{IR}: ", "bytes, the manifest says 1"]),
}


@pytest.mark.parametrize("what", sorted(TAMPERS))
def test_tampered_bundle_is_invalid_with_a_message_naming_it(bundle, tmp_path, capsys, what):
    edit, expected = TAMPERS[what]
    bad = repack(bundle, tmp_path / "bad.tgz", edit)
    problems = verify(bad)
    for e in expected:
        assert any(e in p for p in problems), (e, problems)
    with pytest.raises(BundleInvalid):
        open_bundle(bad)
    assert main(["verify", str(bad)]) == 1
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines == problems                              # one line per problem


def test_repack_without_edits_is_still_valid(bundle, tmp_path):
    assert verify(repack(bundle, tmp_path / "same.tgz", lambda f: f)) == []


@pytest.mark.parametrize("fmt, message", [
    (2, "bundle format 2 is newer than this reprokit understands (reads 1..1); upgrade reprokit"),
    (0, "bundle format 0 is too old for this reprokit (reads 1..1)"),
])
def test_format_version_too_new_or_too_old(bundle, tmp_path, capsys, fmt, message):
    bad = repack(bundle, tmp_path / "fmt.tgz", _manifest(lambda m: m.update(format=fmt)))
    with pytest.raises(BundleUnusable) as e:
        verify(bad)
    assert message in str(e.value)
    assert main(["verify", str(bad)]) == 2
    assert message in capsys.readouterr().out


def test_unusable_inputs_exit_2(tmp_path, bundle, capsys):
    cases = {
        "missing": (tmp_path / "nope.tgz", "no such file"),
        "not gzip": (tmp_path / "plain.tgz", "not a gzip file"),
        "not tar": (tmp_path / "text.tgz", "not a readable tar archive"),
        "truncated": (tmp_path / "short.tgz", "truncated"),
        "corrupt": (tmp_path / "corrupt.tgz", "corrupt gzip stream"),
    }
    (tmp_path / "plain.tgz").write_text("hello")
    (tmp_path / "text.tgz").write_bytes(gzip.compress(b"just some text, not a tar header" * 40))
    raw = bundle.read_bytes()
    (tmp_path / "short.tgz").write_bytes(raw[: len(raw) // 2])
    (tmp_path / "corrupt.tgz").write_bytes(raw[:-8] + bytes(b ^ 0xFF for b in raw[-8:-4]) + raw[-4:])
    for name, (path, message) in cases.items():
        with pytest.raises(BundleUnusable) as e:
            verify(path)
        assert message in str(e.value), (name, str(e.value))
        assert main(["verify", str(path)]) == 2, name
    assert "no such file" in capsys.readouterr().out


def test_verify_json_output(bundle, capsys):
    assert main(["verify", "--json", str(bundle)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["valid"] is True and out["problems"] == [] and out["exit_code"] == 0 and out["files"] > 20


def test_show_prints_a_summary_without_extracting(bundle, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["show", str(bundle)]) == 0
    out = capsys.readouterr().out
    for text in ("triton-3.5-cu130", "h100", "compile-only", "tensor_descriptor.p0", "rejected", "unsupported"):
        assert text in out
    assert main(["show", "--json", str(bundle)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["profile"]["key"] == "h100" and s["mode"] == "compile-only" and len(s["cases"]) == 4
    assert {c["id"]: c["verdict"] for c in s["cases"]}["tensor_descriptor.p0"] == "tma"
    assert not os.listdir(tmp_path)


def test_extract_of_an_invalid_bundle_leaves_nothing(bundle, tmp_path):
    bad = repack(bundle, tmp_path / "bad.tgz", _flip)
    dest = tmp_path / "dest"
    with pytest.raises(BundleInvalid) as e:
        extract(bad, dest)
    assert any(IR in p for p in e.value.problems)
    assert list(dest.iterdir()) == []
