"""The docker executor's pure parts: build args, image tags for digest-pinned bases, one-line error causes."""

from __future__ import annotations

import pytest

from reprokit.config import Stack, load_config
from reprokit.errors import ExecutorError, UsageError
from reprokit.executors import make_executor
from reprokit.executors.docker import DockerExecutor, _short
from reprokit.options import HostEnv

NO_ENGINE = "unix:///nonexistent/docker.sock"  # tags of digest-pinned bases need no engine


@pytest.fixture
def stack() -> Stack:
    return load_config().stack("triton-3.5-cu130")


def test_build_args_follow_the_pins(stack):
    args = DockerExecutor(host=HostEnv(), base_url=NO_ENGINE, with_torch=True).build_args(stack)
    assert args == {"BASE_IMAGE": stack.base_image, "TRITON_VERSION": "3.5.0", "TORCH_VERSION": "2.9.0",
                    "TORCH_INDEX": "https://download.pytorch.org/whl/cu130", "WITH_TORCH": "1"}
    assert "@sha256:" in args["BASE_IMAGE"]


@pytest.mark.parametrize("name", ["docker", "venv"])
def test_overrides_and_env_mean_the_same_to_every_executor(stack, name):
    """REPROKIT_WITH_TORCH is read once, one way: 1 and 0 win, empty (make's default) or unset
    leave torch to the mode (in GPU stacks only)."""
    def torch(raw, gpu):
        environ = {"REPROKIT_BASE_IMAGE": "reprokit-base:bookworm", "DOCKER_HOST": NO_ENGINE}
        if raw is not None:
            environ["REPROKIT_WITH_TORCH"] = raw
        with make_executor(name, HostEnv.from_environ(environ), with_torch=gpu) as ex:
            if name == "docker":
                assert ex.build_args(stack)["BASE_IMAGE"] == "reprokit-base:bookworm"
                assert ex.socket == NO_ENGINE
            return ex.with_torch

    assert [torch(raw, False) for raw in (None, "", "0", "1")] == [False, False, False, True]
    assert [torch(raw, True) for raw in (None, "", "0", "1")] == [True, True, False, True]
    with pytest.raises(UsageError, match="REPROKIT_WITH_TORCH='maybe'"):
        HostEnv.from_environ({"REPROKIT_WITH_TORCH": "maybe"})


def test_stack_without_torch_or_base(stack):
    bare = Stack(name="t", triton="3.5.0", base_image="debian:12@sha256:" + "0" * 64)
    assert DockerExecutor(host=HostEnv(), base_url=NO_ENGINE, with_torch=True).build_args(bare)["WITH_TORCH"] == "0"
    with pytest.raises(ExecutorError, match="no base_image"):
        DockerExecutor(host=HostEnv(), base_url=NO_ENGINE).build_args(Stack(name="t", triton="3.5.0"))
    with pytest.raises(ExecutorError, match="without a torch_index"):
        DockerExecutor(host=HostEnv(), base_url=NO_ENGINE, with_torch=True).build_args(
            Stack(name="t", triton="3.5.0", torch="2.9.0", base_image="x@sha256:" + "0" * 64))


def test_tag_is_a_hash_of_pins_dockerfile_and_args(stack, tmp_path):
    ex = DockerExecutor(host=HostEnv(), base_url=NO_ENGINE, with_torch=True)
    tag = ex.image_tag(stack)
    assert tag.startswith("reprokit/triton-3.5-cu130:") and len(tag.rsplit(":", 1)[1]) == 12
    assert ex.image_tag(stack) == tag
    assert DockerExecutor(host=HostEnv(), base_url=NO_ENGINE, with_torch=False).image_tag(stack) != tag
    other = Stack(**{**stack.pins(), "name": stack.name, "triton": "3.5.1"})
    assert ex.image_tag(other) != tag
    root = tmp_path
    (root / "Dockerfiles").mkdir()
    src = ex.dockerfile(stack).read_text()
    (root / "Dockerfiles" / "stack.Dockerfile").write_text(src + "# changed\n")
    assert DockerExecutor(root, host=HostEnv(), base_url=NO_ENGINE, with_torch=True).image_tag(stack) != tag


def test_missing_dockerfile_is_one_line(stack, tmp_path):
    with pytest.raises(ExecutorError, match=r"cannot read Dockerfile .*stack.Dockerfile: No such file"):
        DockerExecutor(tmp_path, host=HostEnv(), base_url=NO_ENGINE).image_tag(stack)


@pytest.mark.parametrize("text, short", [
    ("Error while fetching server API version: ('Connection aborted.', "
     "FileNotFoundError(2, 'No such file or directory'))", "No such file or directory"),
    ("HTTPConnectionPool(host='127.0.0.1', port=9): Max retries exceeded with url: /version (Caused by "
     "NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new "
     "connection: [Errno 111] Connection refused'))", "Connection refused"),
    ("something\nelse", "something else"),
])
def test_short_keeps_the_innermost_cause(text, short):
    assert _short(RuntimeError(text)) == short
