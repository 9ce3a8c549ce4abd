"""Loading stacks.toml: the pinned stacks and GPU profiles, as frozen dataclasses."""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import MISSING, asdict, dataclass, field, fields
from pathlib import Path
from types import MappingProxyType

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

from reprokit.errors import ConfigError, FileSystemError, UsageError

PACKAGE_DIR = Path(__file__).resolve().parent


# The folder named at the edge (REPROKIT_ROOT, through HostEnv.root and use_root), if any.
_ROOT: Path | None = None


def use_root(root: Path | None) -> None:
    """Take stacks.toml, kernels/ and Dockerfiles/ from `root` (None: the defaults); `cli.main`
    calls it once with HostEnv.root."""
    global _ROOT
    _ROOT = Path(root) if root else None


# The user's reprokit.toml whose [stacks.*] and [gpus.*] extend the defaults (use_project), if any.
_PROJECT: Path | None = None


def use_project(path: Path | None) -> None:
    """Let load_config() add the stacks and GPU profiles of this reprokit.toml (None: none);
    `cli.main` calls it once, before the arguments are read, so that they may name them."""
    global _PROJECT
    _PROJECT = Path(path) if path else None


def used_project() -> Path | None:
    """The reprokit.toml use_project named (None: none)."""
    return _PROJECT


def defaults_root() -> Path:
    """The folder that holds the default stacks.toml, kernels/ (suite, sweeps, fleets),
    Dockerfiles/ and schemas/: the one named at the edge (REPROKIT_ROOT: a test seam, a
    checkout with a stack added), else the checkout this package was imported from (or installed
    editable from), else the package data of an installed wheel. Never the current folder:
    every verb works from any folder, and a user's own files come from their reprokit.toml.
    """
    if _ROOT:
        if not (_ROOT / "stacks.toml").is_file():
            raise UsageError(f"REPROKIT_ROOT={_ROOT}: no stacks.toml there")
        return _ROOT.resolve()
    return builtin_root()


def builtin_root() -> Path:
    """The defaults this package came with (the checkout it was imported from, or an installed
    wheel's package data), whatever REPROKIT_ROOT names: what is fixed input, not configuration."""
    if (PACKAGE_DIR.parent / "stacks.toml").is_file() and (PACKAGE_DIR.parent / "kernels").is_dir():
        return PACKAGE_DIR.parent
    packaged = PACKAGE_DIR / "defaults"
    if (packaged / "stacks.toml").is_file():
        return packaged
    raise UsageError(f"reprokit's default stacks.toml is in neither {PACKAGE_DIR.parent} nor {packaged}: "
                     "the installation is incomplete; reinstall it from the wheel or the checkout")


@dataclass(frozen=True)
class GpuProfile:
    key: str
    name: str
    capability: int
    sm_count: int
    smem_per_block: int
    mem_bandwidth_gbs: float
    fp16_tflops: float
    # What NVML must report for a GPU to be this profile (reprokit.gpu.mismatches): its name is
    # `name` or one of `nvml_names`, and its memory `memory_gib` within a few percent. Optional,
    # so that a plan recorded before they existed still loads.
    memory_gib: float | None = None
    nvml_names: tuple = ()

    @property
    def arch(self) -> str:
        return f"sm_{self.capability}"

    def to_dict(self) -> dict:
        d = {**asdict(self), "arch": self.arch, "nvml_names": list(self.nvml_names)}
        return {k: v for k, v in d.items() if v not in (None, [])}

    @classmethod
    def from_dict(cls, d: dict, key: str | None = None, where: str = "GPU profile") -> GpuProfile:
        """A profile from its to_dict() form (a plan's) or a stacks.toml table (key given apart);
        other keys (arch, which is derived) are ignored."""
        d = {**d, "key": key} if key is not None else d
        missing = sorted(k for k in gpu_keys() | {"key"} if k not in d)
        if missing:
            raise ConfigError(f"{where} {d.get('key')!r} lacks {', '.join(missing)}")
        kw = {f.name: d[f.name] for f in fields(cls) if f.name in d}
        if "nvml_names" in kw:
            kw["nvml_names"] = tuple(kw["nvml_names"])
        return cls(**kw)


@dataclass(frozen=True)
class Stack:
    name: str
    triton: str
    torch: str | None = None
    torch_index: str | None = None
    cuda: str | None = None
    python: str | None = None
    base_image: str | None = None
    dockerfile: str | None = None
    extra: dict = field(default_factory=dict)
    # The folder `dockerfile` is relative to: a user's project for its own stacks (None: the
    # defaults'). Not a pin: a bundle records the Dockerfile's name and hash, not where it lay.
    root: Path | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_pins(cls, pins: dict, name: str | None = None, root: Path | None = None) -> Stack:
        """A stack from its pins() form (a manifest's or plan's) or a stacks.toml table (name given
        apart); keys that are not fields travel in `extra`."""
        pins = {**pins, "name": name} if name is not None else dict(pins)
        known = stack_fields()
        return cls(**{k: v for k, v in pins.items() if k in known or k == "name"},
                   extra={k: v for k, v in pins.items() if k not in known and k != "name"}, root=root)

    def pins(self) -> dict:
        d = asdict(self)
        d.pop("extra")
        d.pop("root")
        d.update(self.extra)
        return {k: v for k, v in d.items() if v is not None}

    def spec_hash(self, *parts: str) -> str:
        """Short hash of the pins (plus any extra text, such as a Dockerfile's bytes)."""
        h = hashlib.sha256(json.dumps(self.pins(), sort_keys=True).encode())
        for p in parts:
            h.update(p.encode())
        return h.hexdigest()[:12]


def stack_fields() -> frozenset:
    """The pins a Stack knows by name (triton, torch, ...): everything else is `extra`."""
    return frozenset(f.name for f in fields(Stack)) - {"name", "extra", "root"}


def gpu_keys() -> frozenset:
    """The keys a GPU profile's table in stacks.toml must have (its key is the table's name)."""
    return frozenset(f.name for f in fields(GpuProfile) if f.default is MISSING) - {"key"}


@dataclass(frozen=True)
class Config:
    stacks: Mapping[str, Stack]   # read-only views: one Config serves the whole process (_LOADED)
    gpus: Mapping[str, GpuProfile]
    path: Path

    def gpu(self, key: str) -> GpuProfile:
        try:
            return self.gpus[key]
        except KeyError:
            raise UsageError(f"unknown GPU profile {key!r}; known: {', '.join(sorted(self.gpus))}") from None

    def stack(self, name: str) -> Stack:
        try:
            return self.stacks[name]
        except KeyError:
            raise UsageError(f"unknown stack {name!r}; known: {', '.join(sorted(self.stacks))}") from None

    def select_stacks(self, names: str | None) -> list[Stack]:
        """`None` or 'all' -> every stack; else a comma-separated list naming at least one stack."""
        if names is None or names.strip() == "all":
            return list(self.stacks.values())
        picked = [n.strip() for n in names.split(",")]
        if not any(picked):
            raise UsageError(f"--stacks {names!r} names no stack; give stack names from stacks.toml, or 'all'")
        if not all(picked):
            raise UsageError(f"--stacks {names!r} has an empty name between commas")
        return [self.stack(n) for n in picked]


def load_toml(path: Path) -> dict:
    """A TOML file parsed; a missing file is a UsageError, a malformed one a ConfigError."""
    try:
        return tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"{path}: {e}") from None
    except IsADirectoryError:
        raise UsageError(f"{path}: is a folder, not a TOML file") from None
    except OSError as e:  # no permission, an I/O error: the system's refusal, exit 5
        raise FileSystemError.of(path, e, "cannot be read") from None


def stacks_and_gpus(path: Path) -> tuple[dict, dict]:
    """The [stacks.*] and [gpus.*] tables of a reprokit.toml. They extend the defaults; a stack's
    dockerfile is named relative to the file (Stack.root)."""
    raw = load_toml(path)
    stacks = {}
    for name, table in (raw.get("stacks") or {}).items():
        if not isinstance(table, dict):
            raise ConfigError(f"{path}: [stacks.{name}] must be a table")
        stacks[name] = dict(table)
    gpus = raw.get("gpus") or {}
    if not isinstance(gpus, dict) or not all(isinstance(g, dict) for g in gpus.values()):
        raise ConfigError(f"{path}: [gpus.NAME] entries must be tables")
    return stacks, dict(gpus)


# Configs already read, by the files they came from as they were then (path, size, mtime): one
# parse per process and set of files, however many verbs and argument checks ask (a file that
# changes on disk is read again).
_LOADED: dict[tuple, Config] = {}


def _stamp(path: Path | None) -> tuple:
    if path is None:
        return (None,)
    try:
        st = Path(path).stat()
    except OSError:
        return (str(path), None)  # load_toml says why it cannot be read, each time
    return (str(Path(path).absolute()), st.st_size, st.st_mtime_ns)


def load_config(path: Path | None = None) -> Config:
    """The stacks and GPU profiles of `path` (default: the packaged stacks.toml), with those of
    the user's reprokit.toml (use_project) added; a project's entry replaces a default of the same
    name. Read once per process for the same files (_LOADED); a Config is never changed after."""
    path = path or defaults_root() / "stacks.toml"
    key = (_stamp(path), _stamp(_PROJECT))
    if key not in _LOADED or None in key[0] or None in key[1][1:]:
        _LOADED[key] = _read_config(path)
    return _LOADED[key]


def _read_config(path: Path) -> Config:
    raw = load_toml(path)
    # (file, the root its dockerfiles are named from, its stacks, its GPU profiles)
    layers: list[tuple[Path, Path | None, dict, dict]] = [(path, None, raw.get("stacks", {}), raw.get("gpus", {}))]
    if _PROJECT is not None:
        layers.append((_PROJECT, _PROJECT.absolute().parent, *stacks_and_gpus(_PROJECT)))
    stacks, gpus = {}, {}
    for where, root, layer_stacks, layer_gpus in layers:
        for name, s in layer_stacks.items():
            if "triton" not in s:
                raise ConfigError(f"{where}: stack {name!r} has no 'triton' pin")
            stacks[name] = Stack.from_pins(s, name=name, root=root)
        for key, g in layer_gpus.items():
            gpus[key] = GpuProfile.from_dict(g, key=key, where=f"{where}: GPU profile")
    if not gpus:
        raise ConfigError(f"{path}: no [gpus.*] profiles")
    return Config(stacks=MappingProxyType(stacks), gpus=MappingProxyType(gpus), path=Path(path))
