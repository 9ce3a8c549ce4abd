"""A case's standalone reproducer, as the capture carries it, run in a bare pinned-Triton venv (no
reprokit importable, a clean environment, outside the checkout): it reproduces the verdict."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests.conftest import by_id

pytestmark = pytest.mark.triton

LEAN_3_9 = "block_ptr.p0,block_ptr.p1,experimental_descriptor.p0,tensor_descriptor.p0,tensor_descriptor.p1,host_descriptor.p*"


def _run_bare(venv_executor, stack, cap, cid, tmp_path):
    """Copy the script out of the capture and run it with only the stack's venv."""
    script = tmp_path / f"{cid}.py"
    shutil.copyfile(cap.out_dir / by_id(cap)[cid]["artifacts"]["reproducer_py"], script)
    python = str(venv_executor.venv_dir(stack) / "bin" / "python")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    probe = subprocess.run([python, "-c", "import reprokit"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert probe.returncode != 0 and "No module named 'reprokit'" in probe.stderr
    p = subprocess.run([python, str(script), "--json"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode in (0, 1), p.stderr[-2000:]
    return p.returncode, json.loads(p.stdout)


@pytest.mark.parametrize("stack,cases,cid", [
    ("triton-3.6-cu130", None, "host_descriptor.p0"),         # a P0 with TMA
    ("triton-3.6-cu130", None, "tensor_descriptor.p1"),       # a P1 the front end rejects
    ("triton-3.6-cu130", None, "host_descriptor.p1"),         # a P1 an MLIR pass rejects
    ("triton-3.0-cu129", None, "experimental_descriptor.p1"),  # a P1 that aborts 3.0's compiler
    ("triton-3.9-cu132", LEAN_3_9, "block_ptr.p0"),           # an API 3.9 dropped
])
def test_the_reproducer_reproduces_the_verdict_with_only_triton(captured, stack_ready, venv_executor,
                                                                 stack, cases, cid, tmp_path):
    cap = captured(stack, "h100", cases)
    recorded = by_id(cap)[cid]
    rc, doc = _run_bare(venv_executor, stack_ready(stack), cap, cid, tmp_path)
    assert rc == 0 and doc["reproduced"] is True
    assert doc["verdict"] == recorded["verdict"] and doc["triton"] == cap.results["triton"]
    step = doc["steps"][-1]
    assert step["status"] == recorded["status"]
    if recorded["status"] == "ok":
        # The inlined oracle finds what the harness found, at every level.
        assert step["tma"] == recorded["tma"] and step["tma_ops"] == recorded["tma_ops"]
        assert step["tma"]["sass"] >= 2
    elif recorded["status"] == "crash":
        assert "SIGABRT" in step["error"] and "UNREACHABLE" in step["error"]
    else:  # refused or dropped: in the compiler's own words, the same as the harness recorded
        assert step["error"] == recorded["error"]


def test_a_reproducer_that_finds_another_verdict_says_so_and_exits_1(captured, stack_ready, venv_executor, tmp_path):
    # The 3.6 script of a case 3.6 compiles, with the recorded verdict changed: the compile is
    # the same, so the script must report the difference rather than echo the record.
    cap = captured("triton-3.6-cu130", "h100", None)
    path = cap.out_dir / by_id(cap)["tensor_descriptor.p0"]["artifacts"]["reproducer_py"]
    edited = tmp_path / "cap"
    (edited / path.parent.relative_to(cap.out_dir)).mkdir(parents=True)
    text = path.read_text()
    assert text.count("'verdict': 'tma'") == 1
    (edited / path.relative_to(cap.out_dir)).write_text(text.replace("'verdict': 'tma'", "'verdict': 'no-tma'"))

    class Edited:
        out_dir = edited
        results = {"cases": [{**by_id(cap)["tensor_descriptor.p0"]}]}

    rc, doc = _run_bare(venv_executor, stack_ready("triton-3.6-cu130"), Edited, "tensor_descriptor.p0", tmp_path)
    assert rc == 1 and doc["reproduced"] is False and doc["verdict"] == "tma"
