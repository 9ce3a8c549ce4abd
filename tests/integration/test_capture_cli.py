"""The capture verb's edges: the local executor, bad input, and a harness that dies."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reprokit.errors import HarnessError
from reprokit.executors import RunResult
from reprokit.executors.local import LocalExecutor
from reprokit.run.capture import capture
from reprokit.suite import build_plan
from tests.conftest import by_id
from tests.helpers.runs import host, planned


def reprokit(*args, cwd):
    return subprocess.run([sys.executable, "-m", "reprokit", *args], capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("args,message", [
    (["--gpu", "a100"], "unknown GPU profile 'a100'"),
    (["--gpu", "h100", "--workers", "0"], "--workers: must be at least 1"),
    (["--gpu", "h100", "--executor", "venv"], "--stack is required with --executor venv"),
    (["--gpu", "h100", "--executor", "venv", "--stack", "nope"], "unknown stack 'nope'"),
    (["--gpu", "h100", "--cases", "zzz*", "--executor", "venv", "--stack", "triton-3.6-cu130"],
     "matches no case"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, repo_root, args, message):
    out = tmp_path / "cap"
    p = reprokit("capture", "--out", str(out), *args, cwd=repo_root)
    assert p.returncode == 2, p.stderr
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("reprokit:")]
    assert len(lines) == 1 and message in lines[0], p.stderr
    assert not out.exists()


def test_local_executor_without_triton_says_what_to_do(tmp_path, repo_root):
    pytest.importorskip("reprokit")
    try:
        import triton  # noqa: F401
        pytest.skip("this interpreter has triton")
    except ImportError:
        pass
    p = reprokit("capture", "--gpu", "h100", "--out", str(tmp_path / "c"), "--executor", "local", cwd=repo_root)
    assert p.returncode == 2 and "needs triton in this interpreter" in p.stderr


@pytest.mark.triton
def test_local_executor_runs_the_harness_under_the_given_interpreter(tmp_path, config, venv_executor, stack_ready):
    stack = stack_ready("triton-3.5-cu130")
    python = venv_executor.prepare(stack)["python"]
    plan = build_plan(config.gpu("h200"), {"name": "local", "triton": "3.5.0"}, only="tensor_descriptor.p*").to_json()
    cap = capture(stack, LocalExecutor(python=python, host=host()), tmp_path / "cap", *planned(config.gpu("h200"), workers=2, plan=plan))
    cases = by_id(cap)
    assert cases["tensor_descriptor.p0"]["verdict"] == "tma"
    assert cases["tensor_descriptor.p1"]["verdict"] == "rejected"
    assert cap.executor_facts()["python"] == python
    assert json.loads((tmp_path / "cap" / "plan.json").read_text())["profile"]["key"] == "h200"


class _DyingExecutor(LocalExecutor):
    """A harness that dies as a whole (killed, out of memory): a real process that exits 137."""

    def run_harness(self, stack, capture_dir, *, workers, timeout_s, gpu, scratch=None, turns=None):
        p = subprocess.run([sys.executable, "-c", "import sys; print('killed', file=sys.stderr); sys.exit(137)"],
                           capture_output=True, text=True)
        return RunResult("local", p.returncode, False, p.stderr)


def test_a_dead_harness_leaves_a_failed_folder_not_a_capture(tmp_path, config):
    from reprokit.config import Stack

    out = tmp_path / "cap"
    with pytest.raises(HarnessError, match="harness exited 137 under local: killed") as e:
        capture(Stack("local", "3.6.0"), _DyingExecutor(host=host()), out, *planned(config.gpu("h100"), only="block_ptr.p0"))
    assert not out.exists()
    failed = tmp_path / "cap.failed"
    assert (failed / "plan.json").is_file() and str(failed) in str(e.value)


class _WrongTritonExecutor(_DyingExecutor):
    """A harness that completes, but with another Triton than the stack pins (a stale image or venv)."""

    def run_harness(self, stack, capture_dir, *, workers, timeout_s, gpu, scratch=None, turns=None):
        (capture_dir / "results.json").write_text(json.dumps({"triton": "3.6.0", "cases": []}))
        (capture_dir / "env.json").write_text("{}")
        return RunResult("local", 0, False, "")


def test_a_stack_that_ran_another_triton_is_refused_not_mislabelled(tmp_path, config):
    out = tmp_path / "cap"
    with pytest.raises(HarnessError, match="pins triton 3.0.0, but the harness under local ran triton 3.6.0"):
        capture(config.stack("triton-3.0-cu129"), _WrongTritonExecutor(host=host()), out,
                *planned(config.gpu("h100"), only="block_ptr.p0"))
    assert not out.exists() and (tmp_path / "cap.failed").is_dir()


def test_run_with_the_local_executor_refuses_named_stacks(tmp_path, repo_root):
    p = reprokit("run", "--gpu", "h100", "--executor", "local", "--stacks", "triton-3.0-cu129", "--out",
                 str(tmp_path), cwd=repo_root)
    assert p.returncode == 2 and "--stacks needs venv or docker" in p.stderr


class _UnpreparableExecutor(LocalExecutor):
    def prepare(self, stack):
        from reprokit.errors import ExecutorError

        raise ExecutorError("docker: building x failed at step 3/7")


def test_a_stack_that_cannot_be_prepared_leaves_nothing(tmp_path, config):
    from reprokit.errors import ExecutorError

    out = tmp_path / "cap"
    with pytest.raises(ExecutorError, match="step 3/7"):
        capture(config.stack("triton-3.5-cu130"), _UnpreparableExecutor(host=host()), out,
                *planned(config.gpu("h100"), only="block_ptr.p0"))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.triton
def test_prepare_builds_or_reuses_venvs_and_reports_each_stack(repo_root, stack_ready):
    stack_ready("triton-3.5-cu130")
    p = reprokit("prepare", "--stacks", "triton-3.5-cu130", "--executor", "venv", "--json", cwd=repo_root)
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout)["stacks"]["triton-3.5-cu130"]
    assert facts["ok"] is True and facts["reused"] is True and facts["venv"].endswith(tuple("0123456789abcdef"))
    bad = reprokit("prepare", "--stacks", "triton-9.9", "--executor", "venv", cwd=repo_root)
    assert bad.returncode == 2 and "unknown stack 'triton-9.9'" in bad.stderr


@pytest.mark.triton
def test_a_knob_the_stack_never_reads_is_a_warning(tmp_path, repo_root, stack_ready):
    import os

    stack_ready("triton-3.0-cu129")
    env = {**os.environ, "TRITON_TMA_ENABLE": "1"}
    p = subprocess.run([sys.executable, "-m", "reprokit", "capture", "--gpu", "h100", "--out", str(tmp_path / "c"),
                        "--executor", "venv", "--stack", "triton-3.0-cu129", "--cases", "block_ptr.p0", "--json"],
                       capture_output=True, text=True, cwd=repo_root, env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["warnings"] == [
        "TRITON_TMA_ENABLE is set, but triton 3.0.0 reads TRITON_TMA_ENABLE nowhere (Python sources and libtriton)"]
    assert "warning: TRITON_TMA_ENABLE is set" in p.stderr


def test_a_run_keeps_a_failed_stacks_logs_where_its_message_says(tmp_path, config):
    from reprokit.config import Stack
    from reprokit.options import BundleOptions
    from reprokit.run.stacks import run_stacks

    out = tmp_path / "bundles"
    (outcome,) = run_stacks([Stack("local", "3.6.0")], _DyingExecutor(host=host()), *planned(config.gpu("h100"), only="block_ptr.p0"),
                            BundleOptions(out))
    failed = out / "local-h100.failed"
    assert not outcome.ok and f"(logs in {failed})" in outcome.error
    assert (failed / "plan.json").is_file() and (failed / "logs").is_dir()
    assert sorted(p.name for p in out.iterdir()) == ["local-h100.failed"]  # no half capture, no bundle
