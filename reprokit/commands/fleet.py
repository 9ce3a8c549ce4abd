"""`reprokit fleet submit|status|collect|cancel|render|task`: one frozen plan bundle over
(stack x GPU profile x shard) as a Slurm job array, and its bundles collected into one grid."""

from __future__ import annotations

import json
import sys

from reprokit import locks
from reprokit.bundle.reader import open_bundle
from reprokit.commands._common import console, say
from reprokit.commands.argtypes import (
    env_name,
    existing_dir,
    existing_file,
    gpu_list,
    gpu_profile,
    image_ref,
    k8s_name,
    natural,
    out_dir,
    positive_int,
    stack_list,
)
from reprokit.compare.render import grid_table
from reprokit.config import load_config
from reprokit.errors import OutputExists, UsageError
from reprokit.fleet import k8s, slurm, state, task
from reprokit.fleet.collect import collect
from reprokit.fleet.k8s import profile_task
from reprokit.fleet.spec import load_fleet
from reprokit.fleet.status import counts, status
from reprokit.fleet.task import resubmit
from reprokit.fleet.task import run_task as run_one
from reprokit.options import quiet


def add_parser(sub) -> None:
    p = sub.add_parser(
        "fleet", help="run a plan over many GPU machines through Slurm, then collect one grid",
        description="A fleet runs the plan and kernel sources of one frozen bundle (--plan) on every chosen stack "
                    "and GPU profile (and shard), one Slurm array task each, writing bundles into a folder every "
                    "node shares. status says where each task stands, collect verifies and merges the bundles.",
        epilog="example: reprokit fleet submit --plan bundles/X.tgz --stacks triton-3.5-cu130,triton-3.6-cu130 "
               "--gpus h100,b200 --fleet kernels/fleets/example.toml --dir /shared/fleet-1",
    )
    verbs = p.add_subparsers(dest="fleet_verb", metavar="ACTION")
    verbs.required = True

    s = verbs.add_parser("submit", help="freeze the plan and submit one array task per stack x profile x shard",
                         epilog="example: reprokit fleet submit --plan B.tgz --stacks all --gpus h100 --dir /shared/f1")
    s.add_argument("--plan", type=existing_file, required=True, help="the bundle whose plan and kernels every task runs")
    s.add_argument("--stacks", required=True, type=stack_list, help="stacks from stacks.toml, comma-separated, or 'all'")
    s.add_argument("--gpus", required=True, type=gpu_list, help="GPU profiles from stacks.toml, comma-separated")
    s.add_argument("--dir", type=out_dir, required=True, help="a new folder on storage every node shares")
    s.add_argument("--fleet", type=existing_file, default=None, help="fleet TOML: Slurm resources per GPU profile")
    s.add_argument("--shards", type=positive_int, default=None, help="split each plan into N shards, one task each (default 1)")
    s.add_argument("--mode", choices=("auto", "compile-only", "gpu"), default="auto",
                   help="auto: on the GPU where the node has the profile's GPU, else compile-only")
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=run_submit)

    st = verbs.add_parser("status", help="pending, running, done, failed or missing, per task, with Slurm's reason",
                          epilog="example: reprokit fleet status /shared/f1")
    st.add_argument("dir", type=existing_dir)
    st.add_argument("--json", action="store_true")
    st.set_defaults(func=run_status)

    c = verbs.add_parser("collect", help="verify every bundle, merge them into one grid and report",
                         epilog="example: reprokit fleet collect /shared/f1 --resubmit")
    c.add_argument("dir", type=existing_dir)
    c.add_argument("--resubmit", action="store_true", help="submit again only the tasks that failed or are missing")
    c.add_argument("--json", action="store_true")
    c.set_defaults(func=run_collect)

    k = verbs.add_parser("cancel", help="scancel every job of the fleet that still runs",
                         epilog="example: reprokit fleet cancel /shared/f1")
    k.add_argument("dir", type=existing_dir)
    k.set_defaults(func=run_cancel)

    r = verbs.add_parser("render", help="write the fleet as Kubernetes indexed Jobs, one per GPU profile",
                         epilog="example: reprokit fleet render /shared/f1 --k8s --image registry/reprokit:1 "
                                "--claim fleet-pvc --out k8s/")
    r.add_argument("dir", type=existing_dir)
    r.add_argument("--k8s", action="store_true", required=True, help="Kubernetes (the one renderer today)")
    r.add_argument("--image", required=True, type=image_ref, help="container image with reprokit and the stack")
    r.add_argument("--claim", required=True, type=k8s_name, help="PersistentVolumeClaim that holds the fleet folder")
    r.add_argument("--out", type=out_dir, required=True, help="folder for the manifests")
    r.set_defaults(func=run_render)

    t = verbs.add_parser("task", help="run one task of a fleet here (what each Slurm array task runs)",
                         epilog="example: reprokit fleet task /shared/f1 --index-from-env SLURM_ARRAY_TASK_ID")
    t.add_argument("dir", type=existing_dir)
    t.add_argument("index", nargs="?", type=natural, default=None)
    t.add_argument("--of-profile", type=gpu_profile, default=None, help="INDEX counts only this profile's tasks (Kubernetes)")
    t.add_argument("--index-from-env", type=env_name, default=None, metavar="VAR", help="read INDEX from this variable")
    t.set_defaults(func=run_task)


def _split(text: str, what: str) -> list[str]:
    names = [n.strip() for n in text.split(",") if n.strip()]
    if not names:
        raise UsageError(f"--{what} {text!r} names nothing")
    return names


def run_submit(args) -> int:
    cfg = load_config()
    stacks = cfg.select_stacks("all" if args.stacks == "all" else ",".join(_split(args.stacks, "stacks")))
    profiles = [cfg.gpu(k) for k in _split(args.gpus, "gpus")]
    spec = load_fleet(args.fleet, known_profiles=tuple(cfg.gpus))
    # The plan first: its size bounds the shards before the tasks are listed.
    plan = open_bundle(args.plan, keep=lambda rel: False)
    shards = task.parse_shards(args.shards)
    task.check_shards(plan.plan, shards)
    tasks = task.plan_tasks(stacks, profiles, shards)
    fleet = task.submit(args.dir, args.plan, tasks, spec, args.mode, report=say if not args.json else quiet,
                        bundle=plan)
    if args.json:
        print(json.dumps({"dir": str(fleet.dir), "plan_sha256": fleet.plan_sha256,
                          "jobs": [j.to_dict() for j in fleet.jobs], "tasks": [t.to_dict() for t in fleet.tasks]},
                         indent=1))
    else:
        say(f"fleet of {len(fleet.tasks)} task(s) in {fleet.dir}: `reprokit fleet status {fleet.dir}`")
    return 0


def run_status(args) -> int:
    statuses = status(state.load(args.dir))
    if args.json:
        print(json.dumps({"counts": counts(statuses), "tasks": [s.to_dict() for s in statuses]}, indent=1))
    else:
        _print_statuses(statuses, f"fleet {args.dir}")
    return 0


def run_collect(args) -> int:
    fleet = state.load(args.dir)
    report = quiet if args.json else say
    done = collect(fleet, report=report)
    resubmitted = []
    if args.resubmit:
        redo = [s.index for s in done.statuses if s.state in ("failed", "missing")]
        if redo:
            resubmit(fleet, redo, report=report)
            resubmitted = redo
    if args.json:
        print(json.dumps({**done.to_dict(), "resubmitted": resubmitted}, indent=1))
    else:
        _print_statuses(done.statuses, f"fleet {args.dir}")
        if done.grid is not None:
            console().print(grid_table(done.grid, f"fleet {args.dir}: {len(done.bundles)} verified bundle(s)"))
        for p in done.problems:
            say(p)
        if resubmitted:
            say(f"resubmitted task(s) {','.join(map(str, resubmitted))}")
        say(f"grid: {args.dir / 'grid.json'}" + (f", report: {args.dir / 'report.md'}" if done.bundles else ""))
    # 0 only for a complete fleet: what failed or is missing is named above.
    return 0 if done.complete else 1


def run_cancel(args) -> int:
    fleet = state.load(args.dir)
    slurm.cancel([j.job_id for j in fleet.jobs])
    say(f"cancelled job(s) {', '.join(j.job_id for j in fleet.jobs)}")
    return 0


def run_render(args) -> int:
    manifests = k8s.render(state.load(args.dir), args.image, args.claim)
    # A manifest is rewritten only in a folder an earlier render marked as its own.
    taken = sorted(n for n in manifests if (args.out / n).exists())
    if taken and not locks.marked(args.out, "k8s-render"):
        raise OutputExists(f"{args.out}: holds {', '.join(taken)}, which fleet render did not write; "
                           "they were left as they are (choose another --out)")
    args.out.mkdir(parents=True, exist_ok=True)
    for name, doc in manifests.items():
        state.write_json(args.out / name, doc)
        say(f"{args.out / name}")
    locks.mark(args.out, "k8s-render")
    return 0


def run_task(args) -> int:
    index = args.index
    if args.index_from_env and index is not None:
        raise UsageError(f"fleet task: give INDEX ({index}) or --index-from-env {args.index_from_env}, not both")
    if args.index_from_env:
        raw = args.host.environ.get(args.index_from_env)
        if raw is None or not raw.isdigit():
            raise UsageError(f"${args.index_from_env} is {raw!r}, not a task index")
        index = int(raw)
    if index is None:
        raise UsageError("fleet task needs INDEX (or --index-from-env VAR)")
    if args.of_profile:
        index = profile_task(state.load(args.dir), args.of_profile.key, index)
    return run_one(args.dir, index, args.host, load_config(), report=say)


def _print_statuses(statuses, title: str) -> None:
    from rich.table import Table

    style = {"done": "green", "failed": "red", "missing": "red", "running": "cyan", "pending": "yellow"}
    t = Table(title=title)
    for col in ("task", "stack@gpu", "state", "slurm", "reason", "tries"):
        t.add_column(col, no_wrap=col != "reason")
    for s in statuses:
        t.add_row(str(s.index), s.label, f"[{style[s.state]}]{s.state}[/]", s.slurm_state or "-",
                  s.reason or "", str(s.attempts))
    console().print(t)
    sys.stdout.flush()
