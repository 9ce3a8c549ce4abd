"""Options for tests that run captures: the environment read here, as `cli.main` reads it."""

from __future__ import annotations

import os

from reprokit.config import GpuProfile
from reprokit.options import GpuOptions, HostEnv, RunOptions


def host() -> HostEnv:
    """This test process's environment, read now (after any monkeypatching)."""
    return HostEnv.from_environ(os.environ)


def opts(profile: GpuProfile, mode: str = "compile-only", **kw) -> RunOptions:
    """RunOptions for `profile`: workers, only, plan, ... as keywords."""
    return RunOptions(GpuOptions(profile, mode), **kw)
