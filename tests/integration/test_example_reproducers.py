"""The committed 3.0 example's crash reproducer (experimental_descriptor.p1), remade by today's
templates (make examples), answers honestly on later releases: "rejected" on Triton 3.3.1, whose
compiler refuses the broken descriptor, and "unsupported" on 3.5.1, which no longer has the 3.0
experimental descriptor API. Never "crashed -> reproduced" from its own ImportError."""

from __future__ import annotations

import subprocess
import tarfile
from pathlib import Path

import pytest

from reprokit.config import Stack, load_config
from reprokit.errors import ExecutorError
from tests.conftest import skip_or_fail_triton
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

EXAMPLE = Path(__file__).resolve().parents[2] / "bundles" / "examples" / "triton-3.0-cu129-h100.tgz"
CASE = "experimental_descriptor.p1"


def _python(stack: Stack) -> Path:
    from reprokit.executors.venv import VenvExecutor

    venv = VenvExecutor(host=host())
    try:
        venv.prepare(stack)
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    return venv.venv_dir(stack) / "bin" / "python"


@pytest.fixture(scope="module")
def reproducer(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("example")
    with tarfile.open(EXAMPLE) as t:
        t.extractall(out, filter="data")
    (found,) = out.glob(f"*/cases/{CASE}/reproducer.py")
    return found


@pytest.mark.parametrize("stack, answer", [
    (load_config().stack("triton-3.3-cu129"), "verdict: rejected"),
    (Stack(name="example-reproducer-3.5.1", triton="3.5.1"), "unsupported"),
])
def test_the_3_0_crash_reproducer_answers_honestly_on_later_releases(reproducer, stack, answer):
    r = subprocess.run([str(_python(stack)), reproducer.name], cwd=reproducer.parent, capture_output=True,
                       text=True, timeout=600)
    out = r.stdout + r.stderr
    assert answer in out, out
    assert "-> reproduced" not in out and "Traceback" not in out, out
    assert r.returncode in (0, 1), out  # a verdict, recorded or not; 2 would be the script's own fault
