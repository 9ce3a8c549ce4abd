"""Bisecting a case over Triton releases: the first release in a range where the case's status and
verdict (or any metric a compile shows: registers, shared memory, spills, TMA ops per level, an
op count; reprokit.compare.metric) changes, found in O(log n) compile-only captures.

The releases come from the package index, not from stacks.toml: pip (`pip index versions
triton`, run by the Python the stacks are built with, so it honours the user's pip
configuration) says which releases have a wheel for that Python; PyPI's JSON API says which
releases exist at all, so that those without such a wheel are skipped *and named*. A release
that stacks.toml pins reuses that stack (and its cached venv or image); any other gets a stack of
its own, built on demand. Like `git bisect`, the search assumes one change inside the range: it
compares each midpoint with the range's first release.
"""

from __future__ import annotations

import json
import re
import shutil
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from reprokit import locks, proc
from reprokit.bundle.reader import open_bundle
from reprokit.bundle.writer import link_into_place
from reprokit.compare.metric import Metric
from reprokit.compare.sources import ResultSet
from reprokit.compare.transitions import transitions
from reprokit.config import Config, GpuProfile, Stack
from reprokit.errors import ExecutorError, ReprokitError, UsageError
from reprokit.executors import Executor
from reprokit.options import SILENT, BundleOptions, GpuOptions, Listener, RunOptions
from reprokit.plan import Plan
from reprokit.run.stacks import run_stacks
from reprokit.suite import build_plan

PYPI_JSON = "https://pypi.org/pypi/triton/json"
_FINAL = re.compile(r"^\d+(?:\.\d+)*$")


def vkey(version: str) -> tuple:
    return tuple(int(p) for p in version.split("."))


@dataclass(frozen=True)
class Releases:
    usable: tuple              # releases in range with a wheel for the target Python, oldest first
    skipped: tuple             # releases in range without one
    python: str                # the target Python's version
    note: str | None = None    # why `skipped` may be incomplete


def parse_range(text: str) -> tuple[str, str]:
    m = re.match(r"^\s*(\d+(?:\.\d+)*)\s*\.\.\s*(\d+(?:\.\d+)*)\s*$", text or "")
    if not m:
        raise UsageError(f"--versions {text!r}: expected FIRST..LAST, e.g. 3.0.0..3.9.0")
    lo, hi = m.group(1), m.group(2)
    if vkey(lo) > vkey(hi):
        raise UsageError(f"--versions {text!r}: {lo} comes after {hi}")
    return lo, hi


def _pip_versions(python: str) -> tuple[list[str], str]:
    """(releases with a wheel for `python`, that Python's version), as pip sees the index."""
    r = proc.run([python, "-c", "import platform; print(platform.python_version())"], timeout=60)
    pyver = r.stdout.strip() if r.ok else "?"
    r = proc.run([python, "-m", "pip", "index", "versions", "triton", "--disable-pip-version-check"], timeout=300)
    line = next((ln for ln in (r.stdout or "").splitlines() if ln.startswith("Available versions:")), None)
    if not r.ok or line is None:
        raise ExecutorError(f"pip could not list the Triton releases on the package index: "
                            f"{proc.last_line(r.stderr_tail)}")
    return [v.strip() for v in line.split(":", 1)[1].split(",") if _FINAL.match(v.strip())], pyver


def _pypi_versions(url: str) -> list[str]:
    with urllib.request.urlopen(url, timeout=60) as f:
        data = json.load(f)
    return [v for v, files in data.get("releases", {}).items()
            if _FINAL.match(v) and files and not all(f.get("yanked") for f in files)]


class PackageIndex:
    """Where bisect learns the Triton releases: pip says which have a wheel for a Python, PyPI's
    JSON API (`url`) which exist at all. A test hands list_releases an index of its own."""

    url = PYPI_JSON

    def wheels(self, python: str) -> tuple[list[str], str]:
        """(releases with a wheel for `python`, that Python's version)."""
        return _pip_versions(python)

    def releases(self) -> list[str]:
        """Every final release that has files, yanked ones left out; OSError, URLError or
        ValueError when the index cannot say."""
        return _pypi_versions(self.url)


def list_releases(lo: str, hi: str, python: str, index: PackageIndex) -> Releases:
    """Final Triton releases from lo to hi (inclusive) on the index; UsageError when none is."""
    usable, pyver = index.wheels(python)
    note = None
    try:
        everything = index.releases()
    except (OSError, urllib.error.URLError, ValueError) as e:
        everything = list(usable)
        note = f"releases without a wheel for Python {pyver} are not listed ({index.url}: {e})"

    def inside(v: str) -> bool:
        return bool(_FINAL.match(v)) and vkey(lo) <= vkey(v) <= vkey(hi)

    ok = sorted({v for v in usable if inside(v)}, key=vkey)
    skipped = sorted({v for v in everything if inside(v)} - set(ok), key=vkey)
    if not ok:
        extra = f" ({', '.join(skipped)} have no wheel for Python {pyver})" if skipped else ""
        raise UsageError(f"no Triton release from {lo} to {hi} on the package index{extra}")
    return Releases(tuple(ok), tuple(skipped), pyver, note)


def stack_for(version: str, config: Config) -> Stack:
    """The stacks.toml stack that pins this release; else a stack of its own, `triton-<version>`,
    on the base (CUDA image, Python, Dockerfile) of the nearest older pinned stack, so that the
    docker executor can build it too. No torch: bisect captures compile-only."""
    pinned = sorted(config.stacks.values(), key=lambda s: vkey(s.triton) if _FINAL.match(s.triton) else ())
    for s in pinned:
        if s.triton == version:
            return s
    older = [s for s in pinned if _FINAL.match(s.triton) and vkey(s.triton) < vkey(version)]
    base = older[-1] if older else (pinned[0] if pinned else None)
    keep = ("cuda", "python", "base_image", "dockerfile")
    return Stack(name=f"triton-{version}", triton=version,
                 **({k: getattr(base, k) for k in keep} if base else {}))


@dataclass(frozen=True)
class Step:
    n: int                     # 1-based capture number
    version: str
    stack: str
    status: str
    verdict: str
    same_as_first: bool | None  # None for the first capture
    value: object = None       # the bisected metric's value (status, verdict for "verdict")


@dataclass(frozen=True)
class Bisection:
    case: str
    profile: str
    releases: Releases
    steps: tuple               # Step, in capture order
    first_changed: str | None  # None: the outcome is the same at both ends
    last_same: str | None
    bundles: tuple             # the boundary bundles (Paths) in --out
    answer: str                # the one-line answer
    metric: str = "verdict"    # what was followed (Metric.label)

    def to_dict(self) -> dict:

        return {"case": self.case, "profile": self.profile, "metric": self.metric, "first_changed": self.first_changed,
                "last_same": self.last_same, "answer": self.answer, "captures": len(self.steps),
                "releases": list(self.releases.usable), "skipped": list(self.releases.skipped),
                "python": self.releases.python, "note": self.releases.note,
                "steps": [asdict(s) for s in self.steps], "bundles": [str(b) for b in self.bundles]}


def max_captures(n: int) -> int:
    """Captures a bisection over n releases needs at most: both ends, then ceil(log2(n - 1))."""
    if n <= 1:
        return n
    return 2 + max(0, (n - 2).bit_length())


def bisect(case: str, profile: GpuProfile, releases: Releases, config: Config, executor: Executor,
           bundle: BundleOptions, *, listener: Listener = SILENT, metric: Metric | None = None,
           plan: Plan | None = None) -> Bisection:
    """Find the first release in `releases.usable` whose `metric` for `case` (default: its status
    and verdict) differs from the first release's, beyond the metric's threshold; `listener.step`
    hears each capture. Writes the two boundary bundles under bundle.out_dir (one when nothing
    changed); the other captures are packed in a scratch folder under the host's temp folder
    (executor.host.tmp, as a replay's) and dropped."""
    metric = metric or Metric("verdict")
    out = Path(bundle.out_dir)
    # One case at a time: a bisection's captures are small, and each starts a new stack.
    plan = plan or build_plan(GpuOptions(profile, "compile-only"), only=case)
    options = RunOptions(workers=1)
    versions = list(releases.usable)
    # A folder sweep() knows: a bisect killed outright leaves nothing that the next run keeps.
    scratch_temp = locks.make_temp(executor.host.tmp, "reprokit-bisect", "tmp", is_dir=True)
    scratch = scratch_temp.path
    seen: dict = {}
    steps: list = []

    def probe(i: int) -> tuple:
        v = versions[i]
        if v in seen:
            return seen[v][0]
        stack = stack_for(v, config)
        (o,) = run_stacks([stack], executor, plan, options, replace(bundle, out_dir=scratch / v))
        if not o.ok:
            raise _outcome_error(o)
        rec = o.results.case(case) if o.results else None
        if rec is None:
            raise ExecutorError(f"{stack.name}: the capture holds no case {case}")
        key = metric.value(rec, _ir_reader(o.bundle, case) if metric.needs_ir else None)
        seen[v] = (key, o.bundle)
        same = None if i == 0 else metric.same(seen[versions[0]][0], key)
        step = Step(len(steps) + 1, v, stack.name, rec.status, rec.verdict, same, key)
        steps.append(step)
        listener.step(step)
        return key

    try:
        first = probe(0)
        lo, hi = 0, len(versions) - 1
        within = f" within {metric.threshold:g}" if metric.threshold else ""
        if hi == 0 or metric.same(first, probe(hi)):
            span = versions[0] if hi == 0 else f"{versions[0]} to {versions[-1]}"
            answer = (f"{case} on {profile.key}: {metric.text(first)}{within} on every release tested, {span} "
                      f"({len(steps)} captures; a change and its undoing inside the range would not show: "
                      f"--scan captures every release and would settle it)")
            keep = [versions[0]] + ([versions[-1]] if hi else [])
            return Bisection(case, profile.key, releases, tuple(steps), None, None,
                             _keep(seen, keep, out), answer, metric.label)
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if metric.same(first, probe(mid)):
                lo = mid
            else:
                hi = mid
        a, b = versions[lo], versions[hi]
        answer = (f"{case} on {profile.key}: first changed in Triton {b} ({metric.text(seen[b][0])}); "
                  f"{a} gives {metric.text(seen[a][0])}{within} ({len(steps)} captures over {len(versions)} releases)")
        return Bisection(case, profile.key, releases, tuple(steps), b, a, _keep(seen, [a, b], out), answer,
                         metric.label)
    finally:
        scratch_temp.discard()


def _ir_reader(path, case: str):
    """read_ir(level) over one captured bundle: the case's normalised IR at that level."""
    rs = ResultSet.from_bundle(open_bundle(Path(path)))
    return lambda level: rs.normalised(case, level)


def _outcome_error(outcome) -> ReprokitError:
    return ExecutorError(f"{outcome.stack}: {outcome.error}")


def _keep(seen: dict, versions: list, out: Path) -> tuple:
    """Copy the boundary bundles into `out`, each written aside and renamed into place."""
    out.mkdir(parents=True, exist_ok=True)
    kept = []
    for v in versions:
        src = Path(seen[v][1])
        # Published as write_bundle does: never over a different file under the name.
        with locks.hold(out / src.name, "bundle"), locks.temp(out, f".{src.name}", "partial", is_dir=False) as t:
            shutil.copyfile(src, t.path)
            link_into_place(t.path, out / src.name)
        kept.append(out / src.name)
    return tuple(kept)


# --- bisect --scan: every release in the range, captured at once ------------------------------

@dataclass(frozen=True)
class ScanPoint:
    version: str
    stack: str
    status: str                # the case's status, or "failed" when the stack could not run it
    verdict: str
    value: object              # the metric's value; None where the compile gave none
    bundle: Path | None
    error: str | None = None   # why the release could not run the case

    @property
    def runs(self) -> bool:
        return self.status not in ("unsupported", "failed")


@dataclass(frozen=True)
class Scan:
    case: str
    profile: str
    releases: Releases
    points: tuple              # ScanPoint per release, oldest first: none dropped
    transitions: tuple
    answer: str
    metric: str
    bundles: tuple
    wall_s: float

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {"case": self.case, "profile": self.profile, "metric": self.metric, "answer": self.answer,
                "releases": list(self.releases.usable), "skipped": list(self.releases.skipped),
                "python": self.releases.python, "note": self.releases.note, "wall_s": round(self.wall_s, 2),
                "points": [{**asdict(p), "bundle": str(p.bundle) if p.bundle else None} for p in self.points],
                "transitions": [asdict(t) for t in self.transitions], "bundles": [str(b) for b in self.bundles]}


def scan(case: str, profile: GpuProfile, releases: Releases, config: Config, executor: Executor,
         bundle: BundleOptions, *, listener: Listener = SILENT, metric: Metric | None = None,
         plan: Plan | None = None, jobs: int = 4) -> Scan:
    """Capture `case` on every release in `releases.usable`, `jobs` releases at once, and name
    every transition. A release whose stack cannot run the case is a point of its own
    ("unsupported" from the harness, "failed" when the stack could not be built or run), never
    dropped. Every capture's bundle is kept under bundle.out_dir; `listener.step` hears each."""
    import time
    from concurrent.futures import ThreadPoolExecutor

    metric = metric or Metric("verdict")
    out = Path(bundle.out_dir)
    plan = plan or build_plan(GpuOptions(profile, "compile-only"), only=case)
    options = RunOptions(workers=1)
    versions = list(releases.usable)
    t0 = time.monotonic()
    scratch_temp = locks.make_temp(executor.host.tmp, "reprokit-scan", "tmp", is_dir=True)
    done: list = []

    def one(v: str) -> ScanPoint:
        stack = stack_for(v, config)
        (o,) = run_stacks([stack], executor, plan, options, replace(bundle, out_dir=scratch_temp.path / v))
        rec = o.results.case(case) if o.ok and o.results else None
        if rec is None:
            p = ScanPoint(v, stack.name, "failed", "error", None, None,
                          o.error or f"the capture holds no case {case}")
        else:
            value = metric.value(rec, _ir_reader(o.bundle, case) if metric.needs_ir else None)
            p = ScanPoint(v, stack.name, rec.status, rec.verdict, value, o.bundle,
                          rec.error if rec.status == "unsupported" else None)
        done.append(p)
        listener.step(Step(len(done), v, stack.name, p.status, p.verdict, None, p.value))
        return p

    try:
        with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
            points = list(pool.map(one, versions))
        kept = _keep({p.version: (None, p.bundle) for p in points if p.bundle}, [p.version for p in points if p.bundle],
                     out)
    finally:
        scratch_temp.discard()
    points = [replace(p, bundle=b) for p, b in zip([p for p in points if p.bundle], kept)] + \
        [p for p in points if not p.bundle]
    points.sort(key=lambda p: vkey(p.version))
    trans = transitions(points, metric)
    return Scan(case, profile.key, releases, tuple(points), trans, scan_answer(case, profile.key, points, trans, metric),
                metric.label, tuple(kept), time.monotonic() - t0)


def scan_answer(case: str, profile: str, points: list, trans: tuple, metric: Metric) -> str:
    runs = [p for p in points if p.runs]
    if not runs:
        return f"{case} on {profile}: runs on no release from {points[0].version} to {points[-1].version}"
    moved = [t.text(metric) for t in trans]
    if not moved:
        return f"{case} on {profile}: {metric.text(runs[0].value)} on every release from {points[0].version} to " \
               f"{points[-1].version}, each captured"
    return f"{case} on {profile}: {metric.text(points[0].value) if points[0].runs else 'unsupported'} on " \
           f"{points[0].version}; " + ", ".join(moved)
