"""Integration fixtures: a real Docker engine for `docker` tests, which skip without one or fail under REPROKIT_REQUIRE_DOCKER=1."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from functools import lru_cache

import pytest

from reprokit.config import defaults_root
from reprokit.run.capture import capture
from tests.helpers.runs import host, planned

BASE_IMAGE = os.environ.get("REPROKIT_BASE_IMAGE") or "reprokit-base:bookworm"
# The stacks the docker tests build: compile-only on the offline base, through the real Dockerfile.
DOCKER_STACKS = ("triton-3.0-cu129", "triton-3.5-cu130")


def require_docker() -> bool:
    return os.environ.get("REPROKIT_REQUIRE_DOCKER") == "1"


def skip_or_fail(why: str) -> None:
    if require_docker():
        pytest.fail(f"REPROKIT_REQUIRE_DOCKER=1 but {why}", pytrace=False)
    pytest.skip(why)


@lru_cache(maxsize=None)
def _engine_problem() -> str | None:
    try:
        from reprokit.executors.docker import docker_available
    except ImportError as e:
        return f"docker-py is not importable ({e})"
    if not docker_available():
        return "no Docker engine answers (start dockerd, or run .ci/docker-setup.sh)"
    return None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "docker_stack" in metafunc.fixturenames:
        metafunc.parametrize("docker_stack", DOCKER_STACKS)


def pytest_runtest_setup(item: pytest.Item) -> None:
    if item.get_closest_marker("docker") is not None:
        problem = _engine_problem()
        if problem:
            skip_or_fail(problem)


@pytest.fixture(scope="session")
def base_image() -> str:
    """The offline base image, made with scripts/make-base-image.sh when missing (needs root)."""
    from reprokit.executors.docker import DockerExecutor

    probe = DockerExecutor(host=host())
    present = probe.image_id(BASE_IMAGE) is not None
    probe.close()
    if present:
        return BASE_IMAGE
    if os.geteuid() != 0 or shutil.which("debootstrap") is None:
        skip_or_fail(f"{BASE_IMAGE} is missing and cannot be made here (needs root and debootstrap)")
    script = defaults_root() / "scripts" / "make-base-image.sh"
    subprocess.run([str(script)], check=True, env={**os.environ, "REPROKIT_BASE_IMAGE": BASE_IMAGE})
    return BASE_IMAGE


@pytest.fixture(scope="session")
def docker_executor(base_image):
    """One executor for the session: compile-only stacks on the offline base."""
    from reprokit.executors.docker import DockerExecutor

    ex = DockerExecutor(host=host(), base_image=base_image, with_torch=False)
    yield ex
    ex.close()


@pytest.fixture(scope="session")
def stack_images(docker_executor, config) -> dict[str, dict]:
    """Both test stacks prepared once per session (built only when their tag is missing)."""
    facts = {}
    for name in DOCKER_STACKS:
        started = time.monotonic()
        facts[name] = {**docker_executor.prepare(config.stack(name)),
                       "prepare_wall_s": time.monotonic() - started}
    return facts


@pytest.fixture(scope="session")
def docker_captured(tmp_path_factory, stack_images, docker_executor, config):
    """stack name -> Capture of the whole suite (h100, compile-only, 2 workers) in its image, made once."""
    done = {}

    def get(name: str):
        if name not in done:
            out = tmp_path_factory.mktemp("docker-cap") / name
            done[name] = capture(config.stack(name), docker_executor, out, *planned(config.gpu("h100"), workers=2))
        return done[name]

    return get
