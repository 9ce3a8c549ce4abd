"""`reprokit run` (behind `make bundle`) and `reprokit replay` end to end, with venv stacks."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.triton
CASES = "block_ptr.p0,experimental_descriptor.p0,tensor_descriptor.p0"


def reprokit(*args, cwd, env=None, timeout=900):
    return subprocess.run([sys.executable, "-m", "reprokit", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=timeout)


@pytest.fixture(scope="module")
def two_bundles(tmp_path_factory, stack_ready):
    for s in ("triton-3.0-cu129", "triton-3.6-cu130"):
        stack_ready(s)
    out = tmp_path_factory.mktemp("bundles")
    root = Path(__file__).resolve().parents[2]
    p = reprokit("run", "--gpu", "h100", "--stacks", "triton-3.0-cu129,triton-3.6-cu130", "--executor", "venv",
                 "--cases", CASES, "--workers", "2", "--out", str(out), cwd=root)
    return p, out, root


def test_run_writes_one_verified_bundle_per_stack_and_a_grid(two_bundles):
    p, out, root = two_bundles
    assert p.returncode == 0, p.stderr
    bundles = sorted(out.glob("*.tgz"))
    assert [b.name.split("-h100-")[0] for b in bundles] == ["triton-3.0-cu129", "triton-3.6-cu130"]
    assert "compile-only" in p.stderr  # no GPU here: said once, then compile-only
    assert p.stderr.count("No GPU on this host") == 1
    grid = [ln for ln in p.stdout.splitlines() if "experimental_descriptor.p0" in ln][0]
    assert "tma" in grid and "unsupported" in grid
    for b in bundles:
        v = reprokit("verify", str(b), cwd=root)
        assert v.returncode == 0, v.stdout + v.stderr
    assert not list(out.glob("*.partial")) and not list(out.glob(".*tmp*"))


def test_replay_uses_the_bundles_own_plan_and_kernels(two_bundles, tmp_path):
    _, out, root = two_bundles
    original = sorted(out.glob("triton-3.0-cu129-*.tgz"))[0]
    # A checkout whose suite and kernels changed since: replay must not look at them.
    other = tmp_path / "checkout"
    shutil.copytree(root, other, ignore=shutil.ignore_patterns(".git", "bundles", ".reprokit", "__pycache__"))
    for f in (other / "kernels").glob("*.py"):
        f.write_text("raise SystemExit('replay read the checkout, not the bundle')\n")
    (other / "kernels" / "suite.toml").write_text("broken = [\n")
    env = {**__import__("os").environ, "REPROKIT_ROOT": str(other)}
    replays = tmp_path / "replays"
    p = reprokit("replay", str(original), "--stacks", "triton-3.6-cu130", "--executor", "venv", "--out",
                 str(replays), "--json", cwd=tmp_path, env=env)
    assert p.returncode == 1, p.stderr   # verdicts moved from 3.0 to 3.6: the grid says which
    data = json.loads(p.stdout)
    assert data["parent"] == hashlib.sha256(original.read_bytes()).hexdigest()
    new = Path(data["stacks"][0]["bundle"])
    show = reprokit("show", str(new), "--json", cwd=tmp_path, env=env)
    assert show.returncode == 0, show.stderr
    shown = json.loads(show.stdout)
    assert json.dumps(shown).count(data["parent"]) >= 1
    verdicts = {c["id"]: c["verdict"] for c in shown["cases"]}
    assert verdicts == {"block_ptr.p0": "no-tma", "experimental_descriptor.p0": "unsupported",
                        "tensor_descriptor.p0": "tma"}


def test_a_failing_stack_does_not_stop_the_others(tmp_path, stack_ready, repo_root):
    stack_ready("triton-3.6-cu130")
    other = tmp_path / "checkout"
    shutil.copytree(repo_root, other, ignore=shutil.ignore_patterns(".git", "bundles", ".reprokit", "__pycache__"))
    with open(other / "stacks.toml", "a") as f:
        f.write('\n[stacks."triton-0.0-broken"]\ntriton = "0.0.0.dev0"\n')
    env = {**__import__("os").environ, "REPROKIT_ROOT": str(other)}
    out = tmp_path / "b"
    p = reprokit("run", "--gpu", "h100", "--stacks", "triton-0.0-broken,triton-3.6-cu130", "--executor", "venv",
                 "--cases", "host_descriptor.p0", "--out", str(out), cwd=tmp_path, env=env)
    assert p.returncode == 3
    assert "triton-0.0-broken: FAILED: venv: building triton-0.0-broken failed" in p.stderr
    assert [b.name.split("-h100-")[0] for b in out.glob("*.tgz")] == ["triton-3.6-cu130"]


def test_secrets_in_the_environment_never_reach_a_real_bundle(tmp_path, stack_ready, repo_root):
    import gzip
    import os

    stack_ready("triton-3.6-cu130")
    secrets = {
        "TRITON_REMOTE_CACHE_PASSWORD": "pw-5dd1e0b7a9",               # a knob-like name the harness keeps
        "CUDA_CACHE_URL": "https://alice:s3cr3t-9f1@cache.invalid/x",  # credentials inside a URL
        "NVIDIA_API_KEY": "nvapi-7Qx2fLk9PzR4mW8vT1yB",
        "TORCH_HOME_NOTE": "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",  # a token under an innocent name
        "HF_TOKEN": "hf_qweRTYuiopASDfghJKLzxcVBNm12345",              # not captured at all, must not leak
    }
    env = {**os.environ, **secrets}
    out = tmp_path / "b"
    p = reprokit("run", "--gpu", "h100", "--stacks", "triton-3.6-cu130", "--executor", "venv",
                 "--cases", "tensor_descriptor.p0,host_descriptor.p1", "--out", str(out), cwd=repo_root, env=env)
    assert p.returncode == 0, p.stderr
    (bundle,) = out.glob("*.tgz")
    raw = gzip.decompress(bundle.read_bytes())
    for name, value in secrets.items():
        for needle in (value, "s3cr3t-9f1"):
            if needle in value:
                assert needle.encode() not in raw, name
    show = reprokit("show", str(bundle), "--json", cwd=repo_root)
    redacted = json.loads(show.stdout)
    assert "TRITON_REMOTE_CACHE_PASSWORD" in json.dumps(redacted)
