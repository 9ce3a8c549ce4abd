"""Engine faults become one clear line: a daemon that does not answer, a Dockerfile that does not build."""

from __future__ import annotations

import shutil

import pytest

from reprokit.config import Stack
from reprokit.errors import ExecutorError
from reprokit.run.capture import capture
from tests.helpers.runs import host, planned

BROKEN = """ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG TRITON_VERSION
RUN echo "installing triton ${TRITON_VERSION}" && echo "no such package: triton-broken" >&2 && exit 3
"""


def test_daemon_down_is_one_clear_error(config, tmp_path):
    """No engine at the socket (a bogus DOCKER_HOST; stopping the shared daemon would hurt others)."""
    from reprokit.executors.docker import DockerExecutor, docker_available

    bogus = f"unix://{tmp_path}/docker.sock"
    assert docker_available(bogus) is False
    ex = DockerExecutor(host=host(), base_url=bogus, base_image="reprokit-base:bookworm", with_torch=False)
    with pytest.raises(ExecutorError) as err:
        ex.prepare(config.stack("triton-3.5-cu130"))
    msg = str(err.value)
    assert msg.startswith("docker: engine not reachable at " + bogus)
    assert "start dockerd" in msg and "\n" not in msg
    assert err.value.exit_code == 3


def test_daemon_down_via_docker_host(config, tmp_path, monkeypatch):
    from reprokit.executors.docker import DockerExecutor

    monkeypatch.setenv("DOCKER_HOST", "tcp://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(ExecutorError, match=r"^docker: engine not reachable at tcp://127\.0\.0\.1:9 "):
        DockerExecutor(host=host(), base_image="reprokit-base:bookworm").prepare(config.stack("triton-3.5-cu130"))


@pytest.mark.docker
def test_broken_dockerfile_fails_that_stack_only(stack_images, base_image, config, tmp_path):
    from reprokit.executors.docker import DockerExecutor

    root = tmp_path / "root"
    (root / "Dockerfiles").mkdir(parents=True)
    (root / "Dockerfiles" / "broken.Dockerfile").write_text(BROKEN)
    shutil.copy(config.path.parent / "Dockerfiles" / "stack.Dockerfile", root / "Dockerfiles")
    broken = Stack(name="triton-broken", triton="3.5.0", base_image="nvidia/cuda:13.0.1-devel-ubuntu24.04",
                   dockerfile="Dockerfiles/broken.Dockerfile")
    good = config.stack("triton-3.5-cu130")
    ex = DockerExecutor(root, host=host(), base_image=base_image, with_torch=False)
    outcomes = {}
    for stack in (broken, good):  # what a multi-stack run does: record the failure, go on
        try:
            outcomes[stack.name] = capture(stack, ex, tmp_path / stack.name,
                                           *planned(config.gpu("h100"), only="block_ptr.*",
                                                kernels=config.path.parent / "kernels"))
        except ExecutorError as e:
            outcomes[stack.name] = e
    err = outcomes["triton-broken"]
    assert isinstance(err, ExecutorError)
    msg = str(err)
    assert msg.startswith("triton-broken: image build failed at `RUN echo")
    assert "returned a non-zero code: 3" in msg and "\n" not in msg
    assert ex.image_id(ex.image_tag(broken)) is None  # no half-built image under the tag
    log = ex.build_log_path(ex.image_tag(broken))
    assert "no such package: triton-broken" in log.read_text()
    assert outcomes["triton-3.5-cu130"].run.ok
    assert outcomes["triton-3.5-cu130"].prepare_facts["built"] is False  # same Dockerfile bytes: same image
    assert (tmp_path / "triton-3.5-cu130" / "results.json").is_file()
    assert ex.containers() == []
    ex.close()


CHILD = """
import sys, time
from pathlib import Path
from reprokit.config import load_config
from reprokit.executors.docker import DockerExecutor
from reprokit.options import HostEnv
ex = DockerExecutor(host=HostEnv(cache=Path(sys.argv[1])), base_image=sys.argv[2], with_torch=False)
ex.run_command(load_config().stack("triton-3.5-cu130"), ["sleep", "300"], timeout_s=600)
"""


@pytest.mark.docker
def test_a_sigkilled_runs_container_is_removed_by_the_next_run(stack_images, base_image, tmp_path):
    """SIGKILL leaves the container running (no clean-up of ours ran); the next executor on this
    host sees its owner is dead and removes it, and leaves a live run's container alone."""
    import os
    import signal
    import subprocess
    import sys

    from reprokit.executors.docker import OWNER_LABEL, DockerExecutor
    from reprokit.options import HostEnv
    from tests.helpers.faults import ROOT, wait_for

    cache = tmp_path / "cache"
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(cache), base_image], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    ex = DockerExecutor(host=HostEnv(cache=cache), base_image=base_image, with_torch=False)

    def ours():
        # ignore_removed: the engine is shared, and another run's container may go while we look.
        return [c for c in ex.client.containers.list(all=True, ignore_removed=True)
                if c.labels.get(OWNER_LABEL, "").startswith(str(cache / "docker-owners"))]

    try:
        assert wait_for(lambda: any(c.status == "running" for c in ours()), 120)
        assert ex.sweep_containers() == [] and ours()        # its owner lives: left alone
        child.send_signal(signal.SIGKILL)
        child.wait()
        (left,) = ours()
        assert ex.sweep_containers() == [left.short_id] and ours() == []
        assert os.listdir(cache / "docker-owners") == []
    finally:
        child.kill()
        for c in ours():
            c.remove(force=True)
        ex.close()


SLOW = """ARG BASE_IMAGE
FROM ${{BASE_IMAGE}}
ARG TRITON_VERSION
LABEL org.reprokit.layer="1"
RUN echo "{token} ${{TRITON_VERSION}}" > /layer
RUN sleep 120
"""

BUILDER = """
import sys
from pathlib import Path
from reprokit.config import Stack
from reprokit.executors.docker import DockerExecutor
from reprokit.options import HostEnv
import os
ex = DockerExecutor(Path(sys.argv[1]), host=HostEnv.from_environ(os.environ), base_image=sys.argv[2], with_torch=False)
ex.prepare(Stack(name="triton-killed", triton="3.5.0", dockerfile="Dockerfiles/slow.Dockerfile"))
"""


@pytest.mark.docker
def test_the_layers_of_a_sigkilled_image_build_are_removed_by_the_next_build(base_image, tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time
    import uuid

    from reprokit.config import Stack
    from reprokit.executors.docker import LAYER_LABEL, DockerExecutor
    from tests.helpers.faults import ROOT, wait_for

    root = tmp_path / "root"
    (root / "Dockerfiles").mkdir(parents=True)
    (root / "Dockerfiles" / "slow.Dockerfile").write_text(SLOW.format(token=uuid.uuid4().hex))
    ex = DockerExecutor(root, host=host(), base_image=base_image, with_torch=False)
    stack = Stack(name="triton-killed", triton="3.5.0", dockerfile="Dockerfiles/slow.Dockerfile")

    def dangling():
        return set(ex.client.api.images(filters={"dangling": True, "label": LAYER_LABEL}, quiet=True))

    before = dangling()
    child = subprocess.Popen([sys.executable, "-c", BUILDER, str(root), base_image], cwd=ROOT,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        # The first RUN's layer is committed (untagged, childless) before the second RUN starts.
        assert wait_for(lambda: dangling() - before, 120)
        assert ex.sweep_images() == [] and dangling() - before   # a build of ours runs: left alone
        time.sleep(1)
        child.send_signal(signal.SIGKILL)
        child.wait()
        time.sleep(2)  # the engine cancels the build; its layer stays
        left = dangling() - before
        assert left
        removed = ex.sweep_images()
        assert left <= set(removed) and not dangling() & left
        assert ex.image_id(ex.image_tag(stack)) is None
    finally:
        child.kill()
        ex.close()
