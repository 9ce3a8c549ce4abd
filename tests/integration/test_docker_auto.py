"""`--executor auto` against the real engine: docker only where it can build the stacks."""

from __future__ import annotations

import pytest

from reprokit.executors import make_executor
from tests.helpers.runs import host

pytestmark = pytest.mark.docker


def test_auto_falls_back_to_venv_when_the_base_image_cannot_be_had(config, monkeypatch, base_image):
    # The pinned CUDA bases are not on this engine, and no registry answers in CI.
    monkeypatch.delenv("REPROKIT_BASE_IMAGE", raising=False)
    from reprokit.executors.docker import DockerExecutor

    probe = DockerExecutor(host=host(), with_torch=False)
    stack = config.stack("triton-3.5-cu130")
    problem = probe.base_problem(stack)
    probe.close()
    if problem is None:
        pytest.skip("this engine has (or can pull) the pinned CUDA base image")
    said = []
    ex = make_executor("auto", host(), stacks=[stack], report=said.append)
    assert ex.name == "venv"
    assert said == [f"executor: venv (a Docker daemon answers, but {problem})"]
    assert "nvidia/cuda:13.0.1-devel-ubuntu24.04@sha256:" in problem


def test_auto_picks_docker_when_the_base_is_local(config, monkeypatch, base_image):
    monkeypatch.setenv("REPROKIT_BASE_IMAGE", base_image)
    said = []
    ex = make_executor("auto", host(), stacks=[config.stack("triton-3.5-cu130")], report=said.append)
    assert ex.name == "docker" and said == ["executor: docker (a Docker daemon answers)"]
    ex.close()
