"""What a stack container may not do: reach the network, outlive its timeout, exceed its memory, leave root-owned files."""

from __future__ import annotations

import json
import os
import shutil
import time

import docker.errors
import pytest
from docker.types import Mount

from reprokit.errors import ExecutorError, HarnessError
from reprokit.run.capture import capture
from reprokit.suite import build_plan, kernels_dir
from tests.helpers.runs import host, planned

pytestmark = pytest.mark.docker

STACK = "triton-3.5-cu130"
CONNECT_OUT = """
import socket
for host, port in (("1.1.1.1", 53), ("pypi.org", 443)):
    try:
        socket.create_connection((host, port), timeout=5).close()
        print("CONNECTED", host)
    except OSError as e:
        print("NO-NETWORK", host, type(e).__name__, e)
"""


def test_container_has_no_network(stack_images, docker_executor, config):
    r = docker_executor.run_command(config.stack(STACK), ["python", "-c", CONNECT_OUT], timeout_s=60)
    assert r.returncode == 0, r.log_tail
    assert "CONNECTED" not in r.log_tail
    assert "NO-NETWORK 1.1.1.1" in r.log_tail and "NO-NETWORK pypi.org" in r.log_tail
    assert r.runtime["network_mode"] == "none"


def test_case_that_connects_out_fails(stack_images, docker_executor, config, tmp_path):
    """A kernel module that opens a socket at import: its case fails in the container."""
    plan = build_plan(config.gpu("h100"), {"name": STACK, **config.stack(STACK).pins()}, only="block_ptr.p0").to_json()
    (case,) = plan["cases"]
    kernels = tmp_path / "kernels"
    shutil.copytree(kernels_dir(), kernels)
    src = kernels / case["kernel"]["file"]
    src.write_text("import socket\nsocket.create_connection(('1.1.1.1', 53), timeout=5).close()\n"
                   + src.read_text())
    cap = capture(config.stack(STACK), docker_executor, tmp_path / "out",
                  *planned(config.gpu("h100"), plan=plan, kernels=kernels))
    (result,) = cap.results.to_json()["cases"]
    assert result["status"] != "ok"
    assert "unreachable" in json.dumps(result).lower()


def test_container_past_its_timeout_is_killed(stack_images, docker_executor, config):
    started = time.monotonic()
    r = docker_executor.run_command(config.stack(STACK), ["sleep", "120"], timeout_s=2)
    assert time.monotonic() - started < 30
    assert r.timed_out and not r.ok
    assert r.runtime["timed_out"] is True and r.runtime["exit_code"] == 137
    assert docker_executor.containers() == []
    # containers() counts this executor's own (the engine is shared): this one is among them, and gone.
    with pytest.raises(docker.errors.NotFound):
        docker_executor.client.containers.get(r.runtime["container_id"])


def test_harness_timeout_is_recorded(stack_images, docker_executor, config, tmp_path):
    with pytest.raises(HarnessError, match="timed out under docker"):
        capture(config.stack(STACK), docker_executor, tmp_path / "out", *planned(config.gpu("h100"), run_timeout_s=1))
    assert (tmp_path / "out.failed" / "plan.json").is_file()
    assert not (tmp_path / "out").exists()
    assert docker_executor.containers() == []


def test_out_of_memory_kill_is_one_clear_error(stack_images, base_image, config):
    from reprokit.executors.docker import DockerExecutor

    ex = DockerExecutor(host=host(), base_image=base_image, with_torch=False, mem_limit="64m")
    with pytest.raises(ExecutorError) as err:
        ex.run_command(config.stack(STACK), ["python", "-c", "b = bytearray(1 << 30)"], timeout_s=60)
    assert "killed for memory (limit 64m)" in str(err.value)
    assert "\n" not in str(err.value)
    assert ex.containers() == []
    ex.close()


def test_files_belong_to_the_run_user(stack_images, base_image, config, tmp_path):
    """Run as another uid: files come out owned by it (root's would block a non-root host user)."""
    from reprokit.executors.docker import DockerExecutor

    out = tmp_path / "o"
    out.mkdir()
    os.chmod(out, 0o777)
    ex = DockerExecutor(host=host(), base_image=base_image, with_torch=False, user="4321:4321")
    r = ex.run_command(config.stack(STACK),
                       ["python", "-c", "import getpass, pathlib; pathlib.Path('/out/f').write_text(getpass.getuser())"],
                       timeout_s=60, mounts=[Mount("/out", str(out), type="bind")])
    assert r.ok, r.log_tail
    st = (out / "f").stat()
    assert (st.st_uid, st.st_gid) == (4321, 4321)
    ex.close()


def test_gpu_request_without_nvidia_runtime_is_one_clear_error(stack_images, docker_executor, config):
    try:
        docker_executor.run_command(config.stack(STACK), ["true"], timeout_s=30, gpu=True)
    except ExecutorError as e:
        assert str(e) == (f"{STACK}: GPU requested but the Docker engine has no NVIDIA device driver "
                          "(install nvidia-container-toolkit, restart dockerd)")
    else:
        pytest.skip("this engine serves GPU device requests")
    assert docker_executor.containers() == []
