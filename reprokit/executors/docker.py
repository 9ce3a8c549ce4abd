"""The docker executor: each stack is an image built from its Dockerfile; the harness runs in a throwaway container.

Every docker-py call, and the conversion of docker-py's errors into ExecutorError, lives in this
module. Images are tagged `reprokit/<stack>:<hash>` over the pins, the Dockerfile's bytes, the
build args and a tag-named base's image id, so an image that exists is the image the pins ask
for and is never rebuilt.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import platform
import re
import tarfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import docker
import docker.errors
import requests.exceptions
from docker.types import DeviceRequest, Mount

from reprokit import locks
from reprokit.config import PACKAGE_DIR, Stack, defaults_root
from reprokit.errors import ExecutorError
from reprokit.executors.base import Executor, RunResult, harness_argv, sass_cache
from reprokit.options import HostEnv, Report, Seat, quiet
from reprokit.proc import tail

DEFAULT_DOCKERFILE = "Dockerfiles/stack.Dockerfile"
# Where the host's reprokit package appears in the container (read-only); PYTHONPATH points here.
PACKAGE_MOUNT = "/opt/reprokit"
SASS_CACHE_MOUNT = "/cache/sass"
TURNS_MOUNT = "/reprokit-turns"  # the folder the stacks' harnesses take turns in (reprokit.harness.turns)
CONTAINER_TMP = "/tmp"  # the harness's TMPDIR in a container, set so, whatever the image says
# A container's hostname is otherwise its id, drawn anew each run: env.json would differ between
# two runs of the same thing. (One word that text never holds: --share replaces host names.)
CONTAINER_HOSTNAME = "reprokit-container"
BUILD_TIMEOUT_S = 3600  # docker-py's socket timeout while a build streams: pip can be silent for minutes
KILL_WAIT_S = 30
# Set by the Dockerfile before its first RUN, so every layer of a build carries it.
LAYER_LABEL = "org.reprokit.layer"
# Every container names the run that owns it (a file that run keeps locked) and the host it is on.
OWNER_LABEL, OWNER_HOST = "org.reprokit.owner", "org.reprokit.host"
_STEP = re.compile(r"^Step (\d+)/(\d+) : (.*)$")


DEFAULT_SOCKET = "unix:///var/run/docker.sock"


def _short(exc: BaseException) -> str:
    """docker-py wraps urllib3 wraps OSError: keep the innermost OS message, on one line."""
    text = " ".join(str(exc).split())
    for pattern in (r"\[Errno -?\d+\] ([^'\")\]]+)", r"\w+Error\(-?\d+, '([^']+)'\)"):
        m = re.search(pattern, text)
        if m:
            return m.group(1).strip()
    return text[:200]


@contextmanager
def _engine_errors(action: str, socket: str) -> Iterator[None]:
    """Turn docker-py and transport errors raised while doing `action` into one-line ExecutorErrors."""
    try:
        yield
    except docker.errors.APIError as e:
        explanation = e.explanation if isinstance(e.explanation, str) else str(e)
        raise ExecutorError(f"docker: {action} failed: {explanation.strip()}") from e
    except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
        raise ExecutorError(
            f"docker: engine not reachable at {socket} ({_short(e)}) while trying to {action}; "
            "start dockerd (check with `docker info`) or pick another executor") from e


def docker_available(base_url: str | None = None, timeout_s: float = 3.0) -> bool:
    """Whether a Docker engine answers (for `--executor auto`)."""
    try:
        client = docker.DockerClient(base_url=base_url or DEFAULT_SOCKET, timeout=timeout_s)
        try:
            return bool(client.ping())
        finally:
            client.close()
    except (docker.errors.DockerException, requests.exceptions.RequestException):
        return False


def turns_mount(turns: Seat) -> tuple[Mount, dict[str, str]]:
    """The folder the stacks' harnesses share for their turns, mounted in a container (its lock
    file is flocked across containers: one kernel), and the harness's variables naming it."""
    return (Mount(TURNS_MOUNT, str(Path(turns.folder).resolve()), type="bind", read_only=False),
            turns.environ(TURNS_MOUNT))


class DockerExecutor(Executor):
    """Build (once) and run pinned stack images.

    host: the environment's settings (cache, SASS cache, DOCKER_HOST, REPROKIT_BASE_IMAGE);
    base_image overrides the stack's pinned base for offline builds (default host.base_image, as
    `make BASE_IMAGE=...` sets it); with_torch: install the stack's torch pin; user is who the
    container runs as (default: this process's uid:gid, so the capture folder stays the host
    user's); mem_limit caps the container's memory (docker syntax, e.g. "8g"); report: where
    image-build progress goes, one line per Dockerfile step.
    """

    name = "docker"

    def __init__(self, root: Path | None = None, *, host: HostEnv, base_image: str | None = None,
                 with_torch: bool = True, base_url: str | None = None, user: str | None = None,
                 mem_limit: str | None = None, report: Report = quiet):
        self.root = Path(root) if root else defaults_root()
        self.host = host
        self.base_image = base_image or self.host.base_image
        self.with_torch = with_torch
        self.base_url = base_url
        self.user = user or f"{os.getuid()}:{os.getgid()}"
        self.mem_limit = mem_limit
        self.report = report
        self._client: docker.DockerClient | None = None
        self._engine: dict | None = None
        self._prepared: dict[str, dict] = {}
        self._created: set[str] = set()  # ids of the containers this executor made
        self.builds = 0  # images built by this executor (tests check reuse with it)

    # -- engine ---------------------------------------------------------------------------------

    @property
    def socket(self) -> str:
        return self.base_url or self.host.docker_host or DEFAULT_SOCKET

    @property
    def client(self) -> docker.DockerClient:
        if self._client is None:
            with _engine_errors("connect", self.socket):
                client = docker.DockerClient(base_url=self.socket)
                client.ping()
            self._client = client
        return self._client

    def engine_facts(self) -> dict:
        """The engine's identity, asked once per executor."""
        if self._engine is None:
            with _engine_errors("read engine info", self.socket):
                version = self.client.version()
                info = self.client.info()
            self._engine = {
                "version": version.get("Version"),
                "api_version": version.get("ApiVersion"),
                "os": version.get("Os"),
                "arch": version.get("Arch"),
                "kernel": version.get("KernelVersion"),
                "default_runtime": info.get("DefaultRuntime"),
                "runtimes": sorted(info.get("Runtimes") or {}),
                "storage_driver": info.get("Driver"),
                "cgroup_version": info.get("CgroupVersion"),
            }
        return self._engine

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def temp_root(self, scratch: Path | None = None) -> str:
        return CONTAINER_TMP  # the container's own, whatever the host's scratch

    def harness_home(self) -> str | None:
        return None  # the image's; env.json records it where Triton reports its home_dir

    # -- images ---------------------------------------------------------------------------------

    def dockerfile(self, stack: Stack) -> Path:
        # A project's own stack names its Dockerfile relative to its reprokit.toml (Stack.root).
        if stack.dockerfile and stack.root is not None:
            return stack.root / stack.dockerfile
        return self.root / (stack.dockerfile or DEFAULT_DOCKERFILE)

    def build_args(self, stack: Stack) -> dict[str, str]:
        base = self.base_image or stack.base_image
        if not base:
            raise ExecutorError(f"{stack.name}: no base_image in stacks.toml and no BASE_IMAGE override")
        with_torch = self.with_torch and bool(stack.torch)
        if with_torch and not stack.torch_index:
            raise ExecutorError(f"{stack.name}: torch {stack.torch} is pinned without a torch_index")
        return {
            "BASE_IMAGE": base,
            "TRITON_VERSION": stack.triton,
            "TORCH_VERSION": stack.torch or "",
            "TORCH_INDEX": stack.torch_index or "",
            "WITH_TORCH": "1" if with_torch else "0",
        }

    def image_tag(self, stack: Stack) -> str:
        """reprokit/<stack>:<hash of the pins, the Dockerfile's bytes, the build args and the base>."""
        path = self.dockerfile(stack)
        try:
            text = path.read_text()
        except OSError as e:
            raise ExecutorError(f"{stack.name}: cannot read Dockerfile {path}: {e.strerror}") from e
        args = self.build_args(stack)
        # A base named by digest is immutable; one named by tag (the offline base) can be rebuilt
        # under the same name, and the stacks built on the old one must not be reused then.
        base_id = "" if "@sha256:" in args["BASE_IMAGE"] else (self.image_id(args["BASE_IMAGE"]) or "")
        spec = stack.spec_hash(text, json.dumps(args, sort_keys=True), base_id)
        return f"reprokit/{stack.name}:{spec}"

    @contextmanager
    def _builds(self, exclusive: bool) -> Iterator[bool]:
        """Builds on this host hold a shared flock on one file; the sweep takes it exclusively,
        without waiting (True when it got it): no build of ours runs then, so no layer is in use."""
        path = self.host.cache / "docker-builds.lock"
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a") as f:
            try:
                fcntl.flock(f, (fcntl.LOCK_EX | fcntl.LOCK_NB) if exclusive else fcntl.LOCK_SH)
            except BlockingIOError:
                yield False
                return
            yield True

    def sweep_images(self) -> list[str]:
        """Remove the layers that killed builds of ours left: untagged, childless images carrying
        the Dockerfile's org.reprokit.layer label. Complete images and their layers have a tag or a
        child, so they stay; nothing is removed while a build of ours runs on this host."""
        with self._builds(exclusive=True) as alone:
            if not alone:
                return []
            with _engine_errors("remove the layers of killed builds", self.socket):
                pruned = self.client.images.prune(filters={"dangling": True, "label": LAYER_LABEL})
        return [d.get("Deleted") or d.get("Untagged") for d in (pruned.get("ImagesDeleted") or [])]

    def prepare(self, stack: Stack) -> dict:
        """Build the stack's image unless an image with its tag exists; return facts for the manifest."""
        tag = self.image_tag(stack)
        args = self.build_args(stack)
        started = time.monotonic()
        image = self._image_or_none(tag)
        built = image is None
        if image is None:
            self.sweep_images()
            with self._builds(exclusive=False):
                image = self._build(stack, tag, args)
        base = self._image_or_none(args["BASE_IMAGE"])
        pinned = args["BASE_IMAGE"].partition("@")[2] or None
        base_digests = list(base.attrs.get("RepoDigests") or []) if base is not None else []
        facts = {
            "executor": self.name,
            "image": tag,
            "image_id": image.id,
            "image_repo_digests": list(image.attrs.get("RepoDigests") or []),
            "image_created": image.attrs.get("Created"),
            "image_labels": dict(image.labels or {}),
            "built": built,
            "build_s": round(time.monotonic() - started, 3) if built else 0.0,
            "dockerfile": stack.dockerfile or DEFAULT_DOCKERFILE,
            "dockerfile_sha256": hashlib.sha256(self.dockerfile(stack).read_bytes()).hexdigest(),
            "build_args": args,
            "base_image": args["BASE_IMAGE"],
            "base_image_overridden": self.base_image is not None,
            "base_image_id": base.id if base is not None else None,
            "base_image_repo_digests": base_digests,
            # The digest in stacks.toml, checked against what the engine reports for the base.
            "base_image_digest_verified": (any(d.endswith("@" + pinned) for d in base_digests)
                                           if pinned else None),
            "engine": self.engine_facts(),
        }
        self._prepared[stack.name] = facts
        return facts

    def base_problem(self, stack: Stack) -> str | None:
        """Why this stack's image could not be built here, or None when it exists or can be.

        For `--executor auto`: an engine that answers but can neither find the base image
        locally nor reach a registry for it (an offline host) is no place to build stacks.
        """
        if self.image_id(self.image_tag(stack)) is not None:
            return None
        base = self.build_args(stack)["BASE_IMAGE"]
        if self.image_id(base) is not None:
            return None
        try:
            self.client.api.inspect_distribution(base)
        except docker.errors.APIError as e:
            detail = e.explanation if isinstance(e.explanation, str) else str(e)
            return f"{base} is not on this engine and its registry does not answer ({detail.split(': ')[-1][:120]})"
        except (docker.errors.DockerException, requests.exceptions.RequestException) as e:
            return f"{base} is not on this engine and its registry does not answer ({_short(e)})"
        return None

    def image_id(self, ref: str) -> str | None:
        """The id of a local image, or None when the engine has none by that name."""
        image = self._image_or_none(ref)
        return image.id if image is not None else None

    def containers(self) -> list[str]:
        """Ids of the containers this executor created that still exist (should be none). Others'
        are not counted: an engine is shared, and another run's live containers are its own."""
        with _engine_errors("list containers", self.socket):
            found = self.client.containers.list(all=True, filters={"label": "org.reprokit.stack"},
                                                ignore_removed=True)
        return [c.id for c in found if c.id in self._created]

    def _image_or_none(self, ref: str):
        with _engine_errors(f"inspect image {ref}", self.socket):
            try:
                return self.client.images.get(ref)
            except docker.errors.ImageNotFound:
                return None

    def build_log_path(self, tag: str) -> Path:
        return self.host.cache / "build-logs" / (tag.replace("/", "_").replace(":", "-") + ".log")

    def _build(self, stack: Stack, tag: str, args: dict[str, str]):
        """Build from a context holding only the Dockerfile (the image installs pins, copies nothing)."""
        context = io.BytesIO()
        data = self.dockerfile(stack).read_bytes()
        with tarfile.open(fileobj=context, mode="w") as tar:
            info = tarfile.TarInfo("Dockerfile")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        context.seek(0)
        log_path = self.build_log_path(tag)
        log_path.parent.mkdir(parents=True, exist_ok=True)
        self.report(f"building {tag} from {self.dockerfile(stack).name} "
                    f"(base {args['BASE_IMAGE']}, WITH_TORCH={args['WITH_TORCH']})")
        step, error, image_id = "", None, None
        with log_path.open("w") as log, _engine_errors(f"build {tag}", self.socket):
            stream = self.client.api.build(
                fileobj=context, custom_context=True, dockerfile="Dockerfile", tag=tag,
                buildargs=args, network_mode="host", rm=True, forcerm=True, pull=False,
                decode=True, timeout=BUILD_TIMEOUT_S,
                labels={"org.reprokit.stack": stack.name, "org.reprokit.pins": json.dumps(stack.pins(), sort_keys=True)})
            for chunk in stream:
                if "error" in chunk:
                    error = (chunk.get("errorDetail") or {}).get("message") or chunk["error"]
                    log.write(error + "\n")
                    continue
                if "aux" in chunk and isinstance(chunk["aux"], dict):
                    image_id = chunk["aux"].get("ID") or image_id
                text = chunk.get("stream") or chunk.get("status") or ""
                log.write(text)
                for line in text.splitlines():
                    m = _STEP.match(line.strip())
                    if m:
                        step = m.group(3)
                        self.report(f"{stack.name} " + " ".join(line.split()))
        self.builds += 1
        if error:
            where = f" at `{step[:80]}`" if step else ""
            last = error.strip().splitlines()[-1] if error.strip() else "unknown error"
            raise ExecutorError(f"{stack.name}: image build failed{where}: {last[:300]} (log: {log_path})")
        with _engine_errors(f"look up built image {tag}", self.socket):
            image = self.client.images.get(image_id or tag)
        self.report(f"built {tag} ({image.short_id})")
        return image

    # -- containers -----------------------------------------------------------------------------

    def _owners(self) -> Path:
        return self.host.cache / "docker-owners"

    def sweep_containers(self) -> list[str]:
        """Remove the containers of dead reprokit runs on this host (SIGKILLed, so none of their
        clean-up ran): each carries the path of a file its run kept locked while it lived."""
        removed = []
        locks.sweep(self._owners())
        with _engine_errors("list containers", self.socket):
            # The plain listing: containers.list() inspects each one, and fails on one removed meanwhile.
            found = self.client.api.containers(all=True, filters={"label": f"{OWNER_HOST}={platform.node()}"})
        for c in found:
            owner = Path((c.get("Labels") or {}).get(OWNER_LABEL, ""))
            if owner.parent != self._owners() or (owner.exists() and locks.owner_alive(owner)):
                continue  # another cache's, or its run is alive
            try:
                self.client.api.remove_container(c["Id"], force=True, v=True)
                removed.append(c["Id"][:12])
            except docker.errors.NotFound:
                pass
            except (docker.errors.APIError, requests.exceptions.RequestException) as e:
                self.report(f"docker: could not remove container {c['Id'][:12]} of a dead run: {_short(e)}")
        return removed

    @contextmanager
    def _container(self, **create_kwargs) -> Iterator[docker.models.containers.Container]:
        """A created (not started) container, force-removed however the block ends; labelled with
        its owner, so that the next run removes it should this one be killed outright."""
        self._owners().mkdir(parents=True, exist_ok=True)
        self.sweep_containers()
        owner = locks.make_temp(self._owners(), "container", "owner", is_dir=False)
        labels = {**create_kwargs.pop("labels", {}), OWNER_LABEL: str(owner.path), OWNER_HOST: platform.node()}
        try:
            with _engine_errors("create container", self.socket):
                container = self.client.containers.create(labels=labels, **create_kwargs)
            self._created.add(container.id)
            try:
                yield container
            finally:
                try:
                    container.remove(force=True, v=True)
                except docker.errors.NotFound:
                    pass  # already gone (the engine removed it, or a concurrent cleanup did)
                except (docker.errors.APIError, requests.exceptions.RequestException) as e:
                    self.report(f"docker: could not remove container {container.short_id}: {_short(e)}")
        finally:
            owner.discard()

    def _start(self, container, stack: Stack, gpu: bool) -> None:
        try:
            with _engine_errors(f"start container for {stack.name}", self.socket):
                container.start()
        except ExecutorError as e:
            if gpu and "could not select device driver" in str(e):
                raise ExecutorError(f"{stack.name}: GPU requested but the Docker engine has no NVIDIA device "
                                    "driver (install nvidia-container-toolkit, restart dockerd)") from e
            raise

    @staticmethod
    def _kill(container) -> bool:
        """Kill a container past its deadline; False when it finished on its own meanwhile."""
        try:
            container.kill()
        except docker.errors.APIError as e:
            if e.status_code == 409:  # "is not running": it exited between the timeout and the kill
                return False
            raise
        return True

    def run_harness(self, stack: Stack, capture_dir: Path, *, workers: int, timeout_s: float,
                    gpu: bool, scratch: Path | None = None, turns: Seat | None = None) -> RunResult:
        capture_dir = Path(capture_dir).resolve()
        plan, kernels = capture_dir / "plan.json", capture_dir / "kernels"
        for p in (plan, kernels):
            if not p.exists():
                raise ExecutorError(f"{stack.name}: {p} missing: the host writes plan.json and kernels/ first")
        mounts = [
            Mount("/in/plan.json", str(plan), type="bind", read_only=True),
            Mount("/in/kernels", str(kernels), type="bind", read_only=True),
            Mount("/out", str(capture_dir), type="bind", read_only=False),
        ]
        env = {"TMPDIR": CONTAINER_TMP}
        cache = sass_cache(self.host)
        if cache is not None:  # shared with venv runs: keys name the disassembler's own bytes
            mounts.append(Mount(SASS_CACHE_MOUNT, str(cache), type="bind", read_only=False))
            env["REPROKIT_SASS_CACHE"] = SASS_CACHE_MOUNT
        if turns is not None:
            mount, seen = turns_mount(turns)
            mounts.append(mount)
            env.update(seen)
        argv = harness_argv("python", "/in/plan.json", "/in/kernels", "/out", workers)
        # Like the local executor: the run's whole output beside the harness's own log.
        return self.run_command(stack, argv, mounts=mounts, timeout_s=timeout_s, gpu=gpu, env=env,
                                log_path=capture_dir / "logs" / "executor.log")

    def run_command(self, stack: Stack, argv: list[str], *, timeout_s: float, mounts: list | None = None,
                    gpu: bool = False, env: dict[str, str] | None = None,
                    log_path: Path | None = None) -> RunResult:
        """Run argv in a fresh container of the stack's image: reprokit mounted read-only, no network.

        Returns a RunResult (timed_out when it ran past timeout_s and was killed); raises
        ExecutorError when the engine fails or the kernel killed the container for memory.
        """
        facts = self._prepared.get(stack.name) or self.prepare(stack)
        mounts = [Mount(f"{PACKAGE_MOUNT}/reprokit", str(PACKAGE_DIR), type="bind", read_only=True),
                  *(mounts or [])]
        environment = {
            "PYTHONPATH": PACKAGE_MOUNT,
            "PYTHONDONTWRITEBYTECODE": "1",  # the package mount is read-only
            "PYTHONUNBUFFERED": "1",
            # The host uid has no passwd entry in the image; getpass.getuser() reads these first.
            "USER": "reprokit",
            "LOGNAME": "reprokit",
            **(env or {}),
        }
        kwargs = dict(
            image=facts["image_id"], command=list(argv), user=self.user, environment=environment,
            mounts=mounts, network_mode="none", working_dir="/out" if any(m["Target"] == "/out" for m in mounts) else "/",
            init=True, labels={"org.reprokit.stack": stack.name}, detach=True, hostname=CONTAINER_HOSTNAME,
        )
        if gpu:
            kwargs["device_requests"] = [DeviceRequest(count=-1, capabilities=[["gpu"]])]
        if self.mem_limit:
            kwargs["mem_limit"] = self.mem_limit
        started = time.monotonic()
        with self._container(**kwargs) as container:
            self._start(container, stack, gpu)
            timed_out = False
            with _engine_errors(f"wait for the container of {stack.name}", self.socket):
                try:
                    status = container.wait(timeout=timeout_s)
                except (requests.exceptions.ReadTimeout, requests.exceptions.ConnectionError) as e:
                    # docker-py reports its read timeout as either, depending on the transport.
                    if "timed out" not in str(e).lower():
                        raise
                    timed_out = self._kill(container)
                    status = container.wait(timeout=KILL_WAIT_S)
            wall_s = time.monotonic() - started
            with _engine_errors(f"collect logs of {stack.name}", self.socket):
                container.reload()
                logs = container.logs(stdout=True, stderr=True).decode("utf-8", errors="replace")
            attrs = container.attrs
        if log_path is not None:
            log_path.parent.mkdir(parents=True, exist_ok=True)
            log_path.write_text(logs)
        state, host = attrs.get("State") or {}, attrs.get("HostConfig") or {}
        code = int(status.get("StatusCode", state.get("ExitCode", -1)))
        oom = bool(state.get("OOMKilled"))
        runtime = {
            **{k: facts[k] for k in ("image", "image_id", "image_repo_digests", "base_image",
                                     "base_image_id", "base_image_repo_digests")},
            "executor": self.name,
            "engine": facts["engine"],
            "container_id": attrs.get("Id"),
            "runtime": host.get("Runtime"),
            "network_mode": host.get("NetworkMode"),
            "user": self.user,
            "gpu_requested": gpu,
            "mem_limit": self.mem_limit,
            "mounts": [{"target": m["Target"], "read_only": bool(m.get("ReadOnly"))} for m in mounts],
            "started_at": state.get("StartedAt"),
            "finished_at": state.get("FinishedAt"),
            "exit_code": code,
            "oom_killed": oom,
            "timed_out": timed_out,
            "wall_s": round(wall_s, 3),
        }
        if oom and code != 0 and not timed_out:
            limit = f" (limit {self.mem_limit})" if self.mem_limit else ""
            raise ExecutorError(f"{stack.name}: container killed for memory{limit}, exit {code}; "
                                f"last output: {tail(logs, 1)[:200]}")
        return RunResult(executor=self.name, returncode=code, timed_out=timed_out, log_tail=tail(logs),
                         runtime=runtime)
