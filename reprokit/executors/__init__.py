"""Where a stack runs: the Executor interface, and choosing one (`local`, `venv`, `docker`, `auto`).

An executor prepares a stack (image, venv, or nothing) and runs the in-stack harness on a
capture folder that already holds plan.json and kernels/:

    python -m reprokit.harness --plan PLAN --kernels KERNELS --out OUT --workers N

The harness writes env.json, results.json, summary.tsv, cases/ and logs/ under OUT.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.config import Stack
from reprokit.options import HostEnv, Report, quiet


@dataclass(frozen=True)
class RunResult:
    """How one harness run ended, plus the runtime facts the manifest records."""

    executor: str
    returncode: int
    timed_out: bool
    log_tail: str
    runtime: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class Executor(ABC):
    """A place stacks run. A context manager: the verbs close it (engine connections) when done.

    host: the settings read from the environment at the edge (cache, SASS cache, ...);
    report: where one-line progress goes (image builds, venv builds), never print.
    """

    name: str = ""
    host: HostEnv = HostEnv()
    report: Report = staticmethod(quiet)

    @abstractmethod
    def prepare(self, stack: Stack) -> dict:
        """Make the stack ready (idempotent, cached); return facts for the manifest."""

    @abstractmethod
    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None) -> RunResult:
        """Run the harness over capture_dir/plan.json and capture_dir/kernels, writing into capture_dir;
        a harness that runs on this host takes `scratch` (the run's own folder) as its TMPDIR."""

    def temp_root(self, scratch: Path | None = None) -> str:
        """The temp folder of a harness run given `scratch` (as run_harness takes it), named as
        the harness will name it: where its case scratch and the compilers' temporary files go.
        A host-side harness takes `scratch` as its TMPDIR, else the host's."""
        import os

        return os.path.abspath(str(scratch if scratch is not None else self.host.tmp))

    def harness_home(self) -> str | None:
        """The HOME a harness run has (Triton keeps its cache dirs there): a host-side harness
        gets the host's environment; None where the executor does not know it."""
        return self.host.child_environ().get("HOME")

    def close(self) -> None:
        """Give back what the executor holds (nothing, unless it talks to an engine)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def sass_cache(host: HostEnv) -> Path | None:
    """The folder the harness keeps disassembled SASS in (keyed by tool and cubin bytes), or None
    when it is off; a folder that cannot be made only means every cubin is disassembled again."""
    if host.sass_cache is None:
        return None
    try:
        host.sass_cache.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return host.sass_cache


def harness_env(host: HostEnv, extra: dict | None = None) -> dict:
    """The environment a host-side harness run gets: the host's, with reprokit importable first
    and the SASS cache named (or unset when it is off)."""
    import os

    # The child gets the environment as the user set it (read once, at the edge): that is what runs.
    env = host.child_environ()
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    cache = sass_cache(host)
    if cache is None:
        env.pop("REPROKIT_SASS_CACHE", None)
    else:
        env["REPROKIT_SASS_CACHE"] = str(cache)
    env.update(extra or {})
    return env


def harness_argv(python: str, plan: str, kernels: str, out: str, workers: int) -> list[str]:
    return [python, "-m", "reprokit.harness", "--plan", plan, "--kernels", kernels, "--out", out,
            "--workers", str(workers)]


def make_executor(name: str, host: HostEnv, *, with_torch: bool = False, report: Report = quiet,
                  stacks: list | None = None) -> Executor:
    """The executor called `name`. `auto` is docker when a daemon answers and can build every
    stack in `stacks` (its base image is local or its registry answers), else venv; it says which."""
    from reprokit.errors import UsageError

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
        from reprokit.executors.local import LocalExecutor

        return LocalExecutor(host=host)
    if name == "venv":
        from reprokit.executors.venv import VenvExecutor

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
        from reprokit.errors import MissingDependency

        raise MissingDependency("docker-py", "runs stacks as images (--executor docker)", "docker") from None
    return docker


def local_stack() -> Stack:
    """This interpreter, described as a stack."""
    import platform
    from importlib import metadata

    from reprokit.errors import UsageError

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
