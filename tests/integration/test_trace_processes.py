"""`reprokit trace` over every process of a program, under Triton's interpreter in the real venv
of tests/helpers/interp.py (triton 3.6.0, the CPU torch): a program that changes folder before
importing triton, a subprocess started in another folder, a forked child and a spawned worker
each give their kernels to the right case with their own tensors, nothing of reprokit's is left in
the program's folders, and no process of the program outlives a killed `reprokit trace`."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.errors import ExecutorError
from tests.conftest import skip_or_fail_triton
from tests.helpers.faults import wait_for
from tests.helpers.interp import interpreter_python
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
PROGRAMS = ROOT / "tests" / "data" / "trace"


@pytest.fixture(scope="module")
def interp_python() -> str:
    try:
        return str(interpreter_python(host()))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))


def _env() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return {**env, "PYTHONPATH": str(ROOT)}


def _trace(tmp_path: Path, python: str, *program: str) -> tuple[int, dict, Path]:
    """`reprokit trace --json --tensors small` run from tmp_path with the default, relative
    --out (bundles); (exit code, JSON, unpacked bundle)."""
    p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--json", "--tensors", "small", "--",
                        python, str(PROGRAMS / "processes.py"), *program], cwd=tmp_path, env=_env(),
                       capture_output=True, text=True, check=False, timeout=900)
    assert p.stdout.strip(), p.stderr[-3000:]
    doc = json.loads(p.stdout)
    with tarfile.open(tmp_path / doc["bundle"]) as tar:
        tar.extractall(tmp_path / "unpacked", filter="data")
    (root,) = (tmp_path / "unpacked").iterdir()
    return p.returncode, doc, root


def _cases(root: Path) -> dict:
    return {c["id"]: c for c in json.loads((root / "plan.json").read_text())["cases"]}


_SHOW_TENSORS = r"""
import json, sys, torch
print(json.dumps({f: {k: [str(v.dtype).split(".")[-1], list(v.shape)] for k, v in torch.load(f).items()}
                  for f in sys.argv[1:]}))
"""


def _tensors(python: str, root: Path, case: dict) -> list:
    """[(dtype, shape)] of the x_ptr kept before and after the case's launch, read by torch."""
    files = [str(root / "trace" / "tensors" / f"{case['trace']['n']:04d}.{w}.pt") for w in ("inputs", "outputs")]
    out = subprocess.run([python, "-c", _SHOW_TENSORS, *files], capture_output=True, text=True, check=True)
    return [tuple(map(str, json.loads(out.stdout)[f]["x_ptr"])) for f in files]


def _only_the_users(folder: Path, *mine: str) -> None:
    assert sorted(p.name for p in folder.iterdir()) == sorted(mine), "reprokit left files in the program's folder"


def test_a_program_that_changes_folder_before_importing_triton(tmp_path, interp_python):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "notes.txt").write_text("the user's\n")
    code, doc, root = _trace(tmp_path, interp_python, "chdir", str(elsewhere))
    assert code == 0, doc
    assert sorted(_cases(root)) == ["ka.1"]
    _only_the_users(elsewhere, "notes.txt")
    _only_the_users(tmp_path / "bundles", Path(doc["bundle"]).name)


def test_a_subprocess_started_in_another_folder(tmp_path, interp_python):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    code, doc, root = _trace(tmp_path, interp_python, "cwd", str(elsewhere))
    assert code == 0, doc
    cases = _cases(root)
    assert sorted(cases) == ["ka.1", "kb.1"]
    assert cases["kb.1"]["call"]["args"]["x_ptr"]["dtype"] == "float16" and cases["kb.1"]["trace"]["launches"] == 1
    assert _tensors(interp_python, root, cases["kb.1"]) == [("float16", "[48]")] * 2
    _only_the_users(elsewhere)


def test_a_forked_child_records_its_own_case(tmp_path, interp_python):
    """Parent ka, forked child kb, parent kc: each case its own call, tensors and launch count."""
    code, doc, root = _trace(tmp_path, interp_python, "fork")
    assert code == 0, doc
    cases = _cases(root)
    # the parent's cases first, in its launch order, then the child's
    assert list(cases) == ["ka.1", "kc.1", "kb.1"]
    want = {"ka.1": ("float32", "[64]"), "kb.1": ("float16", "[48]"), "kc.1": ("int32", "[80]")}
    for cid, (dtype, shape) in want.items():
        assert cases[cid]["call"]["args"]["x_ptr"]["dtype"] == dtype, cid
        assert cases[cid]["trace"]["launches"] == 1, cid
        assert _tensors(interp_python, root, cases[cid]) == [(dtype, shape)] * 2, cid
    assert all(r["status"] == "ok" for r in json.loads((root / "results.json").read_text())["cases"])


def test_a_pool_of_forked_workers_gives_each_kernel_its_case(tmp_path, interp_python):
    """A fork pool (as a DataLoader's), ended by terminate(): whichever worker ran which task,
    the cases and their order are the same (the program's first, then the workers' by what they
    recorded), each with its own tensors."""
    code, doc, root = _trace(tmp_path, interp_python, "pool")
    assert code == 0, doc
    cases = _cases(root)
    assert list(cases) == ["ka.1", "kc.1", "kb.1", "kd.1"]
    for cid, want in (("kb.1", ("float16", "[48]")), ("kd.1", ("float64", "[16]")), ("kc.1", ("int32", "[80]"))):
        assert _tensors(interp_python, root, cases[cid]) == [want] * 2, cid


def test_a_spawned_worker_is_traced(tmp_path, interp_python):
    code, doc, root = _trace(tmp_path, interp_python, "spawn")
    assert code == 0, doc
    cases = _cases(root)
    assert list(cases) == ["ka.1", "kd.1"]
    assert cases["kd.1"]["trace"]["launches"] == 1
    assert _tensors(interp_python, root, cases["kd.1"]) == [("float64", "[16]")] * 2


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM])
def test_the_program_and_its_children_die_with_trace(signum, tmp_path, interp_python):
    """A real `reprokit trace` killed while its program (and the program's own child) runs: no
    process of the program is left, by the pids the program wrote."""
    pids = tmp_path / "pids"
    trace = subprocess.Popen([sys.executable, "-m", "reprokit", "trace", "--out", str(tmp_path / "bundles"), "--",
                              interp_python, str(PROGRAMS / "lingers.py"), str(pids)],
                             cwd=tmp_path, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             start_new_session=True)
    try:
        assert wait_for(pids.exists, timeout=300), "the program never started"
        program, child = map(int, pids.read_text().split())
        assert _alive(program) and _alive(child)
        trace.send_signal(signum)
        trace.wait(timeout=60)
        assert wait_for(lambda: not _alive(program) and not _alive(child), timeout=10), \
            f"outlived trace: {[p for p in (program, child) if _alive(p)]}"
        if signum == signal.SIGTERM:
            assert trace.returncode == 128 + signum
            assert list((tmp_path / "bundles").iterdir()) == []  # nothing half-written
    finally:
        if trace.poll() is None:
            trace.kill()
        for pid in map(int, pids.read_text().split()) if pids.exists() else ():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
