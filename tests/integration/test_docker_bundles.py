"""`reprokit run --executor docker` (what `make bundle` calls) end to end: image reuse, and a stack whose image does not build."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.config import defaults_root

pytestmark = pytest.mark.docker

CASES = "block_ptr.*,tensor_descriptor.p0,experimental_descriptor.p0"
BROKEN_STACK = """
[stacks."triton-broken"]
triton = "3.5.0"
base_image = "nvidia/cuda:13.0.1-devel-ubuntu24.04"
dockerfile = "Dockerfiles/broken.Dockerfile"
"""
BROKEN_DOCKERFILE = """ARG BASE_IMAGE
FROM ${BASE_IMAGE}
RUN echo "pip: no matching distribution for triton==3.5.0.broken" >&2 && exit 1
"""


def reprokit_run(out: Path, stacks: str, base_image: str, root: Path | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "REPROKIT_BASE_IMAGE": base_image, "REPROKIT_WITH_TORCH": "0",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(defaults_root()), os.environ.get("PYTHONPATH")]))}
    if root is not None:
        env["REPROKIT_ROOT"] = str(root)
    return subprocess.run([sys.executable, "-m", "reprokit", "run", "--gpu", "h100", "--executor", "docker",
                           "--stacks", stacks, "--cases", CASES, "--workers", "2", "--out", str(out), "--json"],
                          capture_output=True, text=True, env=env, timeout=900)


def executor_facts(bundle: Path) -> dict:
    with tarfile.open(bundle) as tar:
        member = next(m for m in tar.getmembers() if m.name.endswith("manifest.json"))
        return json.load(tar.extractfile(member))["executor"]


def test_run_reuses_images_and_records_them(stack_images, base_image, tmp_path):
    stacks = ",".join(stack_images)
    r = reprokit_run(tmp_path / "bundles", stacks, base_image)
    assert r.returncode == 0, r.stderr[-2000:]
    assert "building" not in r.stderr  # the session's images: nothing rebuilt
    outcome = json.loads(r.stdout)
    assert outcome["executor"] == "docker"
    for s in outcome["stacks"]:
        assert s["error"] is None and Path(s["bundle"]).is_file()
        facts = executor_facts(Path(s["bundle"]))
        assert facts["built"] is False
        assert facts["image_id"] == stack_images[s["stack"]]["image_id"]
        assert facts["network_mode"] == "none" and facts["container_id"]


def test_stack_that_does_not_build_fails_alone(stack_images, base_image, tmp_path):
    root = tmp_path / "root"
    shutil.copytree(defaults_root() / "Dockerfiles", root / "Dockerfiles")
    for d in ("kernels", "schemas"):
        shutil.copytree(defaults_root() / d, root / d)
    (root / "Dockerfiles" / "broken.Dockerfile").write_text(BROKEN_DOCKERFILE)
    (root / "stacks.toml").write_text((defaults_root() / "stacks.toml").read_text() + BROKEN_STACK)
    r = reprokit_run(tmp_path / "bundles", "triton-broken,triton-3.5-cu130", base_image, root)
    assert r.returncode == 3, r.stderr[-2000:]
    outcome = {s["stack"]: s for s in json.loads(r.stdout)["stacks"]}
    err = outcome["triton-broken"]["error"]
    assert err.startswith("triton-broken: image build failed at `RUN echo")
    assert "returned a non-zero code: 1" in err and "\n" not in err
    assert outcome["triton-broken"]["bundle"] is None
    good = outcome["triton-3.5-cu130"]
    assert good["error"] is None and Path(good["bundle"]).is_file()
    assert executor_facts(Path(good["bundle"]))["built"] is False
