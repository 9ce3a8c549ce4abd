"""Options for tests that run captures: the environment read here, as `cli.main` reads it, and
the plan a capture runs with how it runs it."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from reprokit.config import GpuProfile
from reprokit.options import GpuOptions, HostEnv, RunOptions
from reprokit.plan import Plan
from reprokit.suite import build_plan


def host() -> HostEnv:
    """This test process's environment, read now (after any monkeypatching)."""
    return HostEnv.from_environ(os.environ)


def planned(profile: GpuProfile, mode: str = "compile-only", *, plan: Plan | Mapping | None = None,
            kernels: Path | None = None, only: str | None = None, **run) -> tuple[Plan, RunOptions]:
    """(plan, RunOptions) for capture() and run_stacks(): `plan` (a Plan, or a plan.json document)
    for `profile` and `mode`, else the control suite's cases matching `only`; `kernels` where the
    plan's sources are; `run`: workers, run_timeout_s, force."""
    gpu = GpuOptions(profile, mode)
    if plan is None:
        the_plan = build_plan(gpu, only=only)
    elif isinstance(plan, Plan):
        the_plan = plan.with_gpu(gpu)
    else:
        the_plan = Plan.from_json(plan).with_gpu(gpu)
    if kernels is not None:
        the_plan = the_plan.with_files(kernels=kernels)
    return the_plan, RunOptions(**run)
