"""The one exception tree of the host CLI; each class carries the exit code `main()` uses."""

from __future__ import annotations


class ReprokitError(Exception):
    """Base class: a failure the user can act on, printed as one line by `main()`."""

    exit_code = 1


class UsageError(ReprokitError):
    """Bad arguments or configuration (unknown GPU profile, stack, missing file)."""

    exit_code = 2


class ConfigError(UsageError):
    """stacks.toml or the suite definition is malformed."""


class ExecutorError(ReprokitError):
    """A stack could not be prepared or run (venv build, engine down, image build failure)."""

    exit_code = 3


class HarnessError(ReprokitError):
    """The in-stack harness failed as a whole (not one case: those become results)."""

    exit_code = 4


# The distribution's name (the import name and the command are `reprokit`; on the package index
# that name is an unrelated project's, so no message ever says `pip install reprokit`).
DIST = "reprokit-gpu"


class MissingDependency(UsageError):
    """A module the verb needs is not installed: one line naming it, what it does, and the extra
    that brings it (docker, gpu, html), or the base install when it is one of the base's own
    (an offline GPU host installs from a wheelhouse: docs/offline.md)."""

    def __init__(self, module: str, what: str, extra: str | None = None):
        if extra:
            how = (f"install reprokit with its {extra!r} extra: pip install '<reprokit wheel or checkout>[{extra}]' "
                   "(docs/install.md; offline, from a wheelhouse: docs/offline.md)")
        else:
            how = ("install reprokit's host side: pip install <reprokit wheel or checkout> (docs/install.md; "
                   "offline, from a wheelhouse: docs/offline.md)")
        super().__init__(f"{module} is not installed, and it {what}: {how}")
        self.module = module
        self.extra = extra


class ProjectInvalid(ConfigError):
    """A user's reprokit.toml has problems; `problems` lists one `file:line: what` line each."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class GpuMismatchError(UsageError):
    """The host has a GPU, but not the one the profile names."""


class BundleInvalid(ReprokitError):
    """A bundle failed verification; `problems` lists one line per problem."""

    exit_code = 1

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class BundleUnusable(ReprokitError):
    """The input is not a bundle at all (missing, not gzip, not tar, refused before reading)."""

    exit_code = 2


class BundleRefused(BundleUnusable):
    """The archive's structure is hostile or over the limits (traversal, links, devices, bombs):
    refused before anything of it is trusted; `problems` lists one line per refused member."""

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class CaptureInvalid(ReprokitError):
    """A capture folder cannot be bundled: a JSON file breaks its schema, or a file is missing."""

    exit_code = 1

    def __init__(self, message: str, problems: list[str] | None = None):
        super().__init__(message)
        self.problems = list(problems or [message])


class OutputBusy(UsageError):
    """Another reprokit is writing the same output (a capture folder, a bundle, a sweep point)."""


class OutputExists(UsageError):
    """The output exists and reprokit will not replace it (a different bundle under the same name,
    or a capture folder without --force)."""


class FileSystemError(ReprokitError):
    """The operating system refused to read an input or write an output (permission, no space,
    read-only file system, not a folder): one line naming the path and the reason."""

    exit_code = 5

    @classmethod
    def of(cls, path, e: OSError, doing: str = "") -> FileSystemError:
        where = getattr(e, "filename", None) or path
        return cls(f"{where}: {doing + ': ' if doing else ''}{e.strerror or e}")


class ProgramFailed(ReprokitError):
    """`reprokit trace`: the traced program exited non-zero. The bundle of what it launched before
    is still written (its failure recorded in trace/trace.json); the verb then exits with this."""

    exit_code = 6


class PredicateNotHeld(ReprokitError):
    """`reduce`: the predicate does not hold on the original case, or no longer holds on the
    reduced one rechecked from a clean run; nothing was written."""

    exit_code = 7


class NotFaithful(ReprokitError):
    """`reprokit trace`: some specialisation the program compiled was not captured faithfully (the
    capture's IR differs from the program's own compile, reprokit could not recreate it, or the
    recorder could not describe a kernel the program ran). The bundle is still written, those
    cases marked `not_reproduced` or `capture_failed` and the misses listed in trace/trace.json;
    the verb then exits with this."""

    exit_code = 8


class Interrupted(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C's KeyboardInterrupt would be, so that every
    clean-up that runs on Ctrl-C runs on them too; `main()` exits 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum
