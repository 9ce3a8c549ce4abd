"""A project's own sweeps: `[[sweep]]` tables in reprokit.toml whose base is one of its declared
cases (docs/user-cases.md, "Sweeping a declared case"), checked with `file:line` problems beside
the cases' and made into the SweepSpec that `reprokit sweep NAME` runs like a shipped one.

An axis names what it moves: a parameter of the kernel (values as `[case.args]` writes them), a
launch option (num_warps, num_stages, ...), `grid`, or on an autotuned kernel `config` (the
autotuner's configs by index, or "all"). A sweep of an autotuned kernel runs one config per
point: the base point runs `base_config` (default: the case's first selected config), the
`config` axis moves across configs as declared, and an axis over a meta-parameter or option the
configs set moves that value within the config (its pre_hook sees the moved value).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from reprokit.config import load_config, used_project
from reprokit.errors import ConfigError, FileSystemError, ProjectInvalid, UsageError
from reprokit.sweep import calls
from reprokit.sweep.spec import SASS_POLICIES, VARY, Group, SweepSpec, Target
from reprokit.userspec.check import OPTIONS, Findings, examine, normalise_value
from reprokit.userspec.plan import DEFAULT_TIMEOUT_S, plan_case
from reprokit.userspec.project import Project
from reprokit.userspec.project import load as load_project

SWEEP_KEYS = ("name", "base", "vary", "gpus", "stacks", "axes", "base_config", "base_values", "reduced",
              "timeout_s", "sass", "description", "hypotheses")
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
# What Triton launches with when neither the call nor a config says (its NVIDIA defaults).
_OPTION_DEFAULTS = {"num_warps": 4, "num_stages": 3, "num_ctas": 1, "enable_fp_fusion": True, "debug": False,
                    "launch_cooperative_grid": False, "launch_pdl": False}
_VALUE_KEYS = {"tensor", "dtype", "strides", "align", "descriptor", "block", "shape", "padding", "none"}


@dataclass(frozen=True)
class Checked:
    """The project's findings (cases and sweeps together) and its sweeps as specs, by name."""

    findings: Findings
    specs: dict


def declared(project: Project | None) -> list[str]:
    """The names of the project's [[sweep]] tables, as written (unchecked)."""
    if project is None:
        return []
    return [s["name"] for s in project.sweeps if isinstance(s, dict) and isinstance(s.get("name"), str)]


def project_sweep(spec: str) -> bool:
    """Whether `spec` names a sweep of the project in use (config.used_project); a path to a
    TOML file never does. A project that does not parse declares none here: the verb says why."""
    path = used_project()
    if path is None or spec.endswith(".toml") or Path(spec).exists():
        return False
    try:
        return spec in declared(load_project(path))
    except (ConfigError, FileSystemError):
        return False


def examine_all(project: Project) -> Checked:
    """Every problem of the project (its cases', then its sweeps'), and the sweeps that have none."""
    rep = examine(project)
    specs = {}
    names: dict = {}
    raw = project.raw.get("sweep", [])
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        rep.add(_line(project, "sweep"), "sweeps are [[sweep]] tables")
        raw = []
    for i, table in enumerate(raw):
        spec = _sweep(project, rep, i, table, names)
        if spec is not None:
            specs[spec.name] = spec
    return Checked(rep, specs)


def _line(project: Project, key: str) -> int:
    lines = project.lines()
    return next((n for n, name, _ in lines.headers if name.split(".")[0] == key), 1)


def load(project: Project, name: str, kernels: str | None = None) -> SweepSpec:
    """The project's sweep `name`, its kernels to be copied from `kernels`; ProjectInvalid listing
    every problem when the project has any (as `run` refuses a project with problems)."""
    done = examine_all(project)
    if done.findings.problems:
        lines = done.findings.lines()
        raise ProjectInvalid(f"{project.shown}: {len(lines)} problem(s) in the declared cases and sweeps "
                             "(reprokit check lists them)", problems=lines)
    if name not in done.specs:
        raise UsageError(f"{project.shown} declares no sweep {name!r} (its sweeps: "
                         f"{', '.join(sorted(done.specs)) or 'none'})")
    spec = done.specs[name]
    return SweepSpec(**{**spec.__dict__, "kernels": kernels})


def _known_targets(project: Project) -> tuple[set, set]:
    """Stack and GPU profile names a sweep may name: the packaged ones and the project's own."""
    own_stacks = set((project.raw.get("stacks") or {}) if isinstance(project.raw.get("stacks"), dict) else ())
    own_gpus = set((project.raw.get("gpus") or {}) if isinstance(project.raw.get("gpus"), dict) else ())
    try:
        cfg = load_config()
    except ConfigError:
        return own_stacks, own_gpus  # the project's own tables are broken: said by their own check
    return set(cfg.stacks) | own_stacks, set(cfg.gpus) | own_gpus


def _sweep(project: Project, rep: Findings, i: int, t: dict, names: dict) -> SweepSpec | None:
    lines = project.lines()
    start = lines.case(i, "sweep")
    name = t.get("name")
    title = f"sweep {name!r}" if isinstance(name, str) else f"sweep #{i + 1}"
    ok = True

    def bad(key, message, table=None):
        nonlocal ok
        ok = False
        rep.add(lines.case_key(i, key, table, array="sweep") if key else start, f"{title}: {message}")

    for key in t:
        if key not in SWEEP_KEYS:
            bad(key, f"unknown key {key!r} (a sweep has {', '.join(SWEEP_KEYS)})")
    if not isinstance(name, str) or not _NAME.match(name):
        bad("name" if "name" in t else None, f"name {name!r} must be lower-case letters, digits, '_' or '-'"
            if name is not None else "has no name (what `reprokit sweep NAME` calls it)")
    elif name in names:
        bad("name", f"duplicate name (also the sweep at line {names[name]})")
    else:
        names[name] = start
    vary = t.get("vary", "one-at-a-time")
    if vary not in VARY:
        bad("vary", f"vary {vary!r} is not one of {', '.join(VARY)}")
    sass = t.get("sass", "base")
    if sass not in SASS_POLICIES:
        bad("sass", f"sass {sass!r} is not one of {', '.join(SASS_POLICIES)}")
    timeout = t.get("timeout_s")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and math.isfinite(timeout) and timeout > 0):
        bad("timeout_s", f"timeout_s must be a number of seconds above 0, not {timeout!r}")
    if "description" in t and not isinstance(t["description"], str):
        bad("description", "description must be a string")
    known_stacks, known_gpus = _known_targets(project)
    gpus = t.get("gpus")
    if not (isinstance(gpus, list) and gpus and all(isinstance(g, str) for g in gpus)):
        bad("gpus" if "gpus" in t else None, "gpus must name the GPU profiles to compile for, e.g. [\"h100\"]")
        gpus = []
    for g in gpus:
        if g not in known_gpus:
            bad("gpus", f"no GPU profile {g!r} (reprokit stacks lists them)")
    stacks = t.get("stacks", [])
    if not (isinstance(stacks, list) and all(isinstance(s, str) for s in stacks)):
        bad("stacks", "stacks must be a list of stack names (or left out: then --stacks names them)")
        stacks = []
    for s in stacks:
        if s not in known_stacks:
            bad("stacks", f"no stack {s!r} (reprokit stacks lists them)")

    base_id = t.get("base")
    case = next((c for c in rep.cases if c["id"] == base_id), None)
    if not isinstance(base_id, str):
        bad("base" if "base" in t else None, "base must name a [[case]] by its id")
        return None
    if case is None:
        declared_ids = [c.get("id") for c in project.cases if isinstance(c, dict)]
        bad("base", f"base {base_id!r} is no declared case" if base_id not in declared_ids else
            f"base {base_id!r}: that case has problems of its own (listed above)")
        return None
    kdef = rep.kernels.get(base_id)
    axes_raw = t.get("axes")
    if not isinstance(axes_raw, dict) or not axes_raw:
        bad("axes" if "axes" in t else None, "axes must be a table of name = [values...] ([sweep.axes])")
        return None

    autotuned = bool(case["autotuned"])
    tuned = set(kdef.tuned or ()) if kdef is not None else set()
    params = set(kdef.params) if kdef is not None and kdef.exact else None
    picked = case["configs"] if isinstance(case["configs"], list) else None
    count = kdef.config_count if kdef is not None else None
    config = None
    if autotuned:
        config = t.get("base_config", picked[0] if picked else 0)
        if not (isinstance(config, int) and not isinstance(config, bool) and config >= 0) \
                or (count is not None and config >= count):
            bad("base_config", f"base_config {config!r} must be one of the autotuner's configs (0-"
                               f"{count - 1 if count else '...'})")
            config = 0
    elif "base_config" in t:
        bad("base_config", f"base_config is for @triton.autotune kernels, and {case['function']} is not autotuned")
    cfg_values = (kdef.configs[config] if kdef is not None and kdef.configs and config is not None
                  and config < len(kdef.configs) else None)

    def kind_of(key: str) -> str | None:
        if key == "config":
            return "config" if autotuned else None
        if key == "grid":
            return "grid"
        if key in OPTIONS:
            return "option"
        if key in tuned or (autotuned and kdef is not None and kdef.tuned is None and key not in case["call"]["args"]):
            return "tuned"  # set by the configs (or, where ast cannot read them, perhaps): moved within one
        if params is None or key in params:
            return "arg"
        return None

    def check_value(key: str, kind: str, v):
        """(the value as the call's JSON, None) or (None, why)."""
        if kind == "config":
            if v == "all":
                return None, "\"all\" is the whole axis, not a value"
            if not (isinstance(v, int) and not isinstance(v, bool) and v >= 0) or (count is not None and v >= count):
                return None, f"config {v!r} is not one of the autotuner's configs (0-{count - 1 if count else '...'})"
            return v, None
        if kind == "grid":
            if not (isinstance(v, list) and 1 <= len(v) <= 3 and all(isinstance(g, int) and not isinstance(g, bool)
                                                                     and g >= 1 for g in v)):
                return None, f"a grid {v!r} must be 1 to 3 whole numbers, each 1 or more"
            return list(v), None
        if kind == "option":
            if key in ("enable_fp_fusion", "launch_cooperative_grid", "launch_pdl", "debug"):
                return (v, None) if isinstance(v, bool) else (None, f"{key} must be true or false, not {v!r}")
            if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "maxnreg" else 1) \
                    or (key == "num_warps" and v & (v - 1)):
                return None, f"{key} {v!r} must be a whole number" + (
                    ", a power of two" if key == "num_warps" else "")
            return v, None
        value, why = normalise_value(v)
        return (value, None) if why is None else (None, why)

    # The axes: each value checked and encoded; a table that names the axis's own key among
    # others moves several names at once (one-at-a-time only).
    base_vals = t.get("base_values", {})
    if not isinstance(base_vals, dict):
        bad("base_values", "base_values must be a table of name = value")
        base_vals = {}
    kinds: dict = {}
    values: dict = {}
    axes: list = []
    linked: set = set()
    for axis, raw_values in axes_raw.items():
        kind = kind_of(axis)
        if kind is None:
            bad(axis, f"axis {axis!r} is not a parameter of {case['function']}, a launch option "
                      f"({', '.join(OPTIONS)}), grid" + (" or config" if autotuned else "")
                + (" (config is for @triton.autotune kernels)" if axis == "config" else ""), table="axes")
            continue
        kinds[axis] = kind
        if kind == "config" and raw_values == "all":
            if picked:
                raw_values = list(picked)
            elif count is not None:
                raw_values = list(range(count))
            else:
                bad(axis, f"config = \"all\": {case['function']}'s configs are computed, so how many there are is "
                          "not known before the file runs; list their indices, e.g. config = [0, 1, 2]",
                    table="axes")
                continue
        if not isinstance(raw_values, list) or not raw_values:
            bad(axis, f"axis {axis!r} needs a list of values", table="axes")
            continue
        encoded = []
        for v in raw_values:
            if isinstance(v, dict) and axis in v and not (set(v) <= _VALUE_KEYS):
                if vary == "product":
                    bad(axis, f"axis {axis!r}: a table that moves several names is one-at-a-time only", table="axes")
                    continue
                table = {}
                for k, x in v.items():
                    kk = kind_of(k)
                    if kk is None or kk == "config":
                        bad(axis, f"axis {axis!r}: {k!r} in a table value is not a parameter, option or grid",
                            table="axes")
                        continue
                    val, why = check_value(k, kk, x)
                    if why:
                        bad(axis, f"axis {axis!r}: {k}: {why}", table="axes")
                        continue
                    kinds[k] = kk
                    values.setdefault(k, {})[json.dumps(calls.encode(val))] = val
                    table[k] = calls.encode(val)
                    if k != axis:
                        linked.add(k)
                encoded.append(table)
                continue
            val, why = check_value(axis, kind, v)
            if why:
                bad(axis, f"axis {axis!r}: {why}", table="axes")
                continue
            values.setdefault(axis, {})[json.dumps(calls.encode(val))] = val
            encoded.append(calls.encode(val))
        if vary == "product":
            numeric = [isinstance(e, (int, float)) for e in encoded]
            if any(numeric) and not all(numeric):
                bad(axis, f"axis {axis!r}: a product's axis holds numbers or labels, not both (its rules compare "
                          "values)", table="axes")
        labels = [calls.label(e[axis] if isinstance(e, dict) else e) for e in encoded]
        if len(set(labels)) != len(labels):
            bad(axis, f"axis {axis!r} gives one value twice", table="axes")
        axes.append((axis, tuple(encoded)))

    # The base's value of every swept name: from the case's call, the base config, the kernel's
    # default, Triton's option defaults; base_values only for what none of those says.
    base, args, opts = {}, case["call"]["args"], case["call"]["options"]
    for key in [a for a, _ in axes] + sorted(linked):
        kind = kinds[key]
        known = None
        if kind == "config":
            known = config
        elif kind == "grid":
            known = case["call"]["grid"]
        elif kind in ("tuned", "option") and autotuned:
            if cfg_values is not None and key in cfg_values:
                known = cfg_values[key]
            elif kind == "option" and cfg_values is not None:
                known = _OPTION_DEFAULTS.get(key)
        elif kind == "option":
            known = opts.get(key, _OPTION_DEFAULTS.get(key))
        elif key in args:
            known = args[key]
        elif kdef is not None and key in kdef.defaults:
            known = normalise_value(kdef.defaults[key] if kdef.defaults[key] is not None else {"none": True})[0]
        if known is not None and key in base_vals:
            bad("base_values", f"base_values {key}: the base's value is known already ({calls.label(known)}); "
                               "leave it out", table=None)
        if known is None:
            if key not in base_vals:
                bad(key, f"axis {key!r}: the base's value is not known here (" + (
                    f"config {config} is computed" if autotuned and kind in ("tuned", "option") else
                    "the case does not give it") + f"): give it as base_values = {{ {key} = ... }}", table="axes")
                continue
            v, why = check_value(key, kind, base_vals[key])
            if why:
                bad("base_values", f"base_values {key}: {why}")
                continue
            known = v
        values.setdefault(key, {})[json.dumps(calls.encode(known))] = known
        base[key] = calls.encode(known)
    for key in base_vals:
        if key not in base:
            bad("base_values", f"base_values {key}: no axis moves it")

    reduced_raw = t.get("reduced", {})
    reduced = {}
    if not isinstance(reduced_raw, dict):
        bad("reduced", "reduced must be a table of axis = [values...]")
        reduced_raw = {}
    for axis, vals in reduced_raw.items():
        if axis not in dict(axes):
            bad("reduced", f"reduced names {axis!r}, which is no axis of this sweep")
            continue
        if not isinstance(vals, list):
            bad("reduced", f"reduced {axis}: a list of the axis's values")
            continue
        mine = {calls.label(e[axis] if isinstance(e, dict) else e) for e in dict(axes)[axis]}
        enc = []
        for v in vals:
            val, why = check_value(axis, kinds[axis], v)
            if why or calls.label(calls.encode(val)) not in mine:
                bad("reduced", f"reduced {axis}: {v!r} is not one of the axis's values")
                continue
            enc.append(calls.encode(val))
        reduced[axis] = enc
    hyps = t.get("hypotheses", [])
    if not (isinstance(hyps, list) and all(isinstance(h, dict) and isinstance(h.get("name"), str)
                                           and isinstance(h.get("rule"), dict) for h in hyps)):
        bad("hypotheses", "hypotheses are [{ name = \"...\", rule = { axis = threshold, ... } }]")
        hyps = []
    elif hyps and vary != "product":
        bad("hypotheses", "hypotheses are checked against a product's points: vary = \"product\"")
    for h in hyps:
        for axis in h["rule"]:
            if axis not in dict(axes):
                bad("hypotheses", f"hypothesis {h['name']!r} names {axis!r}, which is no axis of this sweep")
    if not ok or not isinstance(name, str):
        return None
    timeout_s = float(timeout or case["timeout_s"] or (project.raw.get("project") or {}).get("timeout_s")
                      or DEFAULT_TIMEOUT_S)
    pc = plan_case(case, timeout_s)
    info = {"case": pc, "source": case["source"], "kinds": kinds, "values": values, "config": config,
            "count": count}
    group = Group(name=name, family=pc["family"], vary=vary, file=case["file"], function=case["function"],
                  requires=(), signature={}, divisible_by_16={}, constexprs=(), base=base, axes=tuple(axes),
                  reduced=reduced, expect=case["expect"], named=(), description=str(t.get("description", "")),
                  call=info)
    doc = {"sweep": t, "case": pc, "kernels": {n: hashlib.sha256(p.read_bytes()).hexdigest()
                                               for n, p in sorted(rep.sources.items())}}
    return SweepSpec(name=name, description=str(t.get("description", "")),
                     targets=tuple(Target(g, tuple(stacks)) for g in gpus), timeout_s=timeout_s, sass=sass,
                     groups=(group,), path=f"{project.shown}:{start}",
                     sha256=hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest(),
                     hypotheses=tuple({"name": h["name"], "rule": dict(h["rule"])} for h in hyps))
