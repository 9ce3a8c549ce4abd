"""`reprokit reduce BUNDLE --case ID`: shrink a case's kernel and call to the few lines a maintainer
needs, while a predicate (its own failure, a verdict, a metric moved between stacks, a wrong or
slower result on a GPU) holds; the reduced case is bundled with the original as its parent."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from rich.progress import Progress, TextColumn, TimeElapsedColumn

from reprokit import locks
from reprokit.commands._common import add_gpu_args, add_project_arg, console, gpu_from_args, say
from reprokit.commands.argtypes import (
    case_id,
    existing_file,
    gpu_profile,
    non_negative_number,
    out_dir,
    positive_int,
    positive_seconds,
    predicate_spec,
    stack_list,
)
from reprokit.compare.sources import open_verified
from reprokit.config import load_config
from reprokit.errors import UsageError
from reprokit.executors import local_stack, make_executor
from reprokit.options import BundleOptions, GpuOptions
from reprokit.plan import Plan
from reprokit.reduce import driver
from reprokit.reduce.predicate import FAILED, parse
from reprokit.run.replay import bundle_stack, write_kernels, write_tensors
from reprokit.userspec.plan import build_plan, checked, stage_kernels
from reprokit.userspec.project import for_run


def add_parser(sub) -> None:
    p = sub.add_parser(
        "reduce", help="shrink a case's kernel and call while a predicate holds, and bundle the reduced case",
        description="Take a case of BUNDLE (its own plan and kernel files; a traced case too), or a declared case of "
                    "a project (--project, with --gpu), and shrink its kernel at the Python AST level while the "
                    "predicate holds: statements and blocks dropped, expressions replaced by an operand or a "
                    "constant, unused arguments dropped, helpers inlined, loops peeled, constexprs fixed, block "
                    "sizes, num_warps and num_stages made smaller, decorator lists (autotune configs) cut to one. "
                    "Each candidate compiles with the stack's own Triton in its own process, --workers at once; "
                    "results are cached by candidate digest under --work, so a killed reduce resumes, and "
                    "--time-limit stops with the best so far. The predicate: the case's own failure by default "
                    "(crash: the same failing pass and error text), verdict (each named stack's verdict kept), "
                    "metric:NAME (regs, smem, spills, tma:LEVEL, op:NAME@LEVEL moved between two stacks by at "
                    "least --threshold), wrong or slower (on a GPU, the second stack against the first). The "
                    "result is rechecked from a clean run on every stack named and bundled under --out (parent: "
                    "BUNDLE), with one line: from N lines / M AST nodes to n / m in T s, K compiles. Exit 7 when "
                    "the predicate does not hold on the original or no longer holds on the result (nothing "
                    "written).",
        epilog="example: reprokit reduce bundles/examples/triton-3.0-cu129-h100.tgz --case experimental_descriptor.p1 "
               "--executor venv --out reduced",
    )
    p.add_argument("bundle", type=existing_file, nargs="?", default=None, metavar="BUNDLE",
                   help="a bundle .tgz holding the case (leave out with --project)")
    p.add_argument("--case", required=True, type=case_id, help="the case's id in the bundle or project")
    p.add_argument("--predicate", type=predicate_spec, default=None, metavar="P",
                   help="crash, verdict, metric:NAME, wrong or slower (default: the case's own failure)")
    p.add_argument("--stacks", type=stack_list, default=None, metavar="A[,B]",
                   help="stacks from stacks.toml the predicate reads, the reference first (default: the bundle's own)")
    p.add_argument("--threshold", type=non_negative_number, default=None, metavar="N",
                   help="metric: the smallest move that counts (default 1); slower: the smallest extra fraction "
                        "(default 0.1)")
    p.add_argument("--gpu", type=gpu_profile, default=None, help="GPU profile (with --project; a bundle names its own)")
    p.add_argument("--executor", choices=("venv", "docker", "local"), default="venv",
                   help="where candidates compile (default venv; local: this interpreter's own Triton, one stack)")
    p.add_argument("--workers", type=positive_int, default=None, help="candidates compiled at once (default: CPU count)")
    p.add_argument("--batch", type=positive_int, default=None,
                   help="candidates per harness run (default: twice --workers)")
    p.add_argument("--time-limit", type=positive_seconds, default=None, metavar="S",
                   help="stop searching after S seconds and keep the best candidate so far")
    p.add_argument("--work", type=out_dir, default=None, metavar="DIR",
                   help="the cache of compiled candidates (default: under the reprokit cache, by bundle, case and predicate)")
    p.add_argument("--out", type=out_dir, default=Path("bundles"), help="where the reduced case's bundles go")
    p.add_argument("--json", action="store_true", help="print the reduction as JSON")
    add_project_arg(p)
    add_gpu_args(p)
    p.set_defaults(func=run)


def _from_bundle(args, tmp: Path):
    bundle = open_verified(args.bundle)
    plan = Plan.from_json(bundle.plan, where=f"{bundle.root}: plan.json", kernels=tmp)
    case = plan.case(args.case)
    if case is None:
        raise UsageError(f"no case {args.case!r} in {args.bundle}; e.g. {', '.join(plan.ids[:4])}")
    write_kernels(bundle, tmp)
    rec = bundle.records.case(args.case)
    tensors = tmp.parent / "tensors"
    kept = write_tensors(bundle, plan.only([args.case]), tensors)
    subject = driver.Subject(args.case, plan, case.to_json(), tmp, plan.profile, bundle.sha256,
                             tensors if kept else None, rec)
    return subject, bundle_stack(bundle.manifest), rec, bundle.sha256


def _from_project(args, tmp: Path):
    if args.gpu is None:
        raise UsageError("--project needs --gpu (a bundle names its own GPU profile)")
    project = for_run(args.project)
    if project is None:
        raise UsageError("no BUNDLE given and no reprokit.toml found (--project PATH)")
    known = [c["id"] for c in checked(project).cases]
    if args.case not in known:
        raise UsageError(f"no case {args.case!r} in {project.shown}; e.g. {', '.join(known[:4])}")
    stage_kernels(project, tmp)
    plan = build_plan(project, args.gpu, only=args.case, kernels=tmp)
    case = plan.case(args.case)
    assert case is not None  # `known` has it
    digest = hashlib.sha256(json.dumps([c.to_json() for c in plan], sort_keys=True).encode()).hexdigest()
    return driver.Subject(args.case, plan, case.to_json(), tmp, args.gpu, None), None, None, digest


def run(args) -> int:
    if (args.bundle is None) == (args.project is None):
        raise UsageError("give a BUNDLE or --project (with --gpu), not both and not neither")
    cfg = load_config()
    workers = args.workers or os.cpu_count() or 1
    with locks.scratch(args.host.tmp, "reduce-kernels") as tmp:
        kernels = tmp / "kernels"
        kernels.mkdir()
        subject, own, recorded, source = (_from_bundle if args.bundle else _from_project)(args, kernels)
        if args.executor == "local":
            if args.stacks:
                raise UsageError("--executor local runs this interpreter's own Triton; --stacks needs venv or docker")
            stacks = [local_stack()]
        elif args.stacks:
            stacks = cfg.select_stacks(args.stacks)
        elif own is not None:
            stacks = [own]
        else:
            raise UsageError("--project: name the stack(s) the predicate reads with --stacks")
        default = "crash" if recorded is None or recorded.status in FAILED else "verdict"
        predicate = parse(args.predicate, tuple(s.name for s in stacks), args.threshold, default)
        mode = "gpu" if predicate.needs_gpu else "compile-only"
        gpu = gpu_from_args(args, subject.profile, mode) if mode == "gpu" else GpuOptions(subject.profile, mode)
        work = args.work or args.host.cache / "reduce" / hashlib.sha256(
            "\0".join([source, args.case, predicate.spec, *predicate.stacks, str(args.threshold)]).encode()).hexdigest()[:16]
        settings = driver.Settings(gpu, workers=workers, batch=args.batch or 2 * workers,
                                   time_limit_s=args.time_limit, work=work)
        quiet = args.json
        if not quiet:
            say(f"reduce {args.case} on {', '.join(predicate.stacks)} ({predicate.spec}); cache {work}")
        with Progress(TextColumn("reduce {task.description}"), TextColumn("{task.fields[last]}"), TimeElapsedColumn(),
                      console=console(), disable=quiet) as bar, \
                make_executor(args.executor, args.host, report=(lambda m: None) if quiet else say,
                              with_torch=gpu.on_gpu, stacks=stacks) as executor:
            task = bar.add_task(args.case, last="checking the original")

            def heard(p: driver.Progress) -> None:
                bar.update(task, last=f"{p.best.lines} lines / {p.best.nodes} nodes, {p.compiles} compiles, "
                                      f"{p.tried} tried{': ' + p.step if p.step else ''}")

            result = driver.reduce(subject, stacks, predicate, executor, settings, progress=heard)
            bar.update(task, last="rechecking the reduced case from a clean run")
            result = driver.recheck_and_bundle(subject, stacks, result, executor, settings,
                                               BundleOptions.from_host(args.host, args.out))
    if args.json:
        print(json.dumps(result.to_dict(), indent=1))
        return 0
    say(f"holds: {result.predicate.describe()}")
    if result.stopped:
        say(f"stopped at the {result.stopped}: the best candidate so far")
    for b in result.bundles:
        say(f"bundle: {b}")
    print(result.line())
    return 0
