"""What a run travels with: one frozen options object per concern, and the host environment.

The environment is read once, at the edge (`cli.main`, a test, a benchmark), into a HostEnv;
library code takes what it needs from the options it is handed and never reads `os.environ`
for a setting. Each concern has its own object, so a new knob (a GPU benchmark setting, a
sweep's grid) is one field here, not a keyword threaded through three layers:

    GpuOptions     which GPU profile, and whether cases compile ahead of time or run on it
    RunOptions     how a capture runs its plan (workers, the run's timeout, force); what it runs
                   is a Plan (reprokit/plan.py)
    BundleOptions  where and how a capture is packed (out folder, share, parent, bundle time)

Progress goes the other way through one channel, a Listener (or its `note`, a Report).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Callable, Mapping

from reprokit.config import GpuProfile
from reprokit.errors import UsageError

# How library code reports: one line of progress or warning, for the verb to show or drop.
Report = Callable[[str], None]
MODES = ("compile-only", "gpu")
# Bundles are compressed at gzip's own default, so they are as small as `tar czf` makes them.
COMPRESS_LEVEL = 6
_OFF = ("", "0", "off", "no", "false")


def quiet(msg: str) -> None:
    """A Report that drops everything (the default where no one listens)."""


class Listener:
    """How the layers below the verbs tell a verb where a run is: the one channel they are
    handed, with typed options beside it. This base hears nothing; a verb overrides what it
    shows (bars, lines; nothing under --json).

        note(line)           one line of progress or warning (the Report an executor gets)
        stack(name, state)   a stack's capture: capturing, bundling, then done or failed
        step(step)           a bisection's capture, done (a reprokit.run.bisect.Step)
        points(key, done, total, state)
                             a sweep's points on one target (stack/gpu): compiling, resuming,
                             bundling, done or failed; heard only where `hears_points` is set,
                             since a sweep watches its work folder for it
    """

    hears_points = False

    def note(self, line: str) -> None:
        """One line of progress or warning."""

    def stack(self, name: str, state: str) -> None:
        """Where one stack's capture is."""

    def step(self, step: object) -> None:
        """One capture of a bisection, done."""

    def points(self, key: str, done: int, total: int, state: str) -> None:
        """How many of a sweep target's points are done."""


SILENT = Listener()


def with_torch_value(raw: str | None) -> bool | None:
    """REPROKIT_WITH_TORCH (make's WITH_TORCH): 1 asks for torch, 0 refuses it, unset or empty
    leaves it to the mode (torch in GPU stacks only)."""
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value in ("1", "yes", "true", "on"):
        return True
    if value in ("0", "no", "false", "off"):
        return False
    raise UsageError(f"REPROKIT_WITH_TORCH={raw!r} is not 1 or 0")


def _epoch_value(raw: str | None) -> int | None:
    if raw is None or not raw.strip():
        return None
    if not raw.strip().isdigit():
        raise UsageError(f"SOURCE_DATE_EPOCH={raw.strip()!r} is not a whole number of seconds")
    return int(raw.strip())


@dataclass(frozen=True)
class HostEnv:
    """The settings this host's environment gives reprokit, read once by `from_environ`.

    cache: venvs, build logs, the SASS cache ($REPROKIT_CACHE, else $XDG_CACHE_HOME/reprokit,
    else ~/.cache/reprokit); sass_cache: the disassembly cache ($REPROKIT_SASS_CACHE; None when
    it is off); with_torch: REPROKIT_WITH_TORCH as True/False/None; base_image:
    REPROKIT_BASE_IMAGE; docker_host: DOCKER_HOST; source_date_epoch: SOURCE_DATE_EPOCH;
    environ: the whole environment, for the redaction of secret values that the host holds and
    for the environment of the processes reprokit starts (child_environ); root: REPROKIT_ROOT,
    the checkout to take stacks.toml and kernels/ from; tmp: the system temp folder ($TMPDIR, as
    tempfile chooses it), under which each run makes its own scratch folder.
    A HostEnv made by hand has no SASS cache unless it names one, and an empty environment: nothing
    below the edge falls back to this process's own.
    """

    cache: Path = field(default_factory=lambda: Path.home() / ".cache" / "reprokit")
    sass_cache: Path | None = None
    with_torch: bool | None = None
    base_image: str | None = None
    docker_host: str | None = None
    source_date_epoch: int | None = None
    environ: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    root: Path | None = None
    tmp: Path = field(default_factory=lambda: Path(tempfile.gettempdir()))

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> HostEnv:
        env = dict(environ)
        if env.get("REPROKIT_CACHE"):
            cache = Path(env["REPROKIT_CACHE"])
        else:
            cache = Path(env.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "reprokit"
        raw_sass = env.get("REPROKIT_SASS_CACHE")
        if raw_sass is None:
            sass = cache / "sass"
        elif raw_sass.strip().lower() in _OFF:
            sass = None
        else:
            sass = Path(raw_sass).resolve()
        tmp = env.get("TMPDIR")
        return cls(cache=cache, sass_cache=sass, with_torch=with_torch_value(env.get("REPROKIT_WITH_TORCH")),
                   base_image=env.get("REPROKIT_BASE_IMAGE") or None, docker_host=env.get("DOCKER_HOST") or None,
                   source_date_epoch=_epoch_value(env.get("SOURCE_DATE_EPOCH")),
                   environ=MappingProxyType(env), root=Path(env["REPROKIT_ROOT"]) if env.get("REPROKIT_ROOT") else None,
                   tmp=Path(tmp) if tmp and os.path.isdir(tmp) else Path(tempfile.gettempdir()))

    def child_environ(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a process reprokit starts: the user's, as read at the edge (empty
        for a HostEnv made by hand: what a test gives it), with `extra` on top."""
        env = dict(self.environ)
        env.update(extra or {})
        return env


@dataclass(frozen=True)
class GpuOptions:
    """The GPU profile a run targets, and its mode: `compile-only` (ahead of time, no GPU
    needed) or `gpu` (on the profile's GPU; reprokit.gpu.gpu_options checks it).

    host: the GPU the run uses, as NVML named it (index, name, capability, memory_total);
    mismatch: how it differs from the profile, accepted with allow_mismatch
    (--allow-gpu-mismatch); lock_clocks: "max" or MHz, only when the user asked (--lock-clocks).
    On a GPU, plan.json records all of it under `gpu` (record()).
    """

    profile: GpuProfile
    mode: str = "compile-only"
    host: Mapping[str, Any] | None = None
    mismatch: tuple[str, ...] = ()
    allow_mismatch: bool = False
    lock_clocks: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise UsageError(f"mode {self.mode!r} is not {' or '.join(MODES)}")
        if self.lock_clocks is not None and self.mode != "gpu":
            raise UsageError("--lock-clocks needs a run on the GPU (this one is compile-only)")

    @property
    def on_gpu(self) -> bool:
        return self.mode == "gpu"

    def record(self) -> dict[str, Any] | None:
        """plan.json's `gpu`: the GPU checked, what differs and was allowed, clocks asked for."""
        if not self.on_gpu:
            return None
        return {"host": dict(self.host) if self.host else None, "mismatch": list(self.mismatch),
                "allow_mismatch": self.allow_mismatch, "lock_clocks": self.lock_clocks}


@dataclass(frozen=True)
class Seat:
    """One stack's harness among several that measure on one GPU side by side, their rounds in
    turn (reprokit.harness.turns): the folder they share, its side (from 0), how many sides."""

    folder: Path
    side: int
    sides: int

    def environ(self, folder_as: str | None = None) -> dict[str, str]:
        """The harness's variables; `folder_as`: where the folder is seen from inside a container."""
        return {"REPROKIT_TURNS": folder_as or str(self.folder), "REPROKIT_TURN_SIDE": str(self.side),
                "REPROKIT_TURN_SIDES": str(self.sides)}


@dataclass(frozen=True)
class RunOptions:
    """How a capture runs its plan (what it runs is the plan's, reprokit.plan.Plan).

    workers: cases compiled at once; run_timeout_s: the whole harness run; force: replace a
    non-empty capture folder that reprokit made; turns: this run's seat where several stacks'
    harnesses share the GPU in turns (set by reprokit.run.stacks, never by a user).
    """

    workers: int = 1
    run_timeout_s: float = 3600
    force: bool = False
    turns: Seat | None = None

    def __post_init__(self) -> None:
        if self.workers < 1:
            raise UsageError(f"--workers must be at least 1, got {self.workers}")
        if not self.run_timeout_s > 0:
            raise UsageError(f"the run timeout must be more than 0 seconds, got {self.run_timeout_s!r}")


@dataclass(frozen=True)
class BundleOptions:
    """Where and how a capture is packed.

    share: also replace host identity; parent: the sha256 of the bundle this one replays;
    source_date_epoch: the bundle's one time (default: when the capture finished);
    environ: the host environment whose secret values are cut from every file (by default this
    process's own, so that a caller who forgets it never lets a host secret through).
    """

    out_dir: Path = Path("bundles")
    share: bool = False
    parent: str | None = None
    source_date_epoch: int | None = None
    compresslevel: int = COMPRESS_LEVEL
    environ: Mapping[str, str] = field(default_factory=lambda: MappingProxyType(dict(os.environ)))
    # secret value -> the command-line option it was given to (a traced command's): cut from every file
    secret_options: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    @classmethod
    def from_host(cls, host: HostEnv, out_dir: Path, **kw: Any) -> BundleOptions:
        return cls(out_dir=Path(out_dir), source_date_epoch=host.source_date_epoch, environ=host.environ, **kw)


@dataclass(frozen=True)
class Origin:
    """What a bundle records about where its capture came from (JSON-ready mappings, as the
    manifest holds them): the stack's name and pins, the GPU profile, the executor's facts."""

    stack: Mapping[str, Any]
    profile: Mapping[str, Any]
    executor: Mapping[str, Any]
    mode: str
