"""The harness runs on the oldest Python it promises (3.9), beside the oldest Triton (3.0.0)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from reprokit.errors import ExecutorError
from reprokit.executors.venv import VenvExecutor
from reprokit.run.capture import capture
from tests.conftest import by_id, skip_or_fail_triton
from tests.helpers.runs import host, planned

pytestmark = pytest.mark.triton


def _python39() -> str:
    """A Python 3.9 interpreter: on PATH, or one of pyenv's (whose shims answer only when selected)."""
    import glob
    import os

    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    for exe in [shutil.which("python3.9"), *sorted(glob.glob(f"{root}/versions/3.9*/bin/python3.9"))]:
        if not exe:
            continue
        p = subprocess.run([exe, "-c", "import sys; print(sys.executable)"], capture_output=True, text=True)
        if p.returncode == 0:
            return p.stdout.strip()
    skip_or_fail_triton("no Python 3.9 on this machine (the harness promises to run on it)")


def test_harness_on_python_3_9_with_triton_3_0(tmp_path, config):
    stack = config.stack("triton-3.0-cu129")
    ex = VenvExecutor(python=_python39(), host=host())
    try:
        ex.prepare(stack)
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    cap = capture(stack, ex, tmp_path / "cap", *planned(config.gpu("h100"), workers=2,
                                                    only="block_ptr.p0,experimental_descriptor.p*"))
    cases = by_id(cap)
    assert cases["block_ptr.p0"]["verdict"] == "no-tma"
    assert cases["experimental_descriptor.p0"]["verdict"] == "tma"
    assert cases["experimental_descriptor.p1"]["signal"] == "SIGABRT"
    import json

    env = json.loads((tmp_path / "cap" / "env.json").read_text())
    assert env["python"]["version"].startswith("3.9.")
