"""Stack images built through the real Dockerfile with a real engine, and the real harness captured in them."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from reprokit.config import PACKAGE_DIR, defaults_root
from tests.helpers.runs import host

pytestmark = pytest.mark.docker


def _owned_by_us(root: Path) -> list[str]:
    """Paths under root that are not owned by this process's uid:gid."""
    bad = []
    for p in [root, *root.rglob("*")]:
        st = p.lstat()
        if (st.st_uid, st.st_gid) != (os.getuid(), os.getgid()):
            bad.append(f"{p.relative_to(root)} {st.st_uid}:{st.st_gid}")
    return bad


def test_images_are_tagged_by_hash_and_labelled(stack_images, docker_executor, config, base_image):
    for name, facts in stack_images.items():
        assert facts["image"] == docker_executor.image_tag(config.stack(name))
        assert facts["image"].startswith(f"reprokit/{name}:")
        assert facts["image_id"].startswith("sha256:")
        assert facts["build_args"]["WITH_TORCH"] == "0"
        assert facts["build_args"]["TRITON_VERSION"] == config.stack(name).triton
        assert facts["base_image_id"] and facts["engine"]["version"]
        labels = facts["image_labels"]
        assert labels["org.reprokit.stack"] == name
        assert labels["org.reprokit.triton"] == config.stack(name).triton
        assert labels["org.reprokit.base-image"] == base_image
        assert labels["org.reprokit.with-torch"] == "0"
    assert len({f["image"] for f in stack_images.values()}) == len(stack_images) == 2


def test_tag_changes_with_dockerfile_and_build_args(docker_executor, config, tmp_path, base_image):
    from reprokit.executors.docker import DockerExecutor

    stack = config.stack("triton-3.5-cu130")
    tag = docker_executor.image_tag(stack)
    assert DockerExecutor(host=host(), base_image=base_image, with_torch=False).image_tag(stack) == tag
    assert DockerExecutor(host=host(), base_image=base_image, with_torch=True).image_tag(stack) != tag
    assert DockerExecutor(host=host(), base_image="other:base", with_torch=False).image_tag(stack) != tag
    root = tmp_path / "root"
    (root / "Dockerfiles").mkdir(parents=True)
    text = (defaults_root() / "Dockerfiles" / "stack.Dockerfile").read_text()
    (root / "Dockerfiles" / "stack.Dockerfile").write_text(text + "\n# edited\n")
    assert DockerExecutor(root, host=host(), base_image=base_image, with_torch=False).image_tag(stack) != tag


def test_capture_in_stack_image(docker_stack, docker_captured, stack_images, docker_executor, config):
    name = docker_stack
    stack = config.stack(name)
    cap = docker_captured(name)
    tmp_out = cap.out_dir
    assert cap.run.ok, cap.run.log_tail
    env = json.loads((tmp_out / "env.json").read_text())
    assert env["packages"]["triton"]["version"] == stack.triton  # the image's Triton, not the host's
    assert env["packages"].get("torch") is None  # WITH_TORCH=0
    results = cap.results.to_json()
    assert results["triton"] == stack.triton
    assert len(results["cases"]) == len(json.loads((tmp_out / "plan.json").read_text())["cases"])
    verdicts = {c["verdict"] for c in results["cases"]}
    assert "tma" in verdicts and "no-tma" in verdicts
    assert not [c["id"] for c in results["cases"] if c["status"] == "harness_error"]
    for f in ("results.json", "summary.tsv", "logs/harness.log", "logs/executor.log"):
        assert (tmp_out / f).is_file(), f
    # Written in the container as the host user: later host steps can read and delete them.
    assert _owned_by_us(tmp_out) == []
    rt = cap.run.runtime
    assert rt["image_id"] == stack_images[name]["image_id"]
    assert rt["network_mode"] == "none"
    assert rt["user"] == f"{os.getuid()}:{os.getgid()}"
    assert rt["container_id"] and rt["runtime"] and rt["engine"]["version"]
    assert rt["timed_out"] is False and rt["exit_code"] == 0 and rt["oom_killed"] is False
    assert {m["target"]: m["read_only"] for m in rt["mounts"]} == {
        "/opt/reprokit/reprokit": True, "/in/plan.json": True, "/in/kernels": True, "/out": False,
        "/cache/sass": False}
    assert docker_executor.containers() == []


@pytest.mark.triton
def test_verdicts_equal_those_in_venvs(docker_stack, docker_captured, captured):
    """The same pins in a container and in a host venv: the same statuses, verdicts and TMA counts."""
    def digest(cap):
        return {c["id"]: (c["status"], c["verdict"], c.get("met"), c.get("tma")) for c in cap.results.to_json()["cases"]}

    docker_cap = docker_captured(docker_stack)
    in_docker, in_venv = digest(docker_cap), digest(captured(docker_stack))
    # The offline test base image carries no CUDA toolkit (a real CUDA devel image does), while
    # the host venvs find CI's nvcc: the CUDA C++ case may differ there, and only for that reason.
    for c in docker_cap.results.to_json()["cases"]:
        if c["family"] == "cuda_tma" and c["status"] == "unsupported":
            assert c["error"].startswith("no nvcc in this stack"), c["error"]
            in_docker.pop(c["id"])
            in_venv.pop(c["id"])
    assert in_docker == in_venv


def test_tag_follows_a_rebuilt_base(docker_executor, stack_images, base_image, config):
    """A base named by tag that now names another image gives new stack tags (no stale reuse)."""
    from reprokit.executors.docker import DockerExecutor

    alias = "reprokit-test-base:retag"
    stack = config.stack("triton-3.5-cu130")
    ex = DockerExecutor(host=host(), base_image=alias, with_torch=False)
    try:
        subprocess.run(["docker", "tag", base_image, alias], check=True)
        before = ex.image_tag(stack)
        subprocess.run(["docker", "tag", stack_images[stack.name]["image_id"], alias], check=True)
        assert ex.image_tag(stack) != before
    finally:
        subprocess.run(["docker", "rmi", alias], capture_output=True)
        ex.close()


def test_second_prepare_reuses_image(stack_images, base_image, config, monkeypatch):
    from reprokit.executors.docker import DockerExecutor

    fresh = DockerExecutor(host=host(), base_image=base_image, with_torch=False)

    def no_build(*a, **k):
        raise AssertionError("an image with the stack's tag exists; it must not be rebuilt")

    monkeypatch.setattr(fresh, "_build", no_build)
    for name in stack_images:
        facts = fresh.prepare(config.stack(name))
        assert facts["built"] is False and facts["build_s"] == 0.0
        assert facts["image_id"] == stack_images[name]["image_id"]
    assert fresh.builds == 0
    fresh.close()


def test_package_mount_is_read_only(stack_images, docker_executor, config):
    r = docker_executor.run_command(
        config.stack("triton-3.5-cu130"),
        ["python", "-c", "import reprokit, pathlib; print(reprokit.__file__); "
                         "pathlib.Path('/opt/reprokit/reprokit/x').write_text('x')"],
        timeout_s=60)
    assert r.returncode != 0
    assert "/opt/reprokit/reprokit/__init__.py" in r.log_tail
    assert "Read-only file system" in r.log_tail
    assert not (PACKAGE_DIR / "x").exists()
