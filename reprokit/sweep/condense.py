"""A sweep's work folder condensed into a capture folder that packs into a byte-reproducible bundle.

A sweep has thousands of points; IR for all of them would make bundles of gigabytes that say
nothing more. So every point keeps its facts (status, verdict, TMA counts per level, shared
memory, launchability, failing pass, error line, registers) and a sha256 of each IR level,
which is enough to tell two points or two releases apart; full IR (ttir, ttgir, ptx, sass, and
a failed compile's log and reproducer) is kept only for the points a reader must be able to
open: each group's base and named configs, the points where an answer's boundary lies, and a
sample chosen by a hash of the point's id (so shards and resumed runs choose the same one).
Cubins are never kept: ptxas writes the name of a temporary file into them.

What varies between two runs of the same grid (wall and compile times, temporary paths, when the
snapshot was taken, whether a SASS listing came from the cache) is dropped or normalised, and
times are clamped to the sweep's epoch, as reproducible builds clamp theirs to
SOURCE_DATE_EPOCH: a sweep killed halfway and resumed packs to the same bytes as one that never
stopped. Per-point timings stay in the work folder (timings.tsv).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import shutil
import time
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from reprokit.bundle.redact import recorded_homes
from reprokit.harness import elf, reproducer
from reprokit.records import Results

KEEP_LEVELS = ("ttir", "ttgir", "ptx", "sass")
HASH_LEVELS = ("ttir", "ttgir", "llir", "ptx", "sass")
SAMPLE_ONE_IN = 25
_DROP = ("wall_s", "compile_s", "sass_s")
_VOLATILE_FACTS = ("reused", "container_id", "container", "seconds", "wall_s", "started_at", "finished_at")


@dataclass(frozen=True)
class RunPaths:
    """Masks the paths that differ between two runs of one grid on one host: the temp folders,
    HOMEs and reprokit caches the work folder's runs used, as the runs recorded them (not a
    guess at /tmp).

    temp_roots: the harness's temp folders (its TMPDIR as it saw it: the run's scratch folder,
    the host's temp folder, or the container's). Under one, each run draws new names: the
    harness's case scratch (tempfile's `reprokit-cases-XXXXXXXX`) becomes `<scratch>/`, a
    compiler's temporary file (tempfile's `tmpXXXXXXXX`: ptxas's input and output) `<tmp>`, and
    the folder itself `<tmpdir>`. homes: the harness's HOME (Triton keeps its cache dirs under
    it), which becomes `<home>`. caches: reprokit's cache (the stack's venv, its ptxas), which
    becomes `<cache>`. All are matched in one pass, longest first and only where a path starts,
    so a HOME under a temp folder (HOME=/tmp/x/home) or a cache under HOME is never cut in two.
    """

    temp_roots: tuple = ()
    homes: tuple = ()
    caches: tuple = ()

    @cached_property
    def _kinds(self) -> dict:
        kinds = {}
        for kind, values in (("home", self.homes), ("cache", self.caches), ("temp", self.temp_roots)):
            kinds.update({v.rstrip("/"): kind for v in values if isinstance(v, str)})
        return {k: v for k, v in kinds.items() if k.startswith("/") and len(k) > 1}

    @cached_property
    def _rx(self) -> re.Pattern | None:
        if not self._kinds:
            return None
        alts = sorted(self._kinds, key=lambda r: (-len(r), r))
        return re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, alts)) + r")(?![\w.-])"
                          r"(?:/(reprokit-cases-\w+/|tmp\w+))?")

    def _placeholder(self, m: re.Match) -> str:
        root, name = m.group(1), m.group(2)
        if self._kinds[root] != "temp":
            return f"<{self._kinds[root]}>" + (f"/{name}" if name else "")
        if name is None:
            return "<tmpdir>"
        return "<scratch>/" if name.startswith("reprokit-cases-") else "<tmp>"

    def mask(self, text):
        if not isinstance(text, str) or self._rx is None:
            return text
        return self._rx.sub(self._placeholder, text)

    def mask_json(self, doc):
        """Every string of a JSON document masked; keys kept."""
        if isinstance(doc, dict):
            return {k: self.mask_json(v) for k, v in doc.items()}
        if isinstance(doc, list):
            return [self.mask_json(v) for v in doc]
        return self.mask(doc)


def sampled(case_id: str) -> bool:
    return int(hashlib.sha256(case_id.encode()).hexdigest()[:8], 16) % SAMPLE_ONE_IN == 0


def iso(epoch: int) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def ir_hashes(case_dir: Path) -> dict:
    out = {}
    for level in HASH_LEVELS:
        p = case_dir / f"kernel.{level}"
        if p.is_file():
            out[level] = hashlib.sha256(p.read_bytes()).hexdigest()
    cubin = case_dir / "kernel.cubin"
    if cubin.is_file():
        out["cubin"] = elf.digest_without(cubin.read_bytes(), (b".debug_line",))
    return out


def canonical_record(rec: dict, case_dir: Path, paths: RunPaths = RunPaths()) -> dict:
    """A point's record less what differs between runs, with its IR hashes and no artifacts yet."""
    out = paths.mask_json({k: v for k, v in rec.items() if k not in _DROP and k != "artifacts"})
    if isinstance(out.get("ptxas"), dict):
        out["ptxas"] = {k: v for k, v in out["ptxas"].items() if k != "seconds"}
    if isinstance(out.get("sass_tool"), dict):
        out["sass_tool"] = {k: v for k, v in out["sass_tool"].items() if k != "cache"}
    if out.get("status") == "ok":
        out.pop("stderr_tail", None)  # warnings of a good compile; its log stays in the work folder
    # A shard bundle's record already carries its hashes (its cubin is not in the bundle).
    out["ir_sha256"] = rec.get("ir_sha256") or ir_hashes(case_dir)
    out["artifacts"] = {}
    return out


def keep_ir(case_dir: Path, dest: Path, rec: dict, cid: str, script: str | None = None,
            paths: RunPaths = RunPaths()) -> None:
    """Copy a point's IR (and a failure's log and reproducer) into the capture, with its
    standalone reproducer (`script`) when it has one."""
    for level in KEEP_LEVELS:
        src = case_dir / f"kernel.{level}"
        if src.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(src, dest / src.name)
            rec["artifacts"][level] = f"cases/{cid}/{src.name}"
    if script is not None:
        dest.mkdir(parents=True, exist_ok=True)
        (dest / reproducer.FILE_NAME).write_text(paths.mask(script))
        rec["artifacts"][reproducer.ARTIFACT] = f"cases/{cid}/{reproducer.FILE_NAME}"
    if rec.get("status") not in ("ok", "unsupported"):
        log = case_dir / "compile.log"
        if log.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "compile.log").write_text(paths.mask(log.read_text(errors="replace")))
            rec["artifacts"]["compile_log"] = f"cases/{cid}/compile.log"
        repro = case_dir / "reproducer.mlir"
        if repro.is_file():
            shutil.copyfile(repro, dest / "reproducer.mlir")
            rec["artifacts"]["reproducer"] = f"cases/{cid}/reproducer.mlir"


def keep_samples(case_dir: Path, dest: Path, rec: dict, cid: str) -> None:
    """A GPU sweep's point keeps its raw timing samples (bench.json), whatever else it keeps:
    the answers' numbers are medians of them, and a reader must be able to recompute them."""
    src = case_dir / "bench.json"
    if src.is_file():
        dest.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest / src.name)
        rec["artifacts"]["bench"] = f"cases/{cid}/{src.name}"


def condense(work: Path, dest: Path, *, epoch: int, keep, paths: RunPaths = RunPaths()) -> dict:
    """Write plan.json, results.json, env.json and the kept points' IR from `work` into `dest`;
    return the canonical results. `keep(results)`: ids of points that keep full IR beyond the
    sample (it sees the canonical results, so the answers can choose them). `paths`: the temp
    folders and HOMEs the work folder's runs used (the HOME env.json records is added here)."""
    work, dest = Path(work), Path(dest)
    dest.mkdir(parents=True)
    plan = json.loads((work / "plan.json").read_text())
    results = json.loads((work / "results.json").read_text())
    env = json.loads((work / "env.json").read_text())
    paths = dataclasses.replace(paths, homes=(*paths.homes, *sorted(recorded_homes(env))))
    shutil.copyfile(work / "plan.json", dest / "plan.json")
    shutil.copytree(work / "kernels", dest / "kernels")
    cases = [canonical_record(rec, work / "cases" / rec["id"], paths) for rec in results["cases"]]
    canon = {**results, "started": iso(epoch), "finished": iso(epoch), "wall_s": None, "cases": cases}
    # A shard keeps every point's IR: which ones lie on a boundary is known once all shards merge.
    chosen = keep(canon)
    if (plan.get("sweep") or {}).get("shard"):
        chosen = {c["id"] for c in cases}
    # The harness writes no reproducer for a sweep's points, most of which are condensed away:
    # a kept point's is made here, in the ASTSource form of the release that ran.
    scripts = reproducer.Reproducers.from_dir(plan, str(work / "kernels"), triton_version=results.get("triton"))
    for out in cases:
        if out["id"] in chosen or sampled(out["id"]):
            keep_ir(work / "cases" / out["id"], dest / "cases" / out["id"], out, out["id"], _script(scripts, out),
                    paths)
        keep_samples(work / "cases" / out["id"], dest / "cases" / out["id"], out, out["id"])
    env = {**paths.mask_json(env), "taken": iso(epoch)}
    for name, doc in (("results.json", canon), ("env.json", env)):
        (dest / name).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    return canon


def _script(scripts, rec: dict) -> str | None:
    """A kept point's standalone reproducer; None where its kernel source has no plain definition
    of its function."""
    try:
        return scripts.text(rec["id"], rec)
    except (ValueError, SyntaxError):
        return None


def executor_facts(name: str, prepare: dict, runtime: dict, paths: RunPaths = RunPaths()) -> dict:
    """The manifest's executor facts, less those that differ between two runs on one host (a
    venv under the default cache lies in HOME)."""
    facts = {"name": name, **prepare, **runtime}
    return paths.mask_json({k: v for k, v in facts.items() if k not in _VOLATILE_FACTS})


def write_timings(work: Path, results: Results) -> None:
    """Per-point times, beside the work folder's records (they never enter the bundle)."""
    lines = ["id\tstatus\tcompile_s\tsass_s\twall_s"]
    for r in results.cases:
        lines.append("\t".join(str(x) for x in (r.id, r.status, r.raw.get("compile_s", "-"),
                                                 r.raw.get("sass_s", "-"), r.raw.get("wall_s", "-"))))
    (Path(work) / "timings.tsv").write_text("\n".join(lines) + "\n")
