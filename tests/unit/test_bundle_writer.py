"""Writing bundles: layout, byte-for-byte reproducibility, coreutils compatibility, and no partial
file left behind when packing fails."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from reprokit.bundle import writer
from reprokit.bundle.reader import open_bundle, verify
from reprokit.bundle.writer import write_bundle
from reprokit.cli import main
from reprokit.errors import CaptureInvalid, FileSystemError, UsageError
from reprokit.options import BundleOptions, HostEnv, Origin
from tests.helpers.bundle_tools import ORIGIN, make_bundle, members
from tests.helpers.fake_capture import EXECUTOR, FINISHED, PROFILE_H100, STACK, make_capture

EPOCH_FINISHED = 1795327212  # 2026-11-22T06:00:12Z


def _pack(cap: Path, out: Path, **kw) -> Path:
    return write_bundle(cap, ORIGIN, BundleOptions(out, **kw))


@pytest.fixture
def capture(tmp_path) -> Path:
    return make_capture(tmp_path / "capture")


def test_name_layout_and_manifest(capture, tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    path = _pack(capture, tmp_path / "out")
    assert path.parent == tmp_path / "out"
    assert path.name.startswith("triton-3.5-cu130-h100-20261122T060012Z-") and path.suffix == ".tgz"
    root, files = members(path)
    assert root == path.name[:-4]
    assert {"manifest.json", "SHA256SUMS", "README.md", "plan.json", "results.json", "env.json", "summary.tsv",
            "logs/harness.log", "kernels/copy_tensor_descriptor.py", "kernels/suite.toml",
            "cases/tensor_descriptor.p0/kernel.ttgir", "cases/tensor_descriptor.p0/kernel.cubin",
            "cases/tensor_descriptor.p2/reproducer.mlir"} <= set(files)
    m = json.loads(files["manifest.json"])
    assert m["format"] == 1 and m["name"] == root and m["mode"] == "compile-only"
    assert m["created"] == FINISHED and m["source_date_epoch"] == EPOCH_FINISHED
    assert m["stack"]["triton"] == "3.5.0" and m["stack"]["image_digest"] == EXECUTOR["image_digest"]
    assert m["profile"] == PROFILE_H100 and m["executor"]["name"] == "docker" and m["parent"] is None
    listed = {f["path"]: f for f in m["files"]}
    assert set(listed) == set(files) - {"manifest.json", "SHA256SUMS"}
    roles = {p: f["role"] for p, f in listed.items()}
    assert roles["cases/tensor_descriptor.p0/kernel.ttgir"] == "ir"
    assert roles["cases/tensor_descriptor.p0/kernel.cubin"] == "cubin"
    assert roles["cases/tensor_descriptor.p0/metadata.json"] == "metadata"
    assert roles["cases/tensor_descriptor.p2/reproducer.mlir"] == "reproducer"
    assert roles["kernels/gemm_tma.py"] == "kernel-source" and roles["README.md"] == "readme"
    assert roles["logs/harness.log"] == "log" and roles["plan.json"] == "plan"
    assert m["share"]["applied"] is False and m["redaction"]["marker"] == "<redacted>"
    readme = files["README.md"].decode()
    assert f"reprokit replay {root}.tgz" in readme and "sha256sum -c SHA256SUMS" in readme
    assert "| tensor_descriptor.p2 | P2 | no-tma | rejected | yes |" in readme
    assert "ptxas: 12.8.93" in readme
    assert verify(path) == []


def test_same_capture_twice_gives_identical_bytes(capture, tmp_path, monkeypatch):
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)
    a = _pack(capture, tmp_path / "a")
    # A copy elsewhere, with other file times and permissions, packs to the same bytes.
    copy = tmp_path / "elsewhere" / "cap"
    shutil.copytree(capture, copy)
    for p in copy.rglob("*"):
        os.utime(p, (1_000_000_000, 1_000_000_000))
        if p.is_file():
            p.chmod(0o600)
    b = _pack(copy, tmp_path / "b")
    assert a.name == b.name
    assert a.read_bytes() == b.read_bytes()


def test_source_date_epoch_changes_time_name_and_bytes(capture, tmp_path):
    def pack(out, environ):
        return write_bundle(capture, ORIGIN, BundleOptions.from_host(HostEnv.from_environ(environ), out))

    a = pack(tmp_path / "a", {"SOURCE_DATE_EPOCH": "1800000000"})
    assert "-20270115T080000Z-" in a.name
    b = pack(tmp_path / "b", {"SOURCE_DATE_EPOCH": "1800000001"})
    assert "-20270115T080001Z-" in b.name and a.read_bytes() != b.read_bytes()
    c = _pack(capture, tmp_path / "c", source_date_epoch=1800000000)
    assert c.name == a.name and c.read_bytes() == a.read_bytes()
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        pack(tmp_path / "d", {"SOURCE_DATE_EPOCH": "yesterday"})
    # The bundle verb reads it at the edge.
    assert main(["bundle", str(capture), "--out", str(tmp_path / "e")]) == 0


def test_headers_are_normalised(capture, tmp_path):
    path = _pack(capture, tmp_path / "out", source_date_epoch=1234567890)
    raw = path.read_bytes()
    assert raw[:3] == b"\x1f\x8b\x08"
    assert raw[3] & 0x08 == 0, "no file name in the gzip header"
    assert raw[4:8] == b"\0\0\0\0", "no time in the gzip header"
    with tarfile.open(path) as tar:
        infos = tar.getmembers()
    names = [ti.name for ti in infos]
    assert len(set(n.split("/")[0] for n in names)) == 1
    payload = [n for n in names if not n.endswith(("README.md", "manifest.json", "SHA256SUMS"))]
    assert payload == sorted(payload)
    assert names[-3:] == [f"{names[0]}/README.md", f"{names[0]}/manifest.json", f"{names[0]}/SHA256SUMS"]
    for ti in infos:
        assert (ti.uid, ti.gid, ti.uname, ti.gname, ti.mtime) == (0, 0, "", "", 1234567890)
        assert ti.mode == (0o755 if ti.isdir() else 0o644) and (ti.isdir() or ti.isreg())


def test_coreutils_can_list_and_check_it(capture, tmp_path):
    path = _pack(capture, tmp_path / "out")
    listing = subprocess.run(["tar", "-tzf", str(path)], capture_output=True, text=True, check=True).stdout.split()
    root = path.name[:-4]
    assert all(line == f"{root}/" or line.startswith(f"{root}/") for line in listing)
    assert f"{root}/manifest.json" in listing
    subprocess.run(["tar", "xzf", str(path), "-C", str(tmp_path)], check=True, capture_output=True)
    r = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path / root, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr
    checked = r.stdout.splitlines()
    assert "manifest.json: OK" in checked and "cases/tensor_descriptor.p0/kernel.cubin: OK" in checked
    files = [p for p in (tmp_path / root).rglob("*") if p.is_file()]
    assert len(checked) == len(files) - 1            # every file but SHA256SUMS itself


def test_parent_is_recorded(capture, tmp_path):
    first = _pack(capture, tmp_path / "a")
    b = open_bundle(first)
    child = _pack(capture, tmp_path / "b", parent=b.sha256)
    assert open_bundle(child).manifest["parent"] == b.sha256
    assert child.name != first.name
    with pytest.raises(UsageError, match="parent"):
        _pack(capture, tmp_path / "c", parent="abc")


class _Boom(Exception):
    pass


@pytest.mark.parametrize("failure", ["file vanishes", "interrupt", "bug"])
def test_failure_midway_leaves_no_partial_bundle(capture, tmp_path, monkeypatch, failure):
    real = writer._read_scrubbed
    calls = []

    def flaky(entry, scrubber, log):
        calls.append(entry.path)
        if len(calls) == 6:
            if failure == "file vanishes":
                entry.source.unlink()
            elif failure == "interrupt":
                raise KeyboardInterrupt
            else:
                raise _Boom("a bug halfway through")
        return real(entry, scrubber, log)

    monkeypatch.setattr(writer, "_read_scrubbed", flaky)
    out = tmp_path / "out"
    expected = {"file vanishes": FileSystemError, "interrupt": KeyboardInterrupt, "bug": _Boom}[failure]
    with pytest.raises(expected):
        _pack(capture, out)
    assert len(calls) == 6
    assert list(out.iterdir()) == []


def test_capture_problems_are_reported_before_anything_is_written(tmp_path):
    out = tmp_path / "out"
    cap = make_capture(tmp_path / "c1")
    (cap / "env.json").unlink()
    with pytest.raises(CaptureInvalid, match="env.json: missing"):
        _pack(cap, out)
    cap = make_capture(tmp_path / "c2")
    os.symlink("/etc/passwd", cap / "logs" / "passwd")
    with pytest.raises(CaptureInvalid, match="not a regular file"):
        _pack(cap, out)
    cap = make_capture(tmp_path / "c3")
    results = json.loads((cap / "results.json").read_text())
    results["cases"][0]["verdict"] = "probably"
    (cap / "results.json").write_text(json.dumps(results))
    with pytest.raises(CaptureInvalid) as e:
        _pack(cap, out)
    assert "results.json: $.cases[0].verdict: 'probably' is not one of" in e.value.problems[0]
    cap = make_capture(tmp_path / "c4")
    (cap / "kernels" / "copy_block_ptr.py").unlink()
    (cap / "cases" / "block_ptr.p0" / "kernel.ptx").unlink()
    with pytest.raises(CaptureInvalid) as e:
        _pack(cap, out)
    assert any("names kernel source kernels/copy_block_ptr.py" in p for p in e.value.problems)
    assert any("$.cases[0].artifacts.ptx: cases/block_ptr.p0/kernel.ptx is missing" in p for p in e.value.problems)
    assert not out.exists() or list(out.iterdir()) == []


def test_bundle_verb_packs_a_capture(capture, tmp_path, capsys):
    assert main(["bundle", str(capture), "--out", str(tmp_path / "out")]) == 0
    path = Path(capsys.readouterr().out.strip())
    assert path.is_file() and verify(path) == []
    assert main(["bundle", str(capture), "--out", str(tmp_path / "out2"), "--parent", str(path), "--share"]) == 0
    child = Path(capsys.readouterr().out.strip())
    m = open_bundle(child).manifest
    assert m["parent"] == open_bundle(path).sha256 and m["share"]["applied"] is True
    assert main(["bundle", str(tmp_path / "nowhere")]) == 2


def test_gpu_mode_capture_bundles(tmp_path):
    path = make_bundle(tmp_path, mode="gpu")
    b = open_bundle(path)
    assert b.manifest["mode"] == "gpu" and b.env["gpu"]["available"] is True
    assert "GPU: NVIDIA H100 80GB HBM3; driver 580.65.06" in b.read_text("README.md")


def test_image_digest_from_docker_facts(capture, tmp_path):
    facts = {"name": "docker", "image": "reprokit/triton-3.5-cu130:abc", "image_id": "sha256:" + "1f" * 32,
             "image_repo_digests": []}
    path = write_bundle(capture, Origin(STACK, PROFILE_H100, facts, "compile-only"), BundleOptions(tmp_path / "a"))
    assert open_bundle(path).manifest["stack"]["image_digest"] == "sha256:" + "1f" * 32
    venv = write_bundle(capture, Origin({"name": "local"}, PROFILE_H100, {"name": "local"}, "compile-only"),
                        BundleOptions(tmp_path / "b"))
    assert "image_digest" not in open_bundle(venv).manifest["stack"]


def test_readme_and_show_say_what_ran_apart_from_the_pins(capture, tmp_path, capsys):
    """The pins (torch 2.9.0, Python 3.12, a CUDA base image) are not what a venv run used: the
    README and `show` name the Python, triton and torch that env.json recorded, and the image only
    for a docker run."""
    docker = _pack(capture, tmp_path / "docker")
    readme = open_bundle(docker).read_text("README.md")
    assert "(pinned: triton 3.5.0, torch 2.9.0, cuda 13.0, python 3.12)" in readme
    assert ("Ran under the `docker` executor: Python 3.12.3, triton 3.5.0, torch not installed, in image "
            f"`reprokit/triton-3.5-cu130:0123456789ab` (`{EXECUTOR['image_digest']}`)") in readme
    assert f"Pinned base image: `{STACK['base_image']}`." in readme

    venv = write_bundle(capture, Origin(STACK, PROFILE_H100, {"name": "venv",
                                                              "python": "/home/u/.cache/reprokit/venvs/x/bin/python"},
                                        "compile-only"), BundleOptions(tmp_path / "venv"))
    readme = open_bundle(venv).read_text("README.md")
    assert ("Ran under the `venv` executor: Python 3.12.3, triton 3.5.0, torch not installed, on the host, "
            "in no image") in readme
    assert "in image `" not in readme
    assert main(["show", "--json", str(venv)]) == 0
    ran = json.loads(capsys.readouterr().out)["ran"]
    assert ran.startswith("Python 3.12.3, triton 3.5.0, torch not installed, on the host")
