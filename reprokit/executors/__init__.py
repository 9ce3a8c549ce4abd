"""Where a stack runs: the Executor interface, and choosing one (`local`, `venv`, `docker`, `auto`).

An executor prepares a stack (image, venv, or nothing) and runs the in-stack harness on a
capture folder that already holds plan.json and kernels/:

    python -m reprokit.harness --plan PLAN --kernels KERNELS --out OUT --workers N

The harness writes env.json, results.json, summary.tsv, cases/ and logs/ under OUT.
"""

from __future__ import annotations

import platform
from importlib import metadata

from reprokit.config import Stack
from reprokit.errors import MissingDependency, UsageError
from reprokit.executors.base import (
    Executor,
    RunResult,
    harness_argv,
    harness_env,
    sass_cache,
)
from reprokit.executors.local import LocalExecutor
from reprokit.executors.venv import VenvExecutor
from reprokit.options import HostEnv, Report, quiet

__all__ = ["Executor", "RunResult", "harness_argv", "harness_env", "local_stack", "make_executor", "sass_cache"]


def make_executor(name: str, host: HostEnv, *, with_torch: bool = False, report: Report = quiet,
                  stacks: list | None = None) -> Executor:
    """The executor called `name`. `auto` is docker when a daemon answers and can build every
    stack in `stacks` (its base image is local or its registry answers), else venv; it says which."""
    # Compile-only runs never import torch, a multi-GB CUDA wheel: stacks get it on a GPU, unless
    # REPROKIT_WITH_TORCH (make ... WITH_TORCH=1|0) says otherwise, for every executor alike.
    if host.with_torch is not None:
        with_torch = host.with_torch
    if name == "auto":
        docker_module = _docker_executor(required=False)
        why = "docker-py is not installed (reprokit's 'docker' extra)"
        if docker_module is not None:
            DockerExecutor, docker_available = docker_module.DockerExecutor, docker_module.docker_available
            why = "no Docker daemon answers"
        if docker_module is not None and docker_available(host.docker_host):
            docker = DockerExecutor(host=host, with_torch=with_torch, report=report)
            problems = [p for p in (docker.base_problem(s) for s in stacks or []) if p]
            if not problems:
                report("executor: docker (a Docker daemon answers)")
                return docker
            docker.close()
            why = f"a Docker daemon answers, but {problems[0]}"
        report(f"executor: venv ({why})")
        name = "venv"
    if name == "local":
        return LocalExecutor(host=host)
    if name == "venv":
        return VenvExecutor(host=host, with_torch=with_torch, report=report)
    if name == "docker":
        return _docker_executor(required=True).DockerExecutor(host=host, with_torch=with_torch, report=report)
    raise UsageError(f"unknown executor {name!r}")


def _docker_executor(required: bool):
    """reprokit.executors.docker, which needs docker-py (the `docker` extra): when it is missing,
    None, or with `required` one line naming the extra."""
    try:
        # Optional dependency: docker-py comes with the `docker` extra, imported only here.
        from reprokit.executors import docker
    except ImportError as e:
        if e.name not in ("docker", "requests") and not (e.name or "").startswith("docker."):
            raise
        if not required:
            return None

        raise MissingDependency("docker-py", "runs stacks as images (--executor docker)", "docker") from None
    return docker


def local_stack() -> Stack:
    """This interpreter, described as a stack."""


    try:
        triton = metadata.version("triton")
    except metadata.PackageNotFoundError:
        raise UsageError("the local executor needs triton in this interpreter "
                         "(pip install triton, or reprokit's 'triton' extra), or use --executor venv") from None
    try:
        torch = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch = None
    return Stack(name="local", triton=triton, torch=torch, python=platform.python_version())
