"""The `reprokit` command line: argparse only. Each verb is a module in reprokit.commands with
`add_parser(subparsers)` and `run(args) -> int`; only `main()` turns errors into exit codes."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from reprokit.config import use_project, use_root
from reprokit.errors import FileSystemError, Interrupted, ReprokitError
from reprokit.options import HostEnv
from reprokit.parser import build_parser
from reprokit.userspec.project import PROJECT_FILE, find

_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum, frame):
    # The first signal stops the run; later ones are ignored, so that the clean-up it set off
    # (removing half-written output, killing the harness) is not itself cut short.
    for s in _STOP_SIGNALS:
        signal.signal(s, signal.SIG_IGN)
    raise Interrupted(signum)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    # SIGTERM and SIGHUP stop a run the way Ctrl-C does: every clean-up on the way out runs.
    # (The handlers before us come back at the end: main() is also called in-process, by tests.)
    before = {s: signal.signal(s, _raise_interrupted) for s in _STOP_SIGNALS}
    as_json = "--json" in argv
    try:
        # The one place the environment is read: verbs hand what they need down as options.
        # Read before the arguments, whose types check stack and GPU names against stacks.toml:
        # REPROKIT_ROOT's, and the user's reprokit.toml's own.
        host = HostEnv.from_environ(os.environ)
        use_root(host.root)
        use_project(_project_file(argv))
        args = build_parser().parse_args(argv)
        args.host = host
        return args.func(args)
    except ReprokitError as e:
        return _fail(str(e), getattr(e, "problems", None) or [str(e)], e.exit_code, as_json)
    except OSError as e:
        # The OS refused a file that no layer below named more precisely: still one line, exit 5.
        fs = FileSystemError.of(getattr(e, "filename", None) or "reprokit", e)
        return _fail(str(fs), None, fs.exit_code, as_json)
    except KeyboardInterrupt as e:
        signum = getattr(e, "signum", signal.SIGINT)
        return _fail(f"interrupted by {signal.Signals(signum).name}; what this run had half-written was removed",
                     None, 128 + signum, as_json)
    finally:
        for s, handler in before.items():
            signal.signal(s, handler if handler is not None else signal.SIG_DFL)


def _project_file(argv: list[str]):
    """The reprokit.toml the run uses: --project's (when it names one), else the nearest from the
    current folder up, else None. A --project that names nothing is left to its argument type."""
    for i, word in enumerate(argv):
        if word == "--":
            break
        given = argv[i + 1] if word == "--project" and i + 1 < len(argv) else \
            word.split("=", 1)[1] if word.startswith("--project=") else None
        if given is not None:
            p = Path(given)
            p = p / PROJECT_FILE if p.is_dir() else p
            return p.absolute() if p.is_file() else None
    return find(Path.cwd())


def _fail(message: str, problems: list[str] | None, code: int, as_json: bool) -> int:
    """One line per problem on stderr; under --json, the same as one JSON object on stdout."""
    for p in problems or [message]:
        print(f"reprokit: {p}", file=sys.stderr)
    if as_json:
        print(json.dumps({"error": message, "exit_code": code, "problems": problems or [message]}, indent=1))
    return code
