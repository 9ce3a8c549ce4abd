"""The Executor interface every place a stack runs implements, and what they share: the
harness's command line and environment on this host, the SASS cache folder.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.config import Stack
from reprokit.options import HostEnv, Report, Seat, quiet


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
    host: HostEnv  # each executor is handed one: no executor reads the environment itself
    report: Report = staticmethod(quiet)

    @abstractmethod
    def prepare(self, stack: Stack) -> dict:
        """Make the stack ready (idempotent, cached); return facts for the manifest."""

    @abstractmethod
    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None, turns: Seat | None = None) -> RunResult:
        """Run the harness over capture_dir/plan.json and capture_dir/kernels, writing into capture_dir;
        a harness that runs on this host takes `scratch` (the run's own folder) as its TMPDIR;
        `turns`: its seat among other stacks' harnesses sharing the GPU (the folder reachable
        from where it runs)."""

    def temp_root(self, scratch: Path | None = None) -> str:
        """The temp folder of a harness run given `scratch` (as run_harness takes it), named as
        the harness will name it: where its case scratch and the compilers' temporary files go.
        A host-side harness takes `scratch` as its TMPDIR, else the host's."""

        return os.path.abspath(str(scratch if scratch is not None else self.host.tmp))

    def harness_home(self) -> str | None:
        """The HOME a harness run has (Triton keeps its cache dirs there): a host-side harness
        gets the host's environment; None where the executor does not know it."""
        return self.host.child_environ().get("HOME")

    def keep_warm(self, capability: int | None) -> None:  # noqa: B027 - a default: an executor that cannot, doesn't
        """Runs come one after another (a reduction's batches): start each run's successor harness
        as the run begins, loading for a GPU of this capability (the local and venv executors);
        None stops it."""

    def close(self) -> None:  # noqa: B027 - a default for executors that hold nothing, not an abstract step
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
    """The environment a host-side harness run gets: the host's, with reprokit importable first,
    the SASS cache named (or unset when it is off), and never Triton's interpreter."""

    # The child gets the environment as the user set it (read once, at the edge): that is what runs.
    env = host.child_environ()
    # All but one variable: the harness compiles ahead of time, and under Triton's interpreter (a
    # user's TRITON_INTERPRET=1, set for their program) every @jit helper (tl.sum, tl.sigmoid)
    # would be an InterpretedFunction the compiler refuses: a false compile_error for each case.
    env.pop("TRITON_INTERPRET", None)
    pkg_parent = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (pkg_parent, env.get("PYTHONPATH")) if p)
    cache = sass_cache(host)
    if cache is None:
        env.pop("REPROKIT_SASS_CACHE", None)
    else:
        env["REPROKIT_SASS_CACHE"] = str(cache)
    env.update(extra or {})
    return env


def harness_args(plan: str, kernels: str, out: str, workers: int) -> list[str]:
    """The harness's arguments for one run (on its command line, or told to a prestarted one)."""
    return ["--plan", plan, "--kernels", kernels, "--out", out, "--workers", str(workers)]


def harness_argv(python: str, plan: str, kernels: str, out: str, workers: int) -> list[str]:
    return [python, "-m", "reprokit.harness", *harness_args(plan, kernels, out, workers)]


def prestart_argv(python: str, capability: int) -> list[str]:
    """A harness started before its run is known: it loads what every run loads for a GPU of this
    capability, then reads the run's arguments on stdin (reprokit.harness.__main__)."""
    return [python, "-m", "reprokit.harness", "--prestart", str(capability)]
