"""`reprokit check`: every problem in a project's reprokit.toml and its kernels, one line each as
`file:line: what`, before any case compiles; exit 2 when there is any."""

from __future__ import annotations

import json

from reprokit.commands._common import say
from reprokit.commands.argtypes import existing_path
from reprokit.errors import UsageError
from reprokit.userspec.project import PROJECT_FILE, for_run
from reprokit.userspec.sweeps import examine_all


def add_parser(sub) -> None:
    p = sub.add_parser(
        "check", help="report every problem in a project's declared cases, one line each with file:line",
        description=f"Read the project's {PROJECT_FILE} (--project, else the nearest from the current folder up) "
                    "and its kernel files (parsed, never imported) and report every problem at once: unknown kernel "
                    "files or functions, parameters missing or unknown, bad dtypes, grids, options, duplicate ids, "
                    "bad expectations, and sweeps ([[sweep]]) whose base, axes or values are wrong. Exit 2 when there is any.",
        epilog="example: reprokit check --project ~/my-kernels",
    )
    p.add_argument("--project", type=existing_path, default=None, metavar="PATH",
                   help=f"the project's {PROJECT_FILE}, or its folder (default: the nearest from here up)")
    p.add_argument("--json", action="store_true", help="print the problems and the cases as JSON")
    p.set_defaults(func=run)


def run(args) -> int:
    project = for_run(args.project)
    if project is None:
        raise UsageError(f"no {PROJECT_FILE} in this folder or above it (reprokit init writes one, or give --project)")
    checked = examine_all(project)
    rep = checked.findings
    if args.json:
        print(json.dumps({"project": str(project.path), "ok": not rep.problems,
                          "problems": [{"file": w, "line": n, "message": m} for w, n, m in rep.ordered()],
                          "cases": [c["id"] for c in rep.cases] if not rep.problems else [],
                          "sweeps": sorted(checked.specs) if not rep.problems else []}, indent=1))
    else:
        for line in rep.lines():
            print(line)
        if rep.problems:
            say(f"reprokit: {len(rep.problems)} problem(s) in {project.shown}")
        else:
            sweeps = f", {len(checked.specs)} sweep(s)" if checked.specs else ""
            say(f"{project.shown}: {len(rep.cases)} case(s){sweeps}, no problem")
    return 2 if rep.problems else 0
