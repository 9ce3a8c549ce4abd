"""The bundles a report is made of: opened and verified through the one reader, checked to be
comparable (one GPU profile), and the environment facts each contributes to the report, read
from its env.json, manifest and per-case ptxas records."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from reprokit.bundle.reader import Bundle, open_bundle
from reprokit.errors import UsageError
from reprokit.records import Results


def _wanted(rel: str) -> bool:
    # IR text, logs, metadata and MLIR reproducers; cubins are never shown, so never held.
    return rel.startswith(("cases/", "kernels/")) and not rel.endswith(".cubin")


@dataclass(frozen=True)
class Facts:
    """What ran, as the report states it: one per bundle."""

    name: str           # the bundle's root folder
    file: str           # the file name as given (no folders: the report must not depend on cwd)
    sha256: str
    triton: str
    stack: str
    profile: str        # GPU profile key
    profile_name: str
    arch: str
    mode: str
    gpu: str            # device name(s) that ran, or what a compile-only run targeted
    driver: str | None
    cuda: str | None    # the driver's CUDA version (NVML), e.g. "13.0"
    ptxas: str          # the ptxas version(s) the compiles ran, from the case records
    torch: str | None
    python: str | None
    os: str | None

    label: str = ""     # its column header, unique in the report (see _labels)


def _cuda(version) -> str | None:
    # NVML reports the driver's CUDA version as 1000 * major + 10 * minor.
    if not isinstance(version, int) or version <= 0:
        return None
    return f"{version // 1000}.{(version % 1000) // 10}"


def facts(bundle: Bundle) -> Facts:
    m, env, res = bundle.manifest, bundle.env or {}, bundle.records
    profile = m.get("profile") or bundle.plan.get("profile") or {}
    gpu = env.get("gpu") or {}
    devices = gpu.get("devices") or []
    pkgs = env.get("packages") or {}
    tools = env.get("tools") or {}
    if gpu.get("available") and devices:
        gpu_name = ", ".join(sorted({str(d.get("name")) for d in devices}))
    else:
        gpu_name = f"none (compile-only for {profile.get('name', profile.get('key', '?'))})"
    # The ptxas that compiled the cases, from their own records; env.json's is only what was on PATH.
    ran = sorted({v for c in res.cases if (v := (c.raw.get("ptxas") or {}).get("version")) is not None})
    ptxas = ", ".join(ran) if ran else ((tools.get("ptxas") or {}).get("version") or "unknown") + " (none ran)"
    osi = env.get("os") or {}
    # torch: its version, or "not installed" where the snapshot listed the packages and it was not
    # among them (compile-only stacks carry none); "unknown" only where nothing was listed.
    torch = (pkgs.get("torch") or {}).get("version") or ("not installed" if "packages" in env else None)
    return Facts(
        name=bundle.root, file=Path(bundle.path).name, sha256=bundle.sha256,
        triton=str(res.triton or (m.get("stack") or {}).get("triton") or "?"),
        stack=str((m.get("stack") or {}).get("name") or "?"), profile=str(profile.get("key", "?")),
        profile_name=str(profile.get("name", "?")), arch=_target(bundle, res) or str(profile.get("arch", "?")),
        mode=str(m.get("mode") or res.mode or "?"), gpu=gpu_name,
        driver=gpu.get("driver") if gpu.get("available") else None,
        cuda=_cuda(gpu.get("cuda_driver")) if gpu.get("available") else None, ptxas=ptxas,
        torch=torch, python=(env.get("python") or {}).get("version"),
        os=osi.get("distro") or osi.get("system"),
    )


_TARGET = re.compile(rb"^\.target\s+(sm_\w+)", re.M)


def _target(bundle: Bundle, results: Results) -> str | None:
    """The exact target the PTX was compiled for (`sm_90a`, not the profile's `sm_90`): the first
    case whose PTX the bundle holds says it."""
    for c in results.cases:
        rel = c.artifacts.get("ptx")
        if not rel:
            continue
        try:
            m = _TARGET.search(bundle.read(rel)[:4096])
        except KeyError:
            continue
        if m:
            return m.group(1).decode()
    return None


def _labels(fs: list[Facts]) -> list[Facts]:
    """Column headers: 'triton X' where that tells the bundles apart, else with the stack's name,
    else numbered."""

    short = [f"triton {f.triton}" for f in fs]
    if len(set(short)) < len(short):
        short = [s if f.stack in ("local", "?") else f"{s} ({f.stack})" for s, f in zip(short, fs)]
    out = []
    for i, (s, f) in enumerate(zip(short, fs)):
        out.append(replace(f, label=s if short.count(s) == 1 else f"{s} #{short[:i + 1].count(s)}"))
    return out


@dataclass(frozen=True)
class Inputs:
    bundles: tuple      # Bundle, in the order given
    facts: tuple        # Facts, same order


def open_inputs(paths: Sequence[Path], *, mixed_profiles: bool = False) -> Inputs:
    """Open and verify every bundle (the reader's errors pass through: exit 2 for a file that is
    not a bundle, 1 for an invalid one); refuse bundles of different GPU profiles unless asked,
    and the same bundle twice."""
    if not paths:
        raise UsageError("report needs at least one bundle")
    bundles = [open_bundle(Path(p), keep=_wanted) for p in paths]
    seen: dict = {}
    for b in bundles:
        if b.sha256 in seen:
            raise UsageError(f"{b.path} and {seen[b.sha256]} are the same bundle (sha256 {b.sha256[:12]}...)")
        seen[b.sha256] = b.path
    fs = _labels([facts(b) for b in bundles])
    profiles = sorted({f.profile for f in fs})
    if len(profiles) > 1 and not mixed_profiles:
        which = "; ".join(f"{f.file}: {f.profile}" for f in fs)
        raise UsageError(f"the bundles are for different GPU profiles ({which}); "
                         "pass --mixed-profiles to report them side by side")
    return Inputs(tuple(bundles), tuple(fs))
