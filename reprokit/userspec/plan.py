"""A project's declared cases as a plan (kind "call" cases, docs/user-cases.md), and its kernel
files laid out as the bundle's kernels/ folder holds them.

A project with any problem is refused with every problem listed (what `reprokit check` prints),
so nothing compiles from a half-valid file.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reprokit import locks
from reprokit.config import GpuProfile
from reprokit.errors import FileSystemError, ProjectInvalid
from reprokit.options import GpuOptions, Report, quiet
from reprokit.plan import DEFAULT_STAGES, DEFAULT_WARPS, Plan
from reprokit.suite import build_plan as build_suite_plan
from reprokit.suite import select
from reprokit.userspec.check import Findings, examine
from reprokit.userspec.project import Project

DEFAULT_TIMEOUT_S = 300.0


def checked(project: Project) -> Findings:
    """The project's report; ProjectInvalid listing every problem when there is any."""
    rep = examine(project)
    if rep.problems:
        lines = rep.lines()
        raise ProjectInvalid(f"{project.shown}: {len(lines)} problem(s) in the declared cases (reprokit check "
                             "lists them)", problems=lines)
    return rep


def plan_case(c: dict, timeout_s: float) -> dict:
    """One declared case as the plan writes it: the call as declared, normalised."""
    opts = c["call"]["options"]
    case = {
        "id": c["id"], "kind": "call", "family": c["file"].rsplit("/", 1)[-1].removesuffix(".py") or "call",
        "control": "call",
        "description": c["description"] or f"{c['source']} as reprokit.toml declares its call",
        "kernel": {"file": c["file"], "function": c["function"]},
        "call": {"args": c["call"]["args"], "grid": c["call"]["grid"], "options": dict(opts)},
        # The release's JIT derives these inside the stack (docs/user-cases.md): empty here.
        "signature": {}, "constexprs": {}, "divisible_by_16": [],
        "num_warps": int(opts.get("num_warps", DEFAULT_WARPS)), "num_stages": int(opts.get("num_stages", DEFAULT_STAGES)),
        "requires": [], "expect": c["expect"], "gated_by": None,
        "timeout_s": float(c["timeout_s"] or timeout_s),
    }
    if c["autotuned"]:
        case["configs"] = c["configs"]
    return case


def build_plan(project: Project, profile: GpuProfile | GpuOptions, stack: dict | None = None, *,
               mode: str = "compile-only", only: str | None = None, timeout_s: float | None = None,
               sass: bool = True, kernels: Path | None = None) -> Plan:
    """The plan of the project's declared cases (those matching `only`'s globs), for a GPU
    profile (or the GpuOptions of a checked GPU); `kernels`: where they are staged (stage_kernels)."""
    gpu = profile if isinstance(profile, GpuOptions) else GpuOptions(profile, mode)
    rep = checked(project)
    default = float(timeout_s or (project.raw.get("project") or {}).get("timeout_s") or DEFAULT_TIMEOUT_S)
    cases = [plan_case(c, timeout_s or default) for c in rep.cases]
    return Plan.build("project", project.name, gpu, select(cases, only), stack=stack, sass=sass,
                      timeout_s=default, kernels=kernels)


def stage_kernels(project: Project, dest: Path) -> list[str]:
    """Copy every file of the project's kernels (folders whole: a kernel's helper modules come
    along) into dest under its bundle name; return the names, sorted."""
    rep = checked(project)
    try:
        for name, src in sorted(rep.sources.items()):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / name)
    except OSError as e:
        raise FileSystemError.of(dest, e, "cannot copy the project's kernels") from None
    return sorted(rep.sources)


@contextmanager
def project_run(project: Project | None, gpu: GpuOptions, tmp: Path, report: Report = quiet, *,
                only: str | None = None, timeout_s: float | None = None) -> Iterator[Plan]:
    """The plan a run executes for `gpu`, `only`'s case globs and the case timeout: a project's
    declared cases, with its kernels staged in a scratch folder under `tmp` (removed when the run
    ends; `report` hears which project runs), or without a project the control suite."""
    if project is None:
        yield build_suite_plan(gpu, only=only, timeout_s=timeout_s)
        return
    mine = build_plan(project, gpu, only=only, timeout_s=timeout_s)
    # Said, because a reprokit.toml found above the current folder changes what runs.
    report(f"project {project.name} ({project.shown}): {len(mine)} declared case(s), not the control suite")
    with locks.scratch(tmp, "kernels") as kernels:
        stage_kernels(project, kernels)
        yield mine.with_files(kernels=kernels)
