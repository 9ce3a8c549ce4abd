"""The fleet TOML: what each GPU profile's tasks ask Slurm for, and how a task runs on its node.

`[slurm]` gives every task's defaults; `[profiles.KEY]` overrides them for one GPU profile.
An unknown key is an error (a typo in `partiton` would otherwise run every task on the default
partition), and so is a value of the wrong type.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Any

from reprokit.config import load_toml
from reprokit.errors import ConfigError

EXECUTORS = ("auto", "docker", "venv", "local")


@dataclass(frozen=True)
class Request:
    """One task's Slurm request and node-side settings. None: leave it to the cluster."""

    gpus: int | None = None             # --gpus
    partition: str | None = None        # --partition
    constraint: str | None = None       # --constraint
    time: str | None = None             # --time
    cpus_per_task: int | None = None    # --cpus-per-task; also the harness's workers
    account: str | None = None          # --account
    container_image: str | None = None  # pyxis: --container-image
    executor: str = "auto"              # how the node runs a stack
    python: str | None = None           # interpreter with reprokit on the nodes
    extra: tuple = ()                   # further sbatch options, as given

    def sbatch_args(self) -> list[str]:
        args = []
        for name, flag in (("gpus", "--gpus"), ("partition", "--partition"), ("constraint", "--constraint"),
                           ("time", "--time"), ("cpus_per_task", "--cpus-per-task"), ("account", "--account"),
                           ("container_image", "--container-image")):
            value = getattr(self, name)
            if value is not None:
                args.append(f"{flag}={value}")
        return args + list(self.extra)

    def to_dict(self) -> dict:
        d = {f.name: getattr(self, f.name) for f in fields(self)}
        d["extra"] = list(self.extra)
        return d


_TYPES: dict[str, type[Any]] = {"gpus": int, "cpus_per_task": int, "extra": list}


def _request(raw: dict, base: Request, where: str) -> Request:
    known = {f.name for f in fields(Request)}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r}; known: {', '.join(sorted(known))}")
    values: dict[str, Any] = {}
    for key, value in raw.items():
        want = _TYPES.get(key, str)
        if not isinstance(value, want) or isinstance(value, bool):
            raise ConfigError(f"{where}: {key} must be {want.__name__}, got {value!r}")
        if want is int and value < 1:
            raise ConfigError(f"{where}: {key} must be at least 1, got {value}")
        if key == "extra" and not all(isinstance(x, str) for x in value):
            raise ConfigError(f"{where}: extra must be a list of strings")
        values[key] = tuple(value) if key == "extra" else value
    req = replace(base, **values)
    if req.executor not in EXECUTORS:
        raise ConfigError(f"{where}: executor {req.executor!r} is not one of {', '.join(EXECUTORS)}")
    return req


@dataclass(frozen=True)
class FleetSpec:
    default: Request
    profiles: dict          # GPU profile key -> Request
    path: str | None = None

    def request(self, profile: str) -> Request:
        return self.profiles.get(profile, self.default)

    def to_dict(self) -> dict:
        return {"default": self.default.to_dict(), "profiles": {k: r.to_dict() for k, r in self.profiles.items()}}

    @classmethod
    def from_dict(cls, d: dict) -> FleetSpec:
        def req(x: dict) -> Request:
            return Request(**{**x, "extra": tuple(x.get("extra") or ())})

        return cls(req(d["default"]), {k: req(v) for k, v in d.get("profiles", {}).items()})


def load_fleet(path: Path | None, known_profiles=()) -> FleetSpec:
    """The fleet TOML at `path` (None: every task takes Slurm's defaults)."""
    if path is None:
        return FleetSpec(Request(), {})
    raw = load_toml(Path(path))
    unknown = sorted(set(raw) - {"slurm", "profiles"})
    if unknown:
        raise ConfigError(f"{path}: unknown table [{unknown[0]}]; a fleet has [slurm] and [profiles.KEY]")
    default = _request(raw.get("slurm", {}), Request(), f"{path}: [slurm]")
    profiles = {}
    for key, table in raw.get("profiles", {}).items():
        if known_profiles and key not in known_profiles:
            raise ConfigError(f"{path}: [profiles.{key}] names no GPU profile of stacks.toml "
                              f"({', '.join(sorted(known_profiles))})")
        profiles[key] = _request(table, default, f"{path}: [profiles.{key}]")
    return FleetSpec(default, profiles, str(path))
