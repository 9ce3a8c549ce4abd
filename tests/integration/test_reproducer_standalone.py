"""A case's standalone reproducer, as the capture carries it, run in a bare pinned-Triton venv (no
reprokit importable, a clean environment, outside the checkout): it reproduces the verdict."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import by_id

pytestmark = pytest.mark.triton
EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples"

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
    assert doc["verdict"] == recorded["verdict"] and doc["triton"] == cap.results.triton
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


@pytest.mark.parametrize("cid,old,new,verdict", [
    # The record says no-tma; the same compile still finds TMA.
    ("tensor_descriptor.p0", "'verdict': 'tma'", "'verdict': 'no-tma'", "tma"),
    # The case expects other words from this release's pass: a rejection, but not the expected one.
    ("host_descriptor.p1", "'message': 'TMA copies must have between 1 and 5 coordinates'",
     "'message': 'some other refusal'", "error"),
])
def test_a_reproducer_that_finds_another_verdict_says_so_and_exits_1(captured, stack_ready, venv_executor,
                                                                      tmp_path, cid, old, new, verdict):
    cap = captured("triton-3.6-cu130", "h100", None)
    path = cap.out_dir / by_id(cap)[cid]["artifacts"]["reproducer_py"]
    edited = tmp_path / "cap"
    (edited / path.parent.relative_to(cap.out_dir)).mkdir(parents=True)
    text = path.read_text()
    assert text.count(old) == 1
    (edited / path.relative_to(cap.out_dir)).write_text(text.replace(old, new))

    class Edited:
        out_dir = edited
        results = {"cases": [{**by_id(cap)[cid]}]}

    rc, doc = _run_bare(venv_executor, stack_ready("triton-3.6-cu130"), Edited, cid, tmp_path)
    assert rc == 1 and doc["reproduced"] is False and doc["verdict"] == verdict


def test_the_example_bundles_carry_one_per_case_and_the_newest_reproduces(stack_ready, venv_executor, tmp_path):
    from reprokit.bundle.reader import open_bundle

    examples = sorted(EXAMPLES.glob("triton-*.tgz"))  # the compile-only ones this checkout makes
    assert len(examples) >= 4
    for path in examples:
        b = open_bundle(path)
        for c in b.results["cases"]:
            assert b.read_text(c["artifacts"]["reproducer_py"]).startswith('"""Standalone reproducer of ' + c["id"])
    b = open_bundle(EXAMPLES / "triton-3.9-cu132-h100.tgz")
    script = tmp_path / "reproducer.py"
    script.write_text(b.read_text("cases/host_descriptor.p0/reproducer.py"))
    python = str(venv_executor.venv_dir(stack_ready("triton-3.9-cu132")) / "bin" / "python")
    p = subprocess.run([python, str(script)], cwd=tmp_path, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr[-2000:]
    assert "triton 3.9.0, compile-only for h100" in p.stdout and "UTMALDG=1" in p.stdout
    assert p.stdout.rstrip().endswith("recorded verdict: tma -> reproduced")


def test_a_capture_with_reproducers_packs_to_the_same_bytes_twice(captured, tmp_path):
    import hashlib
    import sys

    cap = captured("triton-3.6-cu130", "h100", None)
    digests = []
    for seed, out in enumerate(("a", "b")):  # two hash seeds: set order must never reach the bytes
        p = subprocess.run([sys.executable, "-m", "reprokit", "bundle", str(cap.out_dir), "--out", str(tmp_path / out),
                            "--share", "--executor", "venv"], capture_output=True, text=True, timeout=600,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)})
        assert p.returncode == 0, p.stderr
        (path,) = (tmp_path / out).glob("*.tgz")
        digests.append(hashlib.sha256(path.read_bytes()).hexdigest())
    assert digests[0] == digests[1]
    from reprokit.bundle.reader import open_bundle

    b = open_bundle(path)
    roles = {f["path"]: f["role"] for f in b.manifest["files"]}
    scripts = [rel for rel in roles if rel.endswith("/reproducer.py")]
    assert len(scripts) == sum(1 for c in b.results["cases"] if "reproducer_py" in c["artifacts"]) >= 20
    assert {roles[rel] for rel in scripts} == {"reproducer"}
