"""The reduction itself: check the original, search smaller candidates while the predicate holds,
recheck the best from a clean run on every stack the predicate names, and bundle it.

Candidates are compiled through the spine (`run.execute`): a batch of them is one plan, one case
per candidate, each in its own kernel file, run by the stack's own harness with `workers` cases
at once, each case in its own process. A multi-stack predicate runs the batch on its first stack
first; a candidate that already fails there (the frontend refused it, or it no longer crashes
the same way) is not compiled on the others. The search is greedy and deterministic: candidates
in the passes' fixed order, the first that holds in a batch becomes the new best, and only a
strictly smaller one is taken (AST nodes of the reached functions, then lines, then the case's
sizes, then the whole file), so it ends. Every observation is kept in the cache first.
"""

from __future__ import annotations

import ast
import shutil
import time
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Mapping

from reprokit import locks
from reprokit.bundle.reader import open_bundle
from reprokit.compare.normalise import normalise
from reprokit.compare.sources import ResultSet
from reprokit.config import GpuProfile, Stack
from reprokit.errors import PredicateNotHeld
from reprokit.executors import Executor
from reprokit.options import BundleOptions, GpuOptions, RunOptions
from reprokit.plan import Plan
from reprokit.records import CaseRecord
from reprokit.reduce import cache as cache_mod
from reprokit.reduce.candidates import Size, State, candidates, constexprs, kernel_ref, nodes, normalised, size
from reprokit.reduce.predicate import Predicate, observe
from reprokit.run.execute import execute, stage
from reprokit.run.publish import keep
from reprokit.run.stacks import run_stacks

# Seconds a candidate may compile: a shrunk kernel that hangs the compiler is no reproducer.
CANDIDATE_TIMEOUT_S = 120.0


@dataclass(frozen=True)
class Subject:
    """The case to reduce, as its source planned it (a bundle's own plan and kernels, or a project's)."""

    case_id: str
    plan: Plan                      # the whole plan the case came from
    case: Mapping[str, Any]         # the case's record, as the harness reads it
    kernels: Path                   # the folder holding its kernel sources
    profile: GpuProfile
    parent: str | None = None       # sha256 of the bundle it came from
    tensors: Path | None = None     # a trace's recorded tensors (on a GPU a traced call launches from them)
    recorded: CaseRecord | None = None  # what the bundle recorded for the case: one-stack slower's reference


@dataclass(frozen=True)
class Settings:
    gpu: GpuOptions
    workers: int = 2
    batch: int = 4                  # candidates per harness run
    time_limit_s: float | None = None
    work: Path = Path(".")          # the cache's folder


@dataclass(frozen=True)
class Progress:
    best: Size
    compiles: int
    tried: int
    step: str


@dataclass(frozen=True)
class Reduction:
    predicate: Predicate
    original: Size
    reduced: Size
    seconds: float
    compiles: int                   # candidate compiles this run made (cached ones are not)
    cached: int                     # observations the cache already had
    steps: tuple[str, ...]          # what each accepted candidate did
    state: State                    # the reduced kernel and case
    stopped: str | None             # "time limit" when --time-limit cut it short
    bundles: tuple[Path, ...] = ()

    def line(self) -> str:
        o, r = self.original, self.reduced
        return (f"from {o.lines} lines / {o.nodes} AST nodes to {r.lines} / {r.nodes} in {self.seconds:.1f} s, "
                f"{self.compiles} compiles")

    def to_dict(self) -> dict:
        return {"predicate": self.predicate.spec, "holds": self.predicate.describe(),
                "stacks": list(self.predicate.stacks), "original": vars(self.original), "reduced": vars(self.reduced),
                "seconds": round(self.seconds, 2), "compiles": self.compiles, "cached": self.cached,
                "steps": list(self.steps), "stopped": self.stopped, "bundles": [str(b) for b in self.bundles],
                "line": self.line(), "kernel": self.state.source}


def score(state: State) -> tuple:
    """What "smaller" means; a candidate is taken only when this strictly drops."""
    sz = size(state)
    case = state.case_dict()
    tree = ast.parse(state.source)
    fn = next((f for f in tree.body if isinstance(f, ast.FunctionDef) and f.name == kernel_ref(case)[1]), None)
    sizes = [v for v in (constexprs(case, fn).values() if fn else ()) if isinstance(v, int)]
    opts = case["call"].get("options") or {} if isinstance(case.get("call"), dict) else case
    sizes += [opts.get(k) or 0 for k in ("num_warps", "num_stages")]
    read = [n.id for n in ast.walk(tree) if isinstance(n, ast.Name)]
    # then fewer distinct names (one argument read in place of another lets the other go), then
    # fewer names read (a variable replaced by a constant)
    return (sz.nodes, sz.lines, sum(sizes), len(set(read)), len(read), nodes(tree))


def candidate_file(case: Mapping[str, Any], tag: str) -> str:
    """The kernel file's name for a candidate: beside the original, so a module it imports from
    its folder still loads."""
    p = PurePosixPath(kernel_ref(dict(case))[0])
    return str(p.with_name(f"{p.stem}__{tag}.py"))


def _with_file(case: dict, file: str, case_id: str) -> dict:
    case = dict(case, id=case_id)
    if isinstance(case.get("kernel"), dict):
        case["kernel"] = {**case["kernel"], "file": file}
    if "file" in case:
        case["file"] = file
    return case


class Evaluator:
    """Observations of candidates on the predicate's stacks, from the cache or from compiles."""

    def __init__(self, subject: Subject, stacks: list[Stack], predicate: Predicate, executor: Executor,
                 settings: Settings, cache: cache_mod.Cache):
        self.subject, self.stacks, self.predicate = subject, stacks, predicate
        self.executor, self.settings, self.cache = executor, settings, cache
        self.compiles = 0
        self.hits = 0

    def _key(self, stack: Stack, state: State) -> str:
        observes = self.predicate.metric.label if self.predicate.metric else ""
        return cache_mod.key(stack.name, stack.triton, self.subject.profile.key, self.settings.gpu.mode, observes,
                             state.digest)

    def observe(self, states: list[State], predicate: Predicate | None) -> list[list[dict] | None]:
        """Per state, its observation on each stack; None where `predicate` (once it has its
        target) already failed on an earlier stack."""
        got: list[list[dict]] = [[] for _ in states]
        alive = list(range(len(states)))
        for si, stack in enumerate(self.stacks):
            need, seen = [], set()
            for i in alive:
                k = self._key(stack, states[i])
                if self.cache.get(k) is None and k not in seen:
                    need.append(i)
                    seen.add(k)
                elif self.cache.get(k) is not None:
                    self.hits += 1
            if need:
                if si == 0:
                    for i in need:
                        self.cache.put_state(states[i].digest, states[i].source, states[i].case)
                for i, obs in zip(need, self._run(stack, [states[i] for i in need])):
                    self.cache.put(self._key(stack, states[i]), obs)
                self.compiles += len(need)
            for i in alive:
                got[i].append(dict(self.cache.get(self._key(stack, states[i])) or {}))
            if predicate is not None:
                alive = [i for i in alive if predicate.passes(si, got[i][-1])]
        return [got[i] if len(got[i]) == len(self.stacks) else None for i in range(len(states))]

    def _run(self, stack: Stack, states: list[State]) -> list[dict]:
        """One harness run of these candidates on `stack`: their observations, in order."""
        with locks.scratch(self.executor.host.tmp, "reduce") as tmp:
            kernels = tmp / "src"
            shutil.copytree(self.subject.kernels, kernels)
            cases = []
            for s in states:
                tag = "r" + s.digest[:12]
                file = candidate_file(self.subject.case, tag)
                (kernels / file).write_text(s.source)
                cases.append(_with_file(s.case_dict(), file, f"{self.subject.case_id}.{tag}"))
            plan = self._plan(stack, cases)
            work = tmp / "work"
            work.mkdir()
            stage(work, plan, kernels, "reduce")
            if self.subject.tensors is not None and self.settings.gpu.on_gpu:
                shutil.copytree(self.subject.tensors, work / "trace" / "tensors")
            cap = execute(plan, stack, self.executor, work, RunOptions(workers=self.settings.workers),
                          scratch_name="reduce")
            out = []
            for c in cases:
                rec = cap.results.case(c["id"])
                out.append(observe(rec, self.predicate.metric, _ir_from(work, rec)))
            return out

    def _plan(self, stack: Stack, cases: list) -> Plan:
        """The candidates' plan: the subject's, over these cases, on `stack`, records only (SASS
        only for a metric that reads it)."""
        metric = self.predicate.metric
        return (self.subject.plan.with_cases([dict(c, timeout_s=CANDIDATE_TIMEOUT_S) for c in cases])
                .with_gpu(self.settings.gpu).for_stack(stack.pins())
                .records_only(sass=bool(metric and metric.level == "sass")))


def _ir_from(work: Path, rec: CaseRecord | None) -> Callable[[str], str | None]:
    def read(level: str) -> str | None:
        rel = rec.artifacts.get(level) if rec else None
        if not rel or rec is None:
            return None
        path = work / "cases" / rec.id / rel if not rel.startswith("cases/") else work / rel
        return normalise(level, path.read_text(errors="replace")) if path.is_file() else None
    return read


def reduce(subject: Subject, stacks: list[Stack], predicate: Predicate, executor: Executor, settings: Settings,
           *, progress: Callable[[Progress], None] = lambda p: None, clock=time.monotonic) -> Reduction:
    """Reduce `subject` while `predicate` (its target not yet learnt) holds on `stacks`.
    PredicateNotHeld when it does not hold on the original, or no longer on the normalised one."""
    t0 = clock()
    file = kernel_ref(dict(subject.case))[0]
    original = State.of((subject.kernels / file).read_text(), dict(subject.case))
    cache = cache_mod.Cache(settings.work)
    # Batches run one after another: each batch's harness loads (Triton, torch) beside the one before.
    executor.keep_warm(settings.gpu.profile.capability)
    try:
        if predicate.kind == "slower" and len(stacks) == 1 and subject.recorded is not None:
            predicate = replace(predicate, reference=observe(subject.recorded, None, None))
        ev = Evaluator(subject, stacks, predicate, executor, settings, cache)
        (obs,) = ev.observe([original], None)
        assert obs is not None
        learnt = predicate.learn(obs)
        if isinstance(learnt, str):
            raise PredicateNotHeld(f"{subject.case_id}: the predicate ({predicate.spec}) does not hold on the "
                                   f"original: {learnt}; nothing written")
        predicate = ev.predicate = learnt
        best = normalised(original)
        (obs,) = ev.observe([best], predicate)
        if obs is None or not predicate.holds(obs):
            raise PredicateNotHeld(f"{subject.case_id}: the predicate holds on the original but not on its "
                                   "source reformatted; nothing written")
        best_score, steps, stopped = score(best), [], None
        start, changed, tried = 0, False, 0
        pool, pool_of = [], ""
        while True:
            if pool_of != best.digest:  # made once per best: the passes copy the whole tree per candidate
                pool, pool_of = [c for c in candidates(best) if score(c.state) < best_score], best.digest
            if start >= len(pool):
                if not changed:
                    break
                start, changed = 0, False
                continue
            if settings.time_limit_s is not None and clock() - t0 >= settings.time_limit_s:
                stopped = "time limit"
                break
            batch = pool[start:start + settings.batch]
            tried += len(batch)
            seen = ev.observe([c.state for c in batch], predicate)
            hit = next((j for j, o in enumerate(seen) if o is not None and predicate.holds(o)), None)
            if hit is None:
                start += len(batch)
            else:
                best, best_score, changed = batch[hit].state, score(batch[hit].state), True
                steps.append(batch[hit].step)
                start += hit
            progress(Progress(size(best), ev.compiles, tried, steps[-1] if hit is not None else ""))
        return Reduction(predicate, size(original), size(best), clock() - t0, ev.compiles, cache.loaded,
                         tuple(steps), best, stopped)
    finally:
        executor.keep_warm(None)
        cache.close()


def recheck_and_bundle(subject: Subject, stacks: list[Stack], result: Reduction, executor: Executor,
                       settings: Settings, bundle: BundleOptions) -> Reduction:
    """Run the reduced case once more, from a clean run, on every stack the predicate names,
    bundled (parent: the original bundle); keep the bundles under bundle.out_dir only when the
    predicate still holds there, else PredicateNotHeld and nothing written."""
    pred = result.predicate
    file = candidate_file(subject.case, "reduced")
    case = _with_file(result.state.case_dict(), file, subject.case_id)
    reduced = {"case": subject.case_id, "file": file, "predicate": pred.spec, "holds": pred.describe(),
               "stacks": list(pred.stacks), "from": vars(result.original), "to": vars(result.reduced)}
    with locks.scratch(executor.host.tmp, "reduce-final") as tmp:
        kernels = tmp / "src"
        shutil.copytree(subject.kernels, kernels)
        (kernels / file).write_text(result.state.source)
        plan = subject.plan.reduced_to(case, reduced).with_gpu(settings.gpu).with_files(
            kernels=kernels, tensors=subject.tensors if settings.gpu.on_gpu else None)
        outcomes = run_stacks(stacks, executor, plan, RunOptions(workers=1),
                              replace(bundle, out_dir=tmp / "out", parent=subject.parent))
        observed = []
        for o in outcomes:
            if not o.ok or o.results is None or o.bundle is None:
                raise PredicateNotHeld(f"{subject.case_id}: the reduced case could not be rechecked on {o.stack} "
                                       f"({o.error}); nothing written")
            observed.append(observe(o.results.case(subject.case_id), pred.metric, _bundle_ir(o.bundle, subject.case_id)))
        if not pred.holds(observed):
            raise PredicateNotHeld(f"{subject.case_id}: the predicate ({pred.describe()}) no longer holds on the "
                                   "reduced case rechecked from a clean run; nothing written")
        kept = keep([o.bundle for o in outcomes if o.bundle is not None], Path(bundle.out_dir))
    return replace(result, bundles=kept)


def _bundle_ir(path: Path, case_id: str) -> Callable[[str], str | None]:
    rs = ResultSet.from_bundle(open_bundle(path))
    return lambda level: rs.normalised(case_id, level)
