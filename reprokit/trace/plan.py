"""A traced program's records as a plan: one declared "call" case per distinct specialisation.

Each case carries the call as the contract in docs/user-cases.md writes it (`kind: "call"`,
`call: {args, grid, options}`), exactly as a declared case does: the harness specialises it with
the stack's own JIT (reprokit.harness.call). Its `trace` object says where the kernel came from,
how often it launched, the specialisation the program's own Triton derived for it (`spec`), and,
for an autotuned kernel, which config it is and whether the program ran with it.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from reprokit.common.redact import cut_values, redact_argv
from reprokit.config import GpuProfile
from reprokit.limits import mib, tensor_caps
from reprokit.options import GpuOptions
from reprokit.plan import DEFAULT_STAGES, DEFAULT_WARPS, Plan
from reprokit.trace import generated

if TYPE_CHECKING:  # the host's record of the program run; program imports no plan code
    from reprokit.trace.program import ProgramRun

SUITE = "trace"
_SLUG = re.compile(r"[^a-z0-9_.-]+")


def kernel_names(specs: Sequence[Any]) -> dict[int, str]:
    """spec number -> the kernel's name in the plan (its cases' family): the function's name, or,
    where functions of one name are defined in several source files, `<file's stem>.<name>`, so
    that two kernels never share a family. A factory's kernels (one definition, other closure
    constants) stay one family."""
    def where(s: Any) -> str:
        return (s.get("source") or {}).get("path") or s.get("file") or ""

    sources: dict[str, set[str]] = {}
    for s in specs:
        sources.setdefault(s["kernel"], set()).add(where(s))
    return {s["n"]: f"{Path(where(s)).stem}.{s['kernel']}" if len(sources[s["kernel"]]) > 1 and where(s)
            else s["kernel"] for s in specs}


def case_ids(specs: Sequence[Any], names: dict[int, str] | None = None) -> dict[int, str]:
    """spec number -> case id: `<kernel>.<k>`, k counting that kernel's specialisations in launch
    order (the kernel as kernel_names calls it; `names`: its answer, where the caller has it)."""
    ids: dict[int, str] = {}
    per_kernel: dict[str, int] = {}
    names = kernel_names(specs) if names is None else names
    for s in specs:
        base = _SLUG.sub("-", names[s["n"]].lower()).strip("-.") or "kernel"
        if not base[0].isalnum():
            base = "k" + base
        per_kernel[base] = per_kernel.get(base, 0) + 1
        ids[s["n"]] = f"{base}.{per_kernel[base]}"
    return ids


def chosen_configs(specs: Sequence[Any], autotune: Any) -> dict[int, bool]:
    """spec number -> True for the configs an autotuner let the program run with."""
    chosen = {}
    for ev in autotune:
        pick = ev.get("chosen")
        if not pick:
            continue
        for s in specs:
            if s["kernel"] != ev["kernel"] or s.get("autotune") is None:
                continue
            consts = s["call"]["args"]
            opts = s["call"]["options"]
            if all(consts.get(k) == v for k, v in pick["kwargs"].items()) and \
                    all(opts.get(k, v) == v for k, v in pick.items() if k != "kwargs"):
                chosen[s["n"]] = True
    return chosen


def build(run: ProgramRun, profile: GpuProfile, stack: dict[str, Any] | None = None, *, timeout_s: float = 300.0,
          kernels: Path | None = None) -> Plan:
    """The plan for a ProgramRun's specialisations, in the order the program first launched them
    (compile-only: a trace's capture compiles what the program ran; a replay may run it on a GPU);
    `kernels`: the folder of the program's kernel files (ProgramRun's)."""
    names = kernel_names(run.specs)
    ids = case_ids(run.specs, names)
    chosen = chosen_configs(run.specs, run.autotune)
    counts: dict[str, int] = next((r["launches"] for r in run.records if r["type"] == "end"), {})
    triton = (run.start or {}).get("triton")
    digests = {r["n"]: r for r in run.records if r["type"] == "digest" and r.get("digests")}
    cases = []
    for s in run.specs:
        opts = s["call"]["options"]
        derived = (s.get("spec") or {}).get("options") or {}
        src = s.get("source") or {}
        trace = {"n": s["n"], "launched": s["n"] in run.launched, "launches": counts.get(str(s["n"])),
                 "source": {"file": f"trace/sources/{Path(src['path']).name}" if src.get("path") else None,
                            "line": src.get("line")},
                 "left_out": list(s.get("skipped_names") or []), "spec": s["spec"]}
        if s.get("warmup"):  # first compiled by `kernel.warmup(...)`, not by a launch through the JIT
            trace["warmup"] = True
        if s.get("language") == "gluon":  # a @gluon.jit kernel: the harness loads it as written, Gluon's JIT
            gluon = {"language": "gluon"}
        else:
            gluon = {}
        if s.get("tma_fills"):  # 3.0-3.3 host-filled descriptors: how to fill them again (harness/tmafill.py)
            trace["tma_fills"] = s["tma_fills"]
        if s.get("autotune"):
            trace["autotune"] = {"call": s["autotune"]["call"], "chosen": bool(chosen.get(s["n"]))}
        if s["n"] in digests:  # the program's own compile, which the capture must match (harness.kinds.generated.faithful)
            trace.update(digests=digests[s["n"]]["digests"], triton=triton)
            if digests[s["n"]].get("key"):
                trace["cache_key"] = digests[s["n"]]["key"]
            if digests[s["n"]].get("toolchain"):  # a ptxas the program chose (harness.toolchain)
                trace["toolchain"] = digests[s["n"]]["toolchain"]
        cases.append({
            "id": ids[s["n"]], "kind": "call", "family": names[s["n"]], "control": "call",
            "description": f"{s['kernel']} as {Path(src.get('path') or '?').name}:{src.get('line')} launched it",
            "kernel": {"file": s["file"], "function": s["kernel"]},
            "call": s["call"],
            # The stack's JIT derives these from `call` (docs/user-cases.md): empty here, as for a declared case.
            "signature": {}, "constexprs": {}, "divisible_by_16": [],
            # the options the program's Triton compiled with: a launch option that shares its name
            # with a parameter (`num_stages: tl.constexpr`, Triton's fused-softmax tutorial) is both,
            # and is a parameter in `call`, not an option
            "num_warps": int(derived.get("num_warps", opts.get("num_warps", DEFAULT_WARPS))),
            "num_stages": int(derived.get("num_stages", opts.get("num_stages", DEFAULT_STAGES))),
            "requires": [], "expect": None, "gated_by": None, "timeout_s": float(timeout_s),
            "trace": trace, **gluon,
        })
    # the kernels the program compiled itself (Inductor's): trace/generated.py
    cases += generated.cases(run.records, {c["id"] for c in cases}, triton, timeout_s, (DEFAULT_WARPS, DEFAULT_STAGES))
    return Plan.build("trace", SUITE, GpuOptions(profile, "compile-only"), cases, stack=stack,
                      timeout_s=float(timeout_s), kernels=kernels)


def summary(run: ProgramRun, argv: list[Any], interpret: bool, tensors: str) -> dict[str, Any]:
    """trace/trace.json: how the program ran and what the recorder saw, beside the plan. The
    values of secret-saying options (`--api-key VALUE`) are cut from the command and from the
    program's stderr; `redacted_options` names the options."""
    ids = case_ids(run.specs)
    command, cut = redact_argv(argv)
    return {
        "format": 1, "command": command, "redacted_options": sorted({o for o, _ in cut}), "exit_code": run.exit_code,
        "failed": run.exit_code != 0,
        "stderr_tail": cut_values(run.stderr_tail, [v for _, v in cut]) if run.exit_code != 0 else "",
        "interpreter": interpret, "tensors": tensors, "inductor_caches": run.inductor_caches,
        "triton": (run.start or {}).get("triton"), "torch": (run.start or {}).get("torch"),
        "cases": [ids[s["n"]] for s in run.specs],
        # the kernels the program compiled itself (Inductor's), as build() names them
        "generated": [c["id"] for c in generated.cases(run.records, set(ids.values()), None, 1.0,
                                                        (DEFAULT_WARPS, DEFAULT_STAGES))],
        "autotune": [{"kernel": a["kernel"], "call": a["call"], "configs": a["configs"], "chosen": a["chosen"],
                      "chosen_by": a["chosen_by"],
                      "cases": [ids[s["n"]] for s in run.specs
                                if (s.get("autotune") or {}).get("call") == a["call"]]} for a in run.autotune],
        "missed": [{"kernel": m["kernel"], "error": m["error"]} for m in run.misses],
        # how many of the program's processes imported Triton, were forked, compiled, launched
        "processes": dict(run.processes),
        # 3.8+: what Triton's autotuning listener heard (the best config and every config's timings)
        "autotune_listener": [{k: r[k] for k in ("kernel", "chosen", "timings", "cache_hit")}
                              for r in run.records if r["type"] == "autotune_listener"],
        "tensor_files": sorted({f"trace/tensors/{r['file']}" for r in run.records if r["type"] == "tensors"}),
        # per kept file, what it holds: the arguments kept, those only written to (kept as zeros
        # where the launch wrote, not as the program's bytes: docs/trace.md), and those left out
        "tensors_kept": sorted(({"file": f"trace/tensors/{r['file']}", "case": ids[r["n"]], "when": r["when"],
                                 "kept": list(r.get("kept") or ()), "write_only": list(r.get("write_only") or ()),
                                 "over_cap": list(r.get("over_cap") or ()),
                                 "not_tensors": list(r.get("not_tensors") or ())}
                                for r in run.records if r["type"] == "tensors" and r["n"] in ids),
                               key=lambda t: t["file"]),
    }


def write_extras(run: ProgramRun, trace_dir: Path, capture_dir: Path, summary_doc: dict[str, Any]) -> None:
    """Put trace.json, the programs' own module files and any kept tensors in the capture's trace/."""
    dest = capture_dir / "trace"
    (dest / "sources").mkdir(parents=True, exist_ok=True)
    (dest / "trace.json").write_text(json.dumps(summary_doc, indent=1, sort_keys=True) + "\n")
    for s in run.specs:
        path = (s.get("source") or {}).get("path")
        if path and Path(path).is_file() and not (dest / "sources" / Path(path).name).exists():
            shutil.copyfile(path, dest / "sources" / Path(path).name)
    tensors = trace_dir / "tensors"
    if tensors.is_dir():
        shutil.copytree(tensors, dest / "tensors")


def what_leaves(run: ProgramRun, capture_dir: Path, tensors: str, environ: Mapping[str, str]) -> list[str]:
    """One line each on what of the user's own goes into the bundle beside the kernels: the
    program's source files, the tensors kept (packed byte-exact, never scanned), and any tensor
    left out because a bundle reader would refuse it (reprokit/limits.py)."""
    lines = []
    dest = capture_dir / "trace"
    for folder, what, note in (
            ("sources", "source file(s) of your program", ""),
            ("tensors", "tensor file(s) of your program's launches",
             ": your data, packed byte-exact and not scanned for secrets or host names")):
        files = sorted(f for f in (dest / folder).rglob("*") if f.is_file()) if (dest / folder).is_dir() else []
        if files:
            size = sum(f.stat().st_size for f in files)
            lines.append(f"trace: the bundle holds {len(files)} {what}, {mib(size)}, in trace/{folder}/{note}")
    ids = case_ids(run.specs)

    def named(key: str) -> list[str]:
        """`<case>:<argument>` for each argument the launches' tensor records list under `key`."""
        return sorted({f"{ids.get(r['n'], r['n'])}:{name}" for r in run.records
                       if r["type"] == "tensors" for name in r.get(key) or ()})

    def some(names: list[str]) -> str:
        return ", ".join(names[:8]) + (" ..." if len(names) > 8 else "")

    left = named("over_cap")
    if left:
        each, per_file, whole = tensor_caps(tensors, environ)
        lines.append(f"trace: left out {len(left)} tensor(s) over what --tensors {tensors} keeps and a bundle reader "
                     f"reads back ({mib(each)} a tensor, {mib(per_file)} a launch, {mib(whole)} in all): {some(left)}")
    foreign = named("not_tensors")
    if foreign:
        lines.append(f"trace: not kept {len(foreign)} argument(s) that are not torch tensors (a library's own "
                     f"buffer type): a replay makes their contents up: {some(foreign)}")
    failed = sorted({str(ids.get(r["n"], r["n"])) for r in run.records if r["type"] == "tensors_failed"})
    if failed:
        lines.append(f"trace: could not keep the tensors of {len(failed)} launch(es), replayed without them: "
                     f"{some(failed)}")
    return lines
