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
    name: str = ""

    @abstractmethod
    def prepare(self, stack: Stack) -> dict:
        """Make the stack ready (idempotent, cached); return facts for the manifest."""

    @abstractmethod
    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool) -> RunResult:
        """Run the harness over capture_dir/plan.json and capture_dir/kernels, writing into capture_dir."""


def harness_argv(python: str, plan: str, kernels: str, out: str, workers: int) -> list[str]:
    return [python, "-m", "reprokit.harness", "--plan", plan, "--kernels", kernels, "--out", out,
            "--workers", str(workers)]
