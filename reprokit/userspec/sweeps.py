"""A project's own sweeps: `[[sweep]]` tables in reprokit.toml whose base is one of its declared
cases (docs/user-cases.md, "Sweeping a declared case"), checked with `file:line` problems beside
the cases' and made into the SweepSpec that `reprokit sweep NAME` runs like a shipped one.

An axis names what it moves: a parameter of the kernel (values as `[case.args]` writes them), a
launch option (num_warps, num_stages, ...), `grid`, or on an autotuned kernel `config` (the
autotuner's configs by index, or "all"). A sweep of an autotuned kernel runs one config per
point: the base point runs `base_config` (default: the case's first selected config), the
`config` axis moves across configs as declared, and an axis over a meta-parameter or option the
configs set moves that value within the config (its pre_hook sees the moved value).

One table is checked by `_sweep`, which runs its phases in order: `_header` (keys, name, vary,
sass, timeout_s), `_targets` (gpus, stacks), `_base_case`, `_base` (base_config), `_axes` (each
value by `_Base.check_value`), `_base_point` (base_values), `_reduced`, `_hypotheses`, then
`_spec`. Each adds its problems through `_Where` as it finds them, so their order never changes.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprokit.config import load_config, used_project
from reprokit.errors import ConfigError, FileSystemError, ProjectInvalid, UsageError
from reprokit.sweep import calls
from reprokit.sweep.spec import SASS_POLICIES, VARY, Group, SweepSpec, Target
from reprokit.userspec.check import OPTIONS, Findings, KernelDef, examine, normalise_value
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
    """One [[sweep]] table (the i-th) checked, its problems added to `rep`, and its SweepSpec when
    it has none. The phases run in this order, each adding its problems as it finds them: the
    header, the targets, the base case, the axes, the base point, reduced, hypotheses."""
    where = _Where(project, rep, i, t)
    head = _header(where, t, names)
    gpus, stacks = _targets(where, project, t)
    case = _base_case(where, project, rep, t)
    if case is None:
        return None
    axes_raw = t.get("axes")
    if not isinstance(axes_raw, dict) or not axes_raw:
        where.bad("axes" if "axes" in t else None, "axes must be a table of name = [values...] ([sweep.axes])")
        return None
    base = _base(where, rep, t, case)
    swept = _axes(where, base, t, axes_raw, head.vary)
    point = _base_point(where, base, swept)
    reduced = _reduced(where, base, t, swept)
    hyps = _hypotheses(where, t, head.vary, swept)
    if not where.ok or not isinstance(head.name, str):
        return None
    return _spec(project, rep, where, t, head, gpus, stacks, base, swept, point, reduced, hyps)


class _Where:
    """Where one [[sweep]] table's problems go: each at the line of its key (the table's own line
    when the key is absent), prefixed with the sweep's name (or its position when it has none);
    `ok` until the first."""

    def __init__(self, project: Project, rep: Findings, i: int, t: dict) -> None:
        self.rep, self.i = rep, i
        self.lines = project.lines()
        self.start = self.lines.case(i, "sweep")
        name = t.get("name")
        self.title = f"sweep {name!r}" if isinstance(name, str) else f"sweep #{i + 1}"
        self.ok = True

    def bad(self, key: str | None, message: str, table: str | None = None) -> None:
        self.ok = False
        line = self.lines.case_key(self.i, key, table, array="sweep") if key else self.start
        self.rep.add(line, f"{self.title}: {message}")


@dataclass(frozen=True)
class _Header:
    """The table's own settings: name, vary, sass and timeout_s, each as written (a spec is built
    only when every one was found good)."""

    name: Any
    vary: Any
    sass: Any
    timeout: Any


def _header(where: _Where, t: dict, names: dict) -> _Header:
    """Unknown keys, the name (well-formed, not taken: `names` maps each taken one to its line),
    vary, sass, timeout_s and description."""
    for key in t:
        if key not in SWEEP_KEYS:
            where.bad(key, f"unknown key {key!r} (a sweep has {', '.join(SWEEP_KEYS)})")
    name = t.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        where.bad("name" if "name" in t else None, f"name {name!r} must be lower-case letters, digits, '_' or '-'"
                  if name is not None else "has no name (what `reprokit sweep NAME` calls it)")
    elif name in names:
        where.bad("name", f"duplicate name (also the sweep at line {names[name]})")
    else:
        names[name] = where.start
    vary = t.get("vary", "one-at-a-time")
    if vary not in VARY:
        where.bad("vary", f"vary {vary!r} is not one of {', '.join(VARY)}")
    sass = t.get("sass", "base")
    if sass not in SASS_POLICIES:
        where.bad("sass", f"sass {sass!r} is not one of {', '.join(SASS_POLICIES)}")
    timeout = t.get("timeout_s")
    if timeout is not None and not (isinstance(timeout, (int, float)) and not isinstance(timeout, bool)
                                    and math.isfinite(timeout) and timeout > 0):
        where.bad("timeout_s", f"timeout_s must be a number of seconds above 0, not {timeout!r}")
    if "description" in t and not isinstance(t["description"], str):
        where.bad("description", "description must be a string")
    return _Header(name, vary, sass, timeout)


def _targets(where: _Where, project: Project, t: dict) -> tuple[list, list]:
    """The GPU profiles and stacks the sweep names ([] for a malformed list), each one known."""
    known_stacks, known_gpus = _known_targets(project)
    gpus = t.get("gpus")
    if not (isinstance(gpus, list) and gpus and all(isinstance(g, str) for g in gpus)):
        where.bad("gpus" if "gpus" in t else None, "gpus must name the GPU profiles to compile for, e.g. [\"h100\"]")
        gpus = []
    for g in gpus:
        if g not in known_gpus:
            where.bad("gpus", f"no GPU profile {g!r} (reprokit stacks lists them)")
    stacks = t.get("stacks", [])
    if not (isinstance(stacks, list) and all(isinstance(s, str) for s in stacks)):
        where.bad("stacks", "stacks must be a list of stack names (or left out: then --stacks names them)")
        stacks = []
    for s in stacks:
        if s not in known_stacks:
            where.bad("stacks", f"no stack {s!r} (reprokit stacks lists them)")
    return gpus, stacks


def _base_case(where: _Where, project: Project, rep: Findings, t: dict) -> dict | None:
    """The normalised case `base` names; None (said) when it names none, or one with problems."""
    base_id = t.get("base")
    case = next((c for c in rep.cases if c["id"] == base_id), None)
    if not isinstance(base_id, str):
        where.bad("base" if "base" in t else None, "base must name a [[case]] by its id")
        return None
    if case is None:
        declared_ids = [c.get("id") for c in project.cases if isinstance(c, dict)]
        where.bad("base", f"base {base_id!r} is no declared case" if base_id not in declared_ids else
                  f"base {base_id!r}: that case has problems of its own (listed above)")
        return None
    return case


@dataclass(frozen=True)
class _Base:
    """What the phases after the header read of the base case: its call, its kernel as ast read
    it (None when not read), and on an autotuned kernel the configs and the one the base point
    runs. It says what kind of name an axis moves and checks one value of it."""

    case: dict
    kdef: KernelDef | None
    autotuned: bool
    tuned: frozenset
    params: frozenset | None   # the kernel's parameters, when ast read them exactly
    picked: list | None        # the configs the case selects
    count: int | None          # how many configs the autotuner has, when known
    config: int | None         # the base point's config (autotuned only)
    cfg_values: dict | None    # that config's values, when ast read them

    def kind_of(self, key: str) -> str | None:
        """config, grid, option, tuned (set by the configs), arg, or None (nothing it could move)."""
        if key == "config":
            return "config" if self.autotuned else None
        if key == "grid":
            return "grid"
        if key in OPTIONS:
            return "option"
        if key in self.tuned or (self.autotuned and self.kdef is not None and self.kdef.tuned is None
                                 and key not in self.case["call"]["args"]):
            return "tuned"  # set by the configs (or, where ast cannot read them, perhaps): moved within one
        if self.params is None or key in self.params:
            return "arg"
        return None

    def check_value(self, key: str, kind: str, v) -> tuple:
        """(the value as the call's JSON, None) or (None, why)."""
        if kind == "config":
            count = self.count
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
            return _check_option(key, v)
        value, why = normalise_value(v)
        return (value, None) if why is None else (None, why)


def _check_option(key: str, v) -> tuple:
    """A launch option's value: (v, None) or (None, why)."""
    if key in ("enable_fp_fusion", "launch_cooperative_grid", "launch_pdl", "debug"):
        return (v, None) if isinstance(v, bool) else (None, f"{key} must be true or false, not {v!r}")
    if not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "maxnreg" else 1) \
            or (key == "num_warps" and v & (v - 1)):
        return None, f"{key} {v!r} must be a whole number" + (
            ", a power of two" if key == "num_warps" else "")
    return v, None


def _base(where: _Where, rep: Findings, t: dict, case: dict) -> _Base:
    """The base case read for the axes, with base_config checked: an autotuned kernel's base point
    runs it (default: the case's first selected config, else 0); any other kernel has none."""
    kdef = rep.kernels.get(case["id"])
    autotuned = bool(case["autotuned"])
    picked = case["configs"] if isinstance(case["configs"], list) else None
    count = kdef.config_count if kdef is not None else None
    config = None
    if autotuned:
        config = t.get("base_config", picked[0] if picked else 0)
        if not (isinstance(config, int) and not isinstance(config, bool) and config >= 0) \
                or (count is not None and config >= count):
            where.bad("base_config", f"base_config {config!r} must be one of the autotuner's configs (0-"
                                     f"{count - 1 if count else '...'})")
            config = 0
    elif "base_config" in t:
        where.bad("base_config", f"base_config is for @triton.autotune kernels, and {case['function']} is not "
                                 "autotuned")
    cfg_values = (kdef.configs[config] if kdef is not None and kdef.configs and config is not None
                  and config < len(kdef.configs) else None)
    return _Base(case=case, kdef=kdef, autotuned=autotuned,
                 tuned=frozenset(kdef.tuned or ()) if kdef is not None else frozenset(),
                 params=frozenset(kdef.params) if kdef is not None and kdef.exact else None,
                 picked=picked, count=count, config=config, cfg_values=cfg_values)


@dataclass(frozen=True)
class _Swept:
    """What the axes move: each axis with its encoded values in order, the kind of every name
    moved (linked ones too), every value seen of each (by its JSON, for the harness), the names
    moved only beside an axis's own (linked), and base_values as written."""

    axes: list         # (axis, tuple of encoded values)
    kinds: dict
    values: dict
    linked: set
    base_vals: dict


def _axes(where: _Where, base: _Base, t: dict, axes_raw: dict, vary) -> _Swept:
    """Each axis checked and its values encoded; a table that names the axis's own key among
    others moves several names at once (one-at-a-time only)."""
    base_vals = t.get("base_values", {})
    if not isinstance(base_vals, dict):
        where.bad("base_values", "base_values must be a table of name = value")
        base_vals = {}
    swept = _Swept(axes=[], kinds={}, values={}, linked=set(), base_vals=base_vals)
    function = base.case["function"]
    for axis, raw_values in axes_raw.items():
        kind = base.kind_of(axis)
        if kind is None:
            where.bad(axis, f"axis {axis!r} is not a parameter of {function}, a launch option "
                            f"({', '.join(OPTIONS)}), grid" + (" or config" if base.autotuned else "")
                      + (" (config is for @triton.autotune kernels)" if axis == "config" else ""), table="axes")
            continue
        swept.kinds[axis] = kind
        if kind == "config" and raw_values == "all":
            if base.picked:
                raw_values = list(base.picked)
            elif base.count is not None:
                raw_values = list(range(base.count))
            else:
                where.bad(axis, f"config = \"all\": {function}'s configs are computed, so how many there are is "
                                "not known before the file runs; list their indices, e.g. config = [0, 1, 2]",
                          table="axes")
                continue
        if not isinstance(raw_values, list) or not raw_values:
            where.bad(axis, f"axis {axis!r} needs a list of values", table="axes")
            continue
        encoded = _axis_values(where, base, axis, kind, raw_values, vary, swept)
        if vary == "product":
            numeric = [isinstance(e, (int, float)) for e in encoded]
            if any(numeric) and not all(numeric):
                where.bad(axis, f"axis {axis!r}: a product's axis holds numbers or labels, not both (its rules "
                                "compare values)", table="axes")
        labels = [calls.label(e[axis] if isinstance(e, dict) else e) for e in encoded]
        if len(set(labels)) != len(labels):
            where.bad(axis, f"axis {axis!r} gives one value twice", table="axes")
        swept.axes.append((axis, tuple(encoded)))
    return swept


def _axis_values(where: _Where, base: _Base, axis: str, kind: str, raw_values: list, vary,
                 swept: _Swept) -> list:
    """One axis's values encoded (those with problems left out, said), each noted in `swept`."""
    encoded: list = []
    for v in raw_values:
        if isinstance(v, dict) and axis in v and not (set(v) <= _VALUE_KEYS):
            if vary == "product":
                where.bad(axis, f"axis {axis!r}: a table that moves several names is one-at-a-time only",
                          table="axes")
                continue
            encoded.append(_linked_value(where, base, axis, v, swept))
            continue
        val, why = base.check_value(axis, kind, v)
        if why:
            where.bad(axis, f"axis {axis!r}: {why}", table="axes")
            continue
        swept.values.setdefault(axis, {})[json.dumps(calls.encode(val))] = val
        encoded.append(calls.encode(val))
    return encoded


def _linked_value(where: _Where, base: _Base, axis: str, v: dict, swept: _Swept) -> dict:
    """One value of `axis` that moves several names (a table naming the axis among others):
    each name checked and encoded; the others are noted as linked."""
    table = {}
    for k, x in v.items():
        kk = base.kind_of(k)
        if kk is None or kk == "config":
            where.bad(axis, f"axis {axis!r}: {k!r} in a table value is not a parameter, option or grid",
                      table="axes")
            continue
        val, why = base.check_value(k, kk, x)
        if why:
            where.bad(axis, f"axis {axis!r}: {k}: {why}", table="axes")
            continue
        swept.kinds[k] = kk
        swept.values.setdefault(k, {})[json.dumps(calls.encode(val))] = val
        table[k] = calls.encode(val)
        if k != axis:
            swept.linked.add(k)
    return table


def _base_point(where: _Where, base: _Base, swept: _Swept) -> dict:
    """The base's value of every swept name, encoded: what the base case says (_known), else its
    base_values entry; base_values only for what the case does not say."""
    point: dict = {}
    for key in [a for a, _ in swept.axes] + sorted(swept.linked):
        kind = swept.kinds[key]
        known = _known(base, key, kind)
        if known is not None and key in swept.base_vals:
            where.bad("base_values", f"base_values {key}: the base's value is known already ({calls.label(known)}); "
                                     "leave it out", table=None)
        if known is None:
            if key not in swept.base_vals:
                where.bad(key, f"axis {key!r}: the base's value is not known here (" + (
                    f"config {base.config} is computed" if base.autotuned and kind in ("tuned", "option") else
                    "the case does not give it") + f"): give it as base_values = {{ {key} = ... }}", table="axes")
                continue
            v, why = base.check_value(key, kind, swept.base_vals[key])
            if why:
                where.bad("base_values", f"base_values {key}: {why}")
                continue
            known = v
        swept.values.setdefault(key, {})[json.dumps(calls.encode(known))] = known
        point[key] = calls.encode(known)
    for key in swept.base_vals:
        if key not in point:
            where.bad("base_values", f"base_values {key}: no axis moves it")
    return point


def _known(base: _Base, key: str, kind: str):
    """The base's value of `key` as the base case says it, or None: from the case's call, the base
    config, the kernel's default, Triton's option defaults."""
    call = base.case["call"]
    if kind == "config":
        return base.config
    if kind == "grid":
        return call["grid"]
    if kind in ("tuned", "option") and base.autotuned:
        if base.cfg_values is not None and key in base.cfg_values:
            return base.cfg_values[key]
        if kind == "option" and base.cfg_values is not None:
            return _OPTION_DEFAULTS.get(key)
        return None
    if kind == "option":
        return call["options"].get(key, _OPTION_DEFAULTS.get(key))
    if key in call["args"]:
        return call["args"][key]
    if base.kdef is not None and key in base.kdef.defaults:
        default = base.kdef.defaults[key]
        return normalise_value(default if default is not None else {"none": True})[0]
    return None


def _reduced(where: _Where, base: _Base, t: dict, swept: _Swept) -> dict:
    """`reduced`: per axis, the values of it a reduced run keeps (each one of the axis's own)."""
    reduced_raw = t.get("reduced", {})
    reduced = {}
    if not isinstance(reduced_raw, dict):
        where.bad("reduced", "reduced must be a table of axis = [values...]")
        reduced_raw = {}
    axes = dict(swept.axes)
    for axis, vals in reduced_raw.items():
        if axis not in axes:
            where.bad("reduced", f"reduced names {axis!r}, which is no axis of this sweep")
            continue
        if not isinstance(vals, list):
            where.bad("reduced", f"reduced {axis}: a list of the axis's values")
            continue
        mine = {calls.label(e[axis] if isinstance(e, dict) else e) for e in axes[axis]}
        enc = []
        for v in vals:
            val, why = base.check_value(axis, swept.kinds[axis], v)
            if why or calls.label(calls.encode(val)) not in mine:
                where.bad("reduced", f"reduced {axis}: {v!r} is not one of the axis's values")
                continue
            enc.append(calls.encode(val))
        reduced[axis] = enc
    return reduced


def _hypotheses(where: _Where, t: dict, vary, swept: _Swept) -> list:
    """`hypotheses` ([] when malformed): a product's only, each rule naming axes of this sweep."""
    hyps = t.get("hypotheses", [])
    if not (isinstance(hyps, list) and all(isinstance(h, dict) and isinstance(h.get("name"), str)
                                           and isinstance(h.get("rule"), dict) for h in hyps)):
        where.bad("hypotheses", "hypotheses are [{ name = \"...\", rule = { axis = threshold, ... } }]")
        hyps = []
    elif hyps and vary != "product":
        where.bad("hypotheses", "hypotheses are checked against a product's points: vary = \"product\"")
    axes = dict(swept.axes)
    for h in hyps:
        for axis in h["rule"]:
            if axis not in axes:
                where.bad("hypotheses", f"hypothesis {h['name']!r} names {axis!r}, which is no axis of this sweep")
    return hyps


def _spec(project: Project, rep: Findings, where: _Where, t: dict, head: _Header, gpus: list, stacks: list,
          base: _Base, swept: _Swept, point: dict, reduced: dict, hyps: list) -> SweepSpec:
    """The SweepSpec of a table without problems: one group over the base case's call, its sha256
    over the table, the base case as planned and every kernel file's bytes."""
    case = base.case
    name = str(head.name)
    timeout_s = float(head.timeout or case["timeout_s"] or (project.raw.get("project") or {}).get("timeout_s")
                      or DEFAULT_TIMEOUT_S)
    pc = plan_case(case, timeout_s)
    info = {"case": pc, "source": case["source"], "kinds": swept.kinds, "values": swept.values,
            "config": base.config, "count": base.count}
    group = Group(name=name, family=pc["family"], vary=head.vary, file=case["file"], function=case["function"],
                  requires=(), signature={}, divisible_by_16={}, constexprs=(), base=point, axes=tuple(swept.axes),
                  reduced=reduced, expect=case["expect"], named=(), description=str(t.get("description", "")),
                  call=info)
    doc = {"sweep": t, "case": pc, "kernels": {n: hashlib.sha256(p.read_bytes()).hexdigest()
                                               for n, p in sorted(rep.sources.items())}}
    return SweepSpec(name=name, description=str(t.get("description", "")),
                     targets=tuple(Target(g, tuple(stacks)) for g in gpus), timeout_s=timeout_s, sass=head.sass,
                     groups=(group,), path=f"{project.shown}:{where.start}",
                     sha256=hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest(),
                     hypotheses=tuple({"name": h["name"], "rule": dict(h["rule"])} for h in hyps))
