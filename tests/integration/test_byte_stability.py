"""Same input, same bytes: a real capture packed with `bundle --share` under several hash seeds and
HOMEs, and a real sweep under two TMPDIRs, each give one sha256, and no HOME or temp folder of the
run is left in the bytes."""

from __future__ import annotations

import gzip
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from tests.helpers.runs import host

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
STACK = "triton-3.6-cu130"
CASES = "block_ptr.p0,host_descriptor.p0,tensor_descriptor.p1"
SEEDS = ("0", "1", "2", "77", "4242")


def _cli(*args, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout, check=False)


def _env(**over) -> dict:
    """This process's environment with the venv cache pinned: it must not follow HOME."""
    return {**os.environ, "REPROKIT_CACHE": str(host().cache), **{k: str(v) for k, v in over.items()}}


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_bundle_share_of_one_capture_is_one_sha256_under_every_hash_seed_and_home(stack_ready, tmp_path):
    stack_ready(STACK)
    # The capture runs with a HOME outside /home whose tail looks like one (/.../x/home), as on a
    # fresh CI machine: Triton reports its cache dirs under it in env.json, and reprokit's cache
    # (the stack's venv, whose paths env.json names) lies in it too (a link to the built venvs).
    capture_home = tmp_path / "x" / "home"
    capture_home.mkdir(parents=True)
    (capture_home / "cache").symlink_to(host().cache, target_is_directory=True)
    cache = {"REPROKIT_CACHE": capture_home / "cache"}
    cap = tmp_path / "cap"
    p = _cli("capture", "--gpu", "h100", "--stack", STACK, "--executor", "venv", "--workers", "1",
             "--cases", CASES, "--out", cap, env=_env(HOME=capture_home, **cache))
    assert p.returncode == 0, p.stderr
    planted = (cap / "env.json").read_bytes()                  # the test plants what it looks for
    assert f"{capture_home}/.triton/cache".encode() in planted and f"{capture_home}/cache/venvs/".encode() in planted
    # The other HOME is a /home/<user> that exists nowhere: bundling reads it, never writes there.
    homes = (capture_home, Path(f"/home/rk{os.getpid()}"))
    tmpdirs = (tmp_path / "tmp-a", tmp_path / "tmp-bb")   # and the temp folder changes too
    for t in tmpdirs:
        t.mkdir()
    digests = {}
    for home in homes:
        for i, seed in enumerate(SEEDS):
            out = tmp_path / f"out-{home.name}-{seed}"
            p = _cli("bundle", cap, "--out", out, "--share", "--executor", "venv",
                     env=_env(HOME=home, PYTHONHASHSEED=seed, TMPDIR=tmpdirs[i % 2], **cache))
            assert p.returncode == 0, p.stderr
            (bundle,) = out.glob("*.tgz")
            digests[(str(home), seed)] = _sha(bundle)
            stream = gzip.decompress(bundle.read_bytes())   # every member's name, header and contents
            for h in homes:
                assert str(h).encode() not in stream, (home, seed, h)
            # Not a piece of it either: Triton's cache dir is the placeholder and nothing before it.
            assert open_bundle(bundle).env["knobs"]["cache"]["dir"] == "<home>/.triton/cache"
    assert len(digests) == 10 and len(set(digests.values())) == 1, digests


def test_a_sweep_is_one_sha256_under_two_tmpdirs_and_homes(stack_ready, tmp_path):
    stack = "triton-3.5-cu130"   # a stack the sweep's spec targets
    stack_ready(stack)
    digests = {}
    runs = ((tmp_path / "t1", tmp_path / "x" / "home"), (tmp_path / "another-temp-root", tmp_path / "h2"))
    for i, (tmpdir, home) in enumerate(runs):
        tmpdir.mkdir()
        home.mkdir(parents=True)
        p = _cli("sweep", "tma-invariants", "--reduced", "--stacks", stack, "--work", tmp_path / f"work{i}",
                 "--out", tmp_path / f"out{i}", env=_env(TMPDIR=tmpdir, HOME=home, SOURCE_DATE_EPOCH=1700000000),
                 timeout=900)
        assert p.returncode == 0, p.stderr
        (bundle,) = (tmp_path / f"out{i}").glob("*.tgz")
        digests[(str(tmpdir), str(home))] = _sha(bundle)
        # ptxas ran on files under this TMPDIR (in the run's scratch folder), Triton kept its
        # cache dirs under this HOME, and the work folder says so...
        work = b"".join(r.read_bytes() for r in (tmp_path / f"work{i}").rglob("*.json"))
        assert f"{tmpdir}/".encode() in work and f"{home}/.triton".encode() in work
        # ...the bundle names them by what they are.
        stream = gzip.decompress(bundle.read_bytes())
        assert str(tmpdir).encode() not in stream and str(home).encode() not in stream
        assert b'"<tmp>.ptx"' in stream and b'"<home>/.triton/cache"' in stream and b"<cache>/venvs/" in stream
    assert len(set(digests.values())) == 1, digests


@pytest.mark.docker
def test_a_docker_sweep_is_one_sha256_under_two_tmpdirs(base_image, tmp_path):
    """In a container the harness's temp folder is the container's /tmp whatever the host's
    TMPDIR, and the container's hostname and start time are no part of the answers."""
    digests = {}
    for i, tmpdir in enumerate((tmp_path / "t1", tmp_path / "another-temp-root")):
        tmpdir.mkdir()
        p = _cli("sweep", "tma-invariants", "--reduced", "--stacks", "triton-3.5-cu130", "--executor", "docker",
                 "--work", tmp_path / f"work{i}", "--out", tmp_path / f"out{i}",
                 env=_env(TMPDIR=tmpdir, SOURCE_DATE_EPOCH=1700000000, REPROKIT_BASE_IMAGE=base_image,
                          REPROKIT_WITH_TORCH=0), timeout=900)
        assert p.returncode == 0, p.stderr
        (bundle,) = (tmp_path / f"out{i}").glob("*.tgz")
        digests[str(tmpdir)] = _sha(bundle)
        env = open_bundle(bundle).env
        assert env["os"]["in_container"] is True and env["os"]["hostname"] == "reprokit-container"
        assert b'"<tmp>.ptx"' in gzip.decompress(bundle.read_bytes())
    assert len(set(digests.values())) == 1, digests
