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

import hashlib
import json
import re
import shutil
import time
from pathlib import Path

from reprokit.harness import elf, reproducer

KEEP_LEVELS = ("ttir", "ttgir", "ptx", "sass")
HASH_LEVELS = ("ttir", "ttgir", "llir", "ptx", "sass")
SAMPLE_ONE_IN = 25
_DROP = ("wall_s", "compile_s", "sass_s")
# The per-run scratch folder (locks.run_scratch: `reprokit-<what>.reprokit-<pid>-<8 hex>.tmp`), the
# harness's reprokit-cases-* in it, and the compilers' tmp* files in either: each run draws new ones.
_SCRATCH = re.compile(r"/[\w./-]*?(?:reprokit-\w+\.reprokit-\d+-[0-9a-f]{8}\.tmp/(?:reprokit-cases-\w+/)?"
                      r"|reprokit-cases-\w+/)")
_TMPFILE = re.compile(r"(?:/tmp|<scratch>)/tmp\w+")
_VOLATILE_FACTS = ("reused", "container_id", "container", "seconds", "wall_s")


def normalise(text):
    """Temporary paths out of a message: each run draws new ones."""
    if not isinstance(text, str):
        return text
    return _TMPFILE.sub("<tmp>", _SCRATCH.sub("<scratch>/", text))


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


def canonical_record(rec: dict, case_dir: Path) -> dict:
    """A point's record less what differs between runs, with its IR hashes and no artifacts yet."""
    out = {k: v for k, v in rec.items() if k not in _DROP and k != "artifacts"}
    for key in ("error", "reason", "stderr_tail", "sass_error"):
        if key in out:
            out[key] = normalise(out[key])
    if isinstance(out.get("ptxas"), dict):
        p = dict(out["ptxas"])
        p.pop("seconds", None)
        p["argv"] = [normalise(a) for a in p.get("argv", [])]
        out["ptxas"] = p
    if isinstance(out.get("sass_tool"), dict):
        out["sass_tool"] = {k: v for k, v in out["sass_tool"].items() if k != "cache"}
    if out.get("status") == "ok":
        out.pop("stderr_tail", None)  # warnings of a good compile; its log stays in the work folder
    # A shard bundle's record already carries its hashes (its cubin is not in the bundle).
    out["ir_sha256"] = rec.get("ir_sha256") or ir_hashes(case_dir)
    out["artifacts"] = {}
    return out


def keep_ir(case_dir: Path, dest: Path, rec: dict, cid: str, script: str | None = None) -> None:
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
        (dest / reproducer.FILE_NAME).write_text(normalise(script))
        rec["artifacts"][reproducer.ARTIFACT] = f"cases/{cid}/{reproducer.FILE_NAME}"
    if rec.get("status") not in ("ok", "unsupported"):
        log = case_dir / "compile.log"
        if log.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            (dest / "compile.log").write_text(normalise(log.read_text(errors="replace")))
            rec["artifacts"]["compile_log"] = f"cases/{cid}/compile.log"
        repro = case_dir / "reproducer.mlir"
        if repro.is_file():
            shutil.copyfile(repro, dest / "reproducer.mlir")
            rec["artifacts"]["reproducer"] = f"cases/{cid}/reproducer.mlir"


def condense(work: Path, dest: Path, *, epoch: int, keep) -> dict:
    """Write plan.json, results.json, env.json and the kept points' IR from `work` into `dest`;
    return the canonical results. `keep(results)`: ids of points that keep full IR beyond the
    sample (it sees the canonical results, so the answers can choose them)."""
    work, dest = Path(work), Path(dest)
    dest.mkdir(parents=True)
    plan = json.loads((work / "plan.json").read_text())
    results = json.loads((work / "results.json").read_text())
    env = json.loads((work / "env.json").read_text())
    shutil.copyfile(work / "plan.json", dest / "plan.json")
    shutil.copytree(work / "kernels", dest / "kernels")
    cases = [canonical_record(rec, work / "cases" / rec["id"]) for rec in results["cases"]]
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
            keep_ir(work / "cases" / out["id"], dest / "cases" / out["id"], out, out["id"], _script(scripts, out))
    env["taken"] = iso(epoch)
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


def executor_facts(name: str, prepare: dict, runtime: dict) -> dict:
    """The manifest's executor facts, less those that differ between two runs on one host."""
    facts = {"name": name, **prepare, **runtime}
    return {k: v for k, v in facts.items() if k not in _VOLATILE_FACTS}


def write_timings(work: Path, results: dict) -> None:
    """Per-point times, beside the work folder's records (they never enter the bundle)."""
    lines = ["id\tstatus\tcompile_s\tsass_s\twall_s"]
    for r in results["cases"]:
        lines.append("\t".join(str(x) for x in (r["id"], r["status"], r.get("compile_s", "-"),
                                                 r.get("sass_s", "-"), r.get("wall_s", "-"))))
    (Path(work) / "timings.tsv").write_text("\n".join(lines) + "\n")
