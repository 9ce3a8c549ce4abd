"""GPU tier: runs where torch sees a CUDA device and triton imports (never in CI; results are
committed as example bundles and notes). Elsewhere it skips, except under REPROKIT_REQUIRE_GPU=1
(`make test-gpu` on a GPU host), where a missing GPU, torch or triton stops the run instead."""

from __future__ import annotations

import os

import pytest


def _gpu_problem() -> str | None:
    try:
        import torch
    except ImportError:
        return "torch is not importable by this Python"
    try:
        import triton  # noqa: F401
    except ImportError:
        return "triton is not importable by this Python"
    return None if torch.cuda.is_available() else "torch sees no CUDA device"


PROBLEM = _gpu_problem()
if PROBLEM and os.environ.get("REPROKIT_REQUIRE_GPU") == "1":
    pytest.exit(f"REPROKIT_REQUIRE_GPU=1 but {PROBLEM}: the GPU tier cannot run here", returncode=1)


def pytest_collection_modifyitems(config, items):
    if PROBLEM is None:
        return
    skip = pytest.mark.skip(reason=f"GPU tier: {PROBLEM}")
    for item in items:
        if "tests/gpu/" in str(item.fspath).replace("\\", "/"):
            item.add_marker(skip)
