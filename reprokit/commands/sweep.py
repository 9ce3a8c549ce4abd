"""`reprokit sweep SPEC`: compile a sweep's grid on its stacks and GPU profiles, one bundle per
stack and profile with the answers (sweep.json), a table of them printed per release; and
`--merge` of shard bundles of one sweep into one bundle."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table

from reprokit import locks
from reprokit.commands._common import EXECUTORS, add_project_arg, console, default_workers, say
from reprokit.commands.argtypes import (
    existing_file,
    gpu_list,
    out_dir,
    positive_int,
    shard,
    stack_list,
    sweep_spec,
)
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.gpu import choose_gpu
from reprokit.options import BundleOptions, Listener
from reprokit.sweep import measured
from reprokit.sweep.merge import merge_shards
from reprokit.sweep.run import SweepOptions, run_sweep, targets
from reprokit.sweep.spec import load_spec, parse_shard
from reprokit.userspec import sweeps as user_sweeps
from reprokit.userspec.plan import stage_kernels
from reprokit.userspec.project import for_run


def add_parser(sub) -> None:
    p = sub.add_parser(
        "sweep", help="compile a sweep's grid (axes x values x stacks x GPUs) and answer where verdicts flip",
        description="SPEC is a TOML file, a [[sweep]] of the project's reprokit.toml (its base one of the "
                    "project's declared cases: docs/user-cases.md), or the name of a shipped sweep (kernels/sweeps/: "
                    "tma-invariants, gemm-configs). Each point is a case like the suite's: its own process, timeout, oracle "
                    "verdict, shared memory against the profile. Points stream to --work as they finish; "
                    "running the same command again resumes there. One bundle per stack and GPU profile, "
                    "with sweep.json holding the boundaries per axis, failing passes and the shared-memory "
                    "frontier.",
        epilog="example: reprokit sweep tma-invariants --stacks triton-3.5-cu130 --executor venv --workers 2 --reduced",
    )
    p.add_argument("spec", nargs="?", type=sweep_spec,
                   help="TOML file, a sweep the project's reprokit.toml declares, or a shipped sweep's name")
    add_project_arg(p)
    p.add_argument("--stacks", type=stack_list, default=None, help="only these stacks (comma-separated; default: the spec's)")
    p.add_argument("--gpus", type=gpu_list, default=None, help="only these GPU profiles (comma-separated; default: the spec's)")
    p.add_argument("--mode", choices=("compile-only", "gpu"), default="compile-only",
                   help="compile-only (default), or gpu: also launch every point that compiles on this host's GPU, "
                        "check it and time it against cuBLAS (docs/sweeps.md, On the GPU)")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="where stacks run (default venv; with --mode gpu, local: this interpreter, whose Triton and "
                        "torch run on the GPU). local runs only with --mode gpu: compile-only sweeps run on pinned stacks")
    p.add_argument("--workers", type=positive_int, default=None, help="points compiled at once (default: CPU count)")
    p.add_argument("--reduced", action="store_true", help="the spec's reduced grid (what CI runs)")
    p.add_argument("--shard", type=shard, default=None, metavar="I/N", help="run only shard I of N (points dealt round-robin)")
    p.add_argument("--sass", choices=("all", "base", "none"), default=None,
                   help="SASS per point: all, base (base and named points; default) or none")
    p.add_argument("--work", type=out_dir, default=Path("bundles/.sweeps"),
                   help="folder for resumable per-point records (default bundles/.sweeps)")
    p.add_argument("--out", type=out_dir, default=Path("bundles"), help="folder for the bundles (default bundles/)")
    p.add_argument("--merge", nargs="+", type=existing_file, metavar="BUNDLE", default=None,
                   help="merge shard bundles of one sweep, stack and GPU into one bundle under --out")
    p.add_argument("--share", action="store_true", help="also scrub host name, user, home paths and GPU serials")
    p.add_argument("--json", action="store_true", help="print the outcome as JSON")
    p.set_defaults(func=run)


# What only a sweep run reads: with --merge each would be ignored, so each is refused.
_RUN_ONLY = (("spec", "a SPEC"), ("project", "--project"), ("stacks", "--stacks"), ("gpus", "--gpus"), ("shard", "--shard"),
             ("sass", "--sass"), ("reduced", "--reduced"), ("executor", "--executor"))


class _Points(Listener):
    """One bar per sweep target. No bar, no points: the sweep's watcher would stat every
    point's folder twice a second for nobody."""

    def __init__(self, bar: Progress) -> None:
        self.bar = bar
        self.tasks: dict[str, TaskID] = {}
        self.hears_points = not bar.disable

    def points(self, key: str, done: int, total: int, state: str) -> None:
        if key not in self.tasks:
            self.tasks[key] = self.bar.add_task(key, total=total or None, state=state)
        self.bar.update(self.tasks[key], completed=done, total=total or None, state=state)


def run(args) -> int:
    if args.merge:
        given = [name for dest, name in _RUN_ONLY if getattr(args, dest)]
        if given:
            raise UsageError(f"--merge packs finished shard bundles; {', '.join(given)} would be ignored: "
                             f"give either a sweep to run or --merge BUNDLES")
        return _merge(args)
    if not args.spec:
        raise UsageError("give a sweep spec (a TOML file or one of the shipped names), or --merge BUNDLES")

    project = for_run(args.project)
    if project is not None and args.spec in user_sweeps.declared(project) and not args.spec.endswith(".toml"):
        # A sweep of the project's own: its kernels staged where the sweep's work folder copies them.
        with locks.scratch(args.host.tmp, "kernels") as kernels:
            stage_kernels(project, kernels)
            return _run(args, user_sweeps.load(project, args.spec, str(kernels)))
    return _run(args, load_spec(args.spec))


def _run(args, spec) -> int:
    cfg = load_config()
    executor_name = args.executor or ("local" if args.mode == "gpu" else "venv")
    host_stack = None
    if executor_name == "local":
        if args.mode != "gpu":
            raise UsageError("--executor local runs a sweep on this interpreter's own Triton, which only --mode gpu "
                             "does; compile-only sweeps run on the spec's pinned stacks (--executor venv or docker)")
        if args.stacks:
            raise UsageError("--executor local runs this interpreter's own Triton; --stacks needs venv or docker")
        host_stack = local_stack()
    # Names checked at the door (argtypes); 'all' is every stack the spec names, as no --stacks is.

    def split(s):
        return tuple(x.strip() for x in s.split(",") if x.strip()) if s and s != "all" else ()

    opts = SweepOptions(work=args.work, workers=default_workers(args.workers), gpus=split(args.gpus), stacks=split(args.stacks),
                        reduced=args.reduced, shard=parse_shard(args.shard), sass=args.sass, mode=args.mode,
                        host_stack=host_stack)
    bundle = BundleOptions.from_host(args.host, args.out, share=args.share)
    chosen = targets(spec, cfg, opts)
    if args.mode == "gpu":
        # This host's GPU checked against each chosen profile, once, before anything runs.
        checked = {p.key: choose_gpu(p, "gpu", args.host.environ)[0] for p, _ in chosen}
        opts = dataclasses.replace(opts, gpu=tuple(checked.values()))
    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                   TextColumn("{task.fields[state]}"), TimeElapsedColumn(), console=console(),
                   disable=args.json or not console().is_terminal)
    with make_executor(executor_name, args.host, with_torch=args.mode == "gpu", report=say,
                       stacks=[s for _, s in chosen]) as executor, bar:
        outcomes = run_sweep(spec, cfg, opts, bundle, executor, listener=_Points(bar))
    if args.json:
        print(json.dumps({"sweep": spec.name, "outcomes": [
            {"stack": o.stack, "gpu": o.gpu, "bundle": str(o.bundle) if o.bundle else None, "error": o.error,
             "ran": o.ran, "answers": o.answers} for o in outcomes]}, indent=1))
    else:
        print_answers([o.answers for o in outcomes if o.answers], f"sweep {spec.name}")
        for o in outcomes:
            say(f"{o.stack}/{o.gpu}: {o.bundle} ({o.ran} points compiled by this run)" if o.ok
                else f"{o.stack}/{o.gpu}: FAILED: {o.error}")
    return 0 if all(o.ok for o in outcomes) else 3


def answer_rows(answers: list[dict]) -> tuple[list[str], list[tuple[str, list[str]]]]:
    """(column per stack/GPU, [(row, cells)]): per axis the boundary, per product group its failures."""
    cols = [f"{a['triton']} {a['gpu']}" for a in answers]
    rows, cells = [], {}
    for i, a in enumerate(answers):
        for g in a["groups"]:
            if g["vary"] == "one-at-a-time":
                items = [(f"{g['group']}: base", _base_cell(g))]
                items += [(f"{g['group']}: {ax['axis']}", _axis_cell(ax)) for ax in g["axes"]]
            else:
                items = [(f"{g['group']}: failures", _product_cell(g))]
                items += [(f"{g['group']}: {h['name']}", "holds" if h["holds"] else
                           f"no: {h['failing_selected']}/{h['selected']} fail, {h['failing_outside']} outside")
                          for h in g["hypotheses"]]
                fr = g.get("frontier")
                if fr:
                    items.append((f"{g['group']}: smem > {fr['limit']}", f"{fr['too_big']} of {fr['compiled']}"))
                items += _gpu_items(g)
            for row, text in items:
                if row not in cells:
                    rows.append(row)
                    cells[row] = [""] * len(answers)
                cells[row][i] = text
    return cols, [(r, cells[r]) for r in rows]


def _gpu_items(g: dict) -> list[tuple[str, str]]:
    """A GPU sweep's rows: what launched, the best config per size, each named config per size
    (the config-fix proposal's conservative vs aggressive table) and the proposal's answer."""
    m = g.get("gpu")
    if not m:
        return []
    name = g["group"]
    items = [(f"{name}: launched", ", ".join(f"{n} {s}" for s, n in m["statuses"].items()))]
    for f in m["failures"]:
        how = f"{f['resource']} " if f["resource"] else ""
        rule = f["rule"]["text"] if f["rule"]["exact"] else f"~{f['rule']['text']}"
        items.append((f"{name}: {f['status']}", f"{f['count']} ({how}when {rule})"))
    for b in m["best"]:
        t = b["best"]
        items.append((f"{name}: best at {b['size']}", "-" if t is None else
                      f"{t['id'].split('.', 1)[-1]}: {100 * t['of_cublas']:.1f}% of cuBLAS"
                      + (f" ({t['tflops']:.0f} TFLOP/s)" if t.get("tflops") else "")))
    for b in m["best"]:
        for n in m["named"]:
            items.append((f"{name}: {n['name']} at {b['size']}", measured.cell(n, b["size"])))
    items.append((f"{name}: proposal", m["proposal"]["answer"]))
    return items


def _base_cell(g: dict) -> str:
    b = g.get("base")
    return "-" if not b else (b["verdict"] if b["status"] in ("ok", "unsupported") else f"{b['status']}")


def _axis_cell(ax: dict) -> str:
    if not ax["flips"]:
        return f"no flip ({len(ax['tried'])} tried)"
    parts = []
    for side in ("below", "above"):
        r = ax["boundary"][side]
        if r:
            parts.append(f"{r['label']}: {r['verdict'] if r['status'] == 'ok' else r['status']}")
    return "; ".join(parts)


def _product_cell(g: dict) -> str:
    if not g["failures"]:
        return f"none of {g['points']}" if g.get("frontier") else "unsupported"
    f = g["failures"][0]
    more = f" (+{len(g['failures']) - 1} kinds)" if len(g["failures"]) > 1 else ""
    where = f" in {f['failing_pass']}" if f["failing_pass"] else ""
    rule = f["rule"]["text"] if f["rule"]["exact"] else f"~{f['rule']['text']}"
    return f"{f['count']} {f['status']}{where} when {rule}{more}"


def print_answers(answers: list[dict], title: str) -> None:
    if not answers:
        return
    cols, rows = answer_rows(answers)
    t = Table(title=title)
    t.add_column("group: axis", no_wrap=True)
    for c in cols:
        t.add_column(c)
    for row, cells in rows:
        t.add_row(row, *cells)
    console().print(t)


def _merge(args) -> int:
    path, answers = merge_shards(args.merge, BundleOptions.from_host(args.host, args.out, share=args.share),
                                 args.host.tmp)
    if args.json:
        print(json.dumps({"bundle": str(path), "answers": answers}, indent=1))
    else:
        print_answers([answers], f"merged sweep {answers['sweep']}")
        say(f"merged {len(args.merge)} shards: {path}")
    return 0
