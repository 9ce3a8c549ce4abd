"""A wheelhouse for a GPU host with no network: reprokit's own wheel and every wheel its host side
needs (jsonschema, rich, docker, nvidia-ml-py, ... and their dependencies), downloaded with pip
on a connected machine for the target's Python and platform. Triton and torch are not in it: a
local run uses the machine's own. docs/offline.md says how to install from it.
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from reprokit import locks, proc
from reprokit.config import PACKAGE_DIR, load_toml
from reprokit.errors import ExecutorError, FileSystemError, OutputExists, UsageError

PIP_TIMEOUT_S = 1800
# What pip needs to install reprokit's own wheel and its test extra with --no-index.
BUILD_TOOLS = ("setuptools>=68", "wheel")


# The extras `make` installs beside the base (docker-py, nvidia-ml-py, pytest, matplotlib).
DEFAULT_EXTRAS = ("docker", "gpu", "html", "test")
EXTRAS_FILE = "extras.txt"


@dataclass(frozen=True)
class WheelhouseOptions:
    """out: the folder to fill; python_version ("3.12") and platforms (pip platform tags such as
    "manylinux_2_28_x86_64") describe the GPU host, default this machine; extras: pyproject's
    optional dependencies to add (never `triton`: the GPU host brings its own)."""

    out: Path
    python_version: str | None = None
    platforms: tuple = ()
    extras: tuple = DEFAULT_EXTRAS


def checkout() -> Path:
    """The checkout this reprokit runs from: its pyproject.toml declares the requirements, and its
    sources build reprokit's own wheel (an installed wheel carries neither)."""
    root = PACKAGE_DIR.parent
    if not (root / "pyproject.toml").is_file():
        raise UsageError("reprokit wheelhouse builds reprokit's own wheel from its checkout, and this reprokit "
                         f"is installed ({PACKAGE_DIR}): run it from a checkout, as python -m reprokit wheelhouse")
    return root


def requirements(root: Path | None = None, extras: tuple = DEFAULT_EXTRAS) -> list[str]:
    """The host side's requirements, as pyproject.toml declares them (with their markers)."""
    project = load_toml((root or checkout()) / "pyproject.toml").get("project", {})
    optional = project.get("optional-dependencies", {})
    unknown = [e for e in extras if e not in optional or e == "triton"]
    if unknown:
        raise UsageError(f"no extra {unknown[0]!r} to put in a wheelhouse; known: "
                         f"{', '.join(sorted(set(optional) - {'triton'}))}")
    reqs = list(project.get("dependencies", []))
    for extra in extras:
        reqs += optional[extra]
    return reqs


def download_argv(opts: WheelhouseOptions, reqs: list[str], python: str = sys.executable) -> list[str]:
    argv = [python, "-m", "pip", "download", "--disable-pip-version-check", "--dest", str(opts.out)]
    if opts.python_version or opts.platforms:
        # pip resolves for another interpreter only from wheels (it cannot run a foreign sdist's build).
        argv.append("--only-binary=:all:")
        if opts.python_version:
            argv += ["--python-version", opts.python_version]
        for tag in opts.platforms:
            argv += ["--platform", tag]
    return argv + [*reqs, *BUILD_TOOLS]


# What a copy of the checkout leaves out when reprokit's wheel is built from it: setuptools'
# build/ keeps modules since deleted (a wheel built beside it ships them), and the rest is big
# or not the package's.
_NOT_SOURCES = shutil.ignore_patterns(".git", "build", "dist", "*.egg-info", ".reprokit", "bundles", "__pycache__",
                                      ".pytest_cache", ".mypy_cache", ".ruff_cache", "*.pyc")


def make(opts: WheelhouseOptions, echo=None, tmp: Path | None = None) -> list[Path]:
    """Fill opts.out with the wheels; return them, sorted. Needs a package index (a connected machine).
    reprokit's own wheel is built from a copy of the checkout in a scratch folder under `tmp`
    (HostEnv.tmp), so the checkout gets no build/ and the wheel holds only today's modules."""
    root = checkout()
    if opts.out.exists() and not opts.out.is_dir():
        raise UsageError(f"{opts.out} exists and is not a folder")
    # extras.txt is rewritten only in a folder an earlier wheelhouse marked as its own.
    if (opts.out / EXTRAS_FILE).exists() and not locks.marked(opts.out, "wheelhouse"):
        raise OutputExists(f"{opts.out / EXTRAS_FILE}: exists and is not a wheelhouse's; it was left as it is "
                           "(choose another --out)")
    opts.out.mkdir(parents=True, exist_ok=True)
    with locks.scratch(tmp or opts.out, "wheel-src") as scratch:
        src = scratch / "src"
        try:
            shutil.copytree(root, src, ignore=_NOT_SOURCES)
        except (OSError, shutil.Error) as e:
            raise FileSystemError(f"{scratch}: cannot copy the checkout to build reprokit's wheel: {e}") from None
        steps = [
            (download_argv(opts, requirements(root, opts.extras)), "download the host side's wheels"),
            # reprokit's own wheel is pure Python: one build serves every target.
            ([sys.executable, "-m", "pip", "wheel", "--disable-pip-version-check", "--no-deps", "--wheel-dir",
              str(opts.out.absolute()), str(src)], "build reprokit's wheel"),
        ]
        for argv, what in steps:
            r = proc.run(argv, timeout=PIP_TIMEOUT_S, echo=echo)
            if not r.ok:
                why = "timed out" if r.timed_out else (proc.tail(r.stderr_tail, 1) or f"exited {r.returncode}")
                raise ExecutorError(f"cannot {what}: pip {why}")
    # The Makefile installs the extras this names (WHEELHOUSE=...), so it never asks the folder
    # for a wheel it was not made with.
    (opts.out / EXTRAS_FILE).write_text(",".join(opts.extras) + "\n")
    locks.mark(opts.out, "wheelhouse")
    return sorted(opts.out.glob("*.whl"))
