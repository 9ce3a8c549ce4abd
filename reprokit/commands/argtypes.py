"""The typed values of the command line: argparse `type=` callables, one per kind of value.

Each checks its value at the door, so that a bad one stops before anything runs: argparse turns
an ArgumentTypeError into "argument --X: <why>", which `cli.main()` prints as one line with exit
2; trouble with the operating system (a folder reprokit may not write) is a FileSystemError,
exit 5. The callable's name is the value's type in the CLI reference (docs/cli.md) and picks its
rule in the bad-argument suite (tests/unit/test_bad_arguments.py): a new option takes one of
these, or a new one with a rule there.

Paths come back as `Path`, numbers as numbers, comma lists as the same text with the blanks
around names removed, so that verbs read them as they always did.
"""

from __future__ import annotations

import argparse
import errno
import functools
import math
import os
import re
from pathlib import Path

# Imported here, not when a type is first called: cli.build_parser() imports every verb, and
# the verbs these, so parsing costs nothing more.
from reprokit.bundle.reader import parse_size
from reprokit.compare.metric import parse_metric
from reprokit.config import GpuProfile, load_config
from reprokit.errors import FileSystemError, UsageError
from reprokit.gpu import lock_clocks_value
from reprokit.run.bisect import parse_range
from reprokit.sweep.spec import parse_shard, resolve
from reprokit.userspec.sweeps import project_sweep

Bad = argparse.ArgumentTypeError


# --- paths -------------------------------------------------------------------------------------

def _os_trouble(check):
    """A path check whose stat() the OS refuses (a folder on the way that may not be entered)
    says so as a FileSystemError (exit 5), not a traceback; the name stays the check's."""

    @functools.wraps(check)
    def guarded(text: str):
        try:
            return check(text)
        except OSError as e:
            raise FileSystemError.of(text, e, "cannot look at it") from None

    return guarded


def _path(text: str) -> Path:
    if not text.strip():
        raise Bad("an empty path (name a file or folder; '.' is the current folder)")
    return Path(text)


@_os_trouble
def existing_file(text: str) -> Path:
    """A file that must exist (a bundle, a key, a TOML file)."""
    p = _path(text)
    if p.is_dir():
        raise Bad(f"{text}: is a folder, not a file")
    if not p.exists():
        raise Bad(f"{text}: no such file")
    return p


def judged_file(text: str) -> Path:
    """A file that a verb judges (verify): missing, a folder or not a bundle is its verdict, exit 2
    in its own output (--json included), so only an empty path is refused here."""
    return _path(text)


@_os_trouble
def key_file(text: str) -> Path:
    """A private key file that must exist; one under '~' (the user's home, as in ssh) is looked
    for by the verb, which knows the home from the environment it was given."""
    return _path(text) if text.startswith("~") else existing_file(text)


@_os_trouble
def existing_dir(text: str) -> Path:
    """A folder that must exist (a capture folder, a fleet folder)."""
    p = _path(text)
    if not p.exists():
        raise Bad(f"{text}: no such folder")
    if not p.is_dir():
        raise Bad(f"{text}: is a file, not a folder")
    return p


@_os_trouble
def existing_path(text: str) -> Path:
    """A file or a folder that must exist (a bundle or a capture folder)."""
    p = _path(text)
    if not p.exists():
        raise Bad(f"{text}: no such file or folder")
    return p


def _writable_ancestor(p: Path, text: str, what: str) -> None:
    """The nearest existing folder above (or at) `p` must be a folder this process may write."""
    q = p
    while not q.exists() and q != q.parent:
        q = q.parent
    if not q.exists():
        q = Path(".")
    if not q.is_dir():
        raise Bad(f"{text}: {q} is a file, so no {what} can be made there")
    if not os.access(q, os.W_OK | os.X_OK, effective_ids=os.access in os.supports_effective_ids):
        raise FileSystemError(f"{text}: cannot write in {q}: {_why_unwritable(q)}")


def _why_unwritable(q: Path) -> str:
    """The OS's own words for a folder this process may not write: a read-only mount says so."""
    try:
        if os.statvfs(q).f_flag & os.ST_RDONLY:
            return os.strerror(errno.EROFS)
    except OSError:
        pass
    return os.strerror(errno.EACCES)


@_os_trouble
def out_dir(text: str) -> Path:
    """A folder to write into, made when missing: not a file, under a folder this process may write."""
    p = _path(text)
    if p.exists() and not p.is_dir():
        raise Bad(f"{text}: is a file, not a folder")
    _writable_ancestor(p, text, "folder")
    return p


@_os_trouble
def out_file(text: str) -> Path:
    """A file to write: not a folder, in a folder that exists and this process may write."""
    p = _path(text)
    if p.is_dir():
        raise Bad(f"{text}: is a folder; name a file")
    if not p.parent.is_dir():
        raise Bad(f"{text}: the folder {p.parent} does not exist" if not p.parent.exists()
                  else f"{text}: {p.parent} is a file, not a folder")
    _writable_ancestor(p.parent, text, "file")
    return p


# --- numbers -----------------------------------------------------------------------------------

def _int(text: str, what: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise Bad(f"{text!r} is not a whole number{what}") from None


def positive_int(text: str) -> int:
    """A whole number, 1 or more (workers, shards)."""
    n = _int(text, " (1 or more)")
    if n < 1:
        raise Bad(f"must be at least 1, got {text!r}")
    return n


def natural(text: str) -> int:
    """A whole number, 0 or more (lines of context, a task index)."""
    n = _int(text, " (0 or more)")
    if n < 0:
        raise Bad(f"must be 0 or more, got {text!r}")
    return n


def non_negative_number(text: str) -> float:
    """A finite number, 0 or more (a bisect's threshold)."""
    try:
        value = float(text)
    except ValueError:
        raise Bad(f"{text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise Bad(f"must be a finite number, 0 or more, got {text!r}")
    return value


def metric_spec(text: str) -> str:
    """What bisect follows: verdict, regs, smem, spills, tma:LEVEL or op:NAME@LEVEL."""
    try:
        parse_metric(text)
    except UsageError as e:
        raise Bad(str(e).split(": ", 1)[-1]) from None
    return text.strip()


def predicate_spec(text: str) -> str:
    """What a reduction keeps true: crash, verdict, metric:NAME, wrong or slower."""
    kind, _, rest = (text or "").strip().partition(":")
    if kind not in ("crash", "verdict", "metric", "wrong", "slower") or (kind == "metric") != bool(rest):
        raise Bad("expected crash, verdict, metric:NAME, wrong or slower")
    if kind == "metric":
        metric_spec(rest)
        if rest.strip() == "verdict":
            raise Bad("metric:verdict: use verdict")
    return text.strip()


def positive_seconds(text: str) -> float:
    """A finite number of seconds above 0 (0 or less would make every case a timeout)."""
    try:
        value = float(text)
    except ValueError:
        raise Bad(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise Bad(f"must be more than 0 seconds, got {text!r}")
    return value


def byte_size(text: str) -> str:
    """A size above 0: 1048576, 512M, 2G (powers of 1024); kept as text for Limits."""
    try:
        n = parse_size(text.strip())
    except UsageError as e:
        raise Bad(str(e)) from None
    if n <= 0:
        raise Bad(f"must be more than 0 bytes, got {text!r}")
    return text.strip()


def clock_mhz(text: str) -> str:
    """'max' or a whole number of MHz above 0 (--lock-clocks)."""
    try:
        value = lock_clocks_value(text)
    except UsageError:
        value = None
    if value is None:
        raise Bad(f"{text!r} is not 'max' or a number of MHz above 0")
    return value


def _bounded(name: str, low: float, high: float, doc: str):
    """An argparse type: a finite number in [low, high) (high may be infinite). Its name is its
    type in docs/cli.md and picks its rule in the bad-argument suite."""

    def check(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise Bad(f"{text!r} is not a number") from None
        if math.isnan(value) or not low <= value < high:
            upto = "" if math.isinf(high) else f" and below {high:g}"
            raise Bad(f"must be {low:g} or more{upto}, got {text!r}")
        return value

    check.__name__, check.__qualname__, check.__doc__ = name, name, doc
    return check


fraction = _bounded("fraction", 0, 1, "A fraction from 0 up to, not including, 1 (0.05 is 5%).")
confidence = _bounded("confidence", 0.5, 1, "A probability from 0.5 up to, not including, 1.")
microseconds = _bounded("microseconds", 0, math.inf, "A finite number of microseconds, 0 or more.")


# --- names -------------------------------------------------------------------------------------

def _names(text: str, what: str) -> list[str]:
    """A comma list: at least one name, no empty name between commas, none named twice."""
    names = [n.strip() for n in text.split(",")]
    if not any(names):
        raise Bad(f"{text!r} names no {what}")
    if not all(names):
        raise Bad(f"{text!r} has an empty name between commas")
    seen: set[str] = set()
    for n in names:
        if n in seen:
            raise Bad(f"{text!r} names {n} twice")
        seen.add(n)
    return names


def _known(names: list[str], known, what: str) -> None:
    for n in names:
        if n not in known:
            raise Bad(f"unknown {what} {n!r}; known: {', '.join(sorted(known))}")


def command_word(text: str) -> str:
    """One word of the command `trace` runs (after `--`): any text but an empty one."""
    if not text:
        raise Bad("an empty word in the command to run")
    return text


def _one_known(text: str, known, what: str) -> str:
    name = text.strip()
    if not name:
        raise Bad(f"an empty {what} name")
    _known([name], known, what)
    return name


def _known_list(text: str, known, what: str) -> str:
    names = _names(text, what)
    _known(names, known, what)
    return ",".join(names)


def gpu_profile(text: str) -> GpuProfile:
    """A GPU profile of stacks.toml (h100, b200...)."""
    config = load_config()  # the profile itself, not its key: the verbs take it as it is
    return config.gpu(_one_known(text, config.gpus, "GPU profile"))


def gpu_list(text: str) -> str:
    """GPU profiles of stacks.toml, comma-separated, each once."""
    return _known_list(text, load_config().gpus, "GPU profile")


def stack_name(text: str) -> str:
    """A stack of stacks.toml."""
    return _one_known(text, load_config().stacks, "stack")


def stack_list(text: str) -> str:
    """Stacks of stacks.toml, comma-separated, each once; or 'all'."""
    return "all" if text.strip() == "all" else _known_list(text, load_config().stacks, "stack")


def glob_list(text: str) -> str:
    """Case-id globs, comma-separated, each once (which cases they match is the verb's to say)."""
    return ",".join(_names(text, "case"))


def case_id(text: str) -> str:
    """One case id (e.g. tensor_descriptor.p0)."""
    if not text.strip() or any(ch.isspace() for ch in text.strip()):
        raise Bad(f"{text!r} is not a case id (e.g. tensor_descriptor.p0)")
    return text.strip()


def extras_list(text: str) -> str:
    """pyproject extras, comma-separated, each once; '' for none."""
    if not text.strip():
        return ""
    names = _names(text, "extra")
    for n in names:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", n):
            raise Bad(f"{n!r} is not an extra's name")
    return ",".join(names)


def version_range(text: str) -> str:
    """FIRST..LAST Triton releases, FIRST not after LAST."""
    try:
        parse_range(text)
    except UsageError as e:
        raise Bad(str(e).removeprefix("--versions ")) from None
    return text.strip()


def shard(text: str) -> str:
    """I/N with 1 <= I <= N."""
    try:
        parse_shard(text if text.strip() else "-")
    except UsageError:
        raise Bad(f"{text!r}: give I/N with 1 <= I <= N, e.g. 1/4") from None
    return text.strip()


def is_sha256(text: str) -> bool:
    return re.fullmatch(r"[0-9a-fA-F]{64}", text.strip()) is not None


def sha256_or_file(text: str) -> str:
    """A sha256 (64 hex digits) or a file that exists (a bundle); what it holds is checked later."""
    if is_sha256(text):
        return text.strip().lower()
    existing_file(text)
    return text


def python_version(text: str) -> str:
    """A Python version as X.Y (or X.Y.Z)."""
    if not re.fullmatch(r"3\.\d{1,2}(\.\d{1,2})?", text.strip()):
        raise Bad(f"{text!r} is not a Python version such as 3.12")
    return text.strip()


def platform_tag(text: str) -> str:
    """A pip platform tag (manylinux_2_28_x86_64, macosx_14_0_arm64...)."""
    if not re.fullmatch(r"[a-z][a-z0-9_.]*", text.strip()):
        raise Bad(f"{text!r} is not a pip platform tag such as manylinux_2_28_x86_64")
    return text.strip()


def env_name(text: str) -> str:
    """An environment variable's name."""
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise Bad(f"{text!r} is not an environment variable's name")
    return text


def k8s_name(text: str) -> str:
    """A Kubernetes object name (RFC 1123 label: lower case, digits and '-')."""
    if not re.fullmatch(r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?", text):
        raise Bad(f"{text!r} is not a Kubernetes name (lower case letters, digits and '-')")
    return text


def image_ref(text: str) -> str:
    """A container image reference (registry/name:tag): no blanks."""
    if not text.strip() or any(ch.isspace() for ch in text):
        raise Bad(f"{text!r} is not a container image reference such as registry/reprokit:1")
    return text


def sweep_spec(text: str) -> str:
    """A sweep spec: a TOML file, a sweep the project's reprokit.toml declares, or the name of a
    shipped sweep."""
    if not text.strip():
        raise Bad("an empty sweep spec (a TOML file or a shipped sweep's name)")
    try:
        if project_sweep(text):
            return text
        resolve(text)
    except UsageError as e:
        raise Bad(str(e)) from None
    return text
