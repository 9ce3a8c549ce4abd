"""Sweep specs (kernels/sweeps/*.toml) and their expansion into plan cases.

A spec names groups: each a parametrised kernel (file, function, signature with `{param}`
templates, constexprs) with a base point (a family's P0, or a config) and axes. A group varies
its axes one at a time from the base (`vary = "one-at-a-time"`: the base, then every value of
every axis with the others at base) or over their cross product (`vary = "product"`). An axis
value is a scalar (sets the param of the axis's name) or a table that sets several params at
once and may swap `function` or entries of `signature`; its label is the table's value under
the axis's name. The points become cases like the suite's, in one deterministic order, so the
runner, oracle, bundle and replay treat a sweep as any other plan.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprokit.config import GpuProfile, load_toml
from reprokit.errors import ConfigError, UsageError
from reprokit.options import GpuOptions
from reprokit.plan import Plan
from reprokit.suite import CASE_ID, kernels_dir, load_suite
from reprokit.sweep import calls

VARY = ("one-at-a-time", "product")
SASS_POLICIES = ("all", "base", "none")
_GROUP_KEYS = {"name", "family", "vary", "file", "function", "requires", "signature", "divisible_by_16",
               "constexprs", "base", "axes", "reduced", "expect", "named_from_suite", "description"}
_SLUG = re.compile(r"[^a-z0-9_.]+")


@dataclass(frozen=True)
class Group:
    name: str
    family: str
    vary: str
    file: str
    function: str
    requires: tuple
    signature: dict
    divisible_by_16: dict  # argument -> param whose value 16 hints it (None: always hinted)
    constexprs: tuple
    base: dict
    axes: tuple  # ((axis, (value, ...)), ...) in spec order; a value is a scalar or a dict
    reduced: dict
    expect: str
    named: tuple  # ((name, params), ...): configs people argue about, kept in the grid
    description: str
    call: dict | None = None  # a project's declared case as the base (reprokit.sweep.calls): points are calls


@dataclass(frozen=True)
class Target:
    gpu: str
    stacks: tuple


@dataclass(frozen=True)
class SweepSpec:
    name: str
    description: str
    targets: tuple
    timeout_s: float
    sass: str
    groups: tuple
    path: str
    sha256: str
    hypotheses: tuple = ()  # ({"name": ..., "rule": {axis: threshold}}, ...) checked against product groups
    kernels: str | None = None  # the folder the points' kernel files come from (default: the shipped kernels/)


@dataclass(frozen=True)
class Point:
    group: str
    id: str
    axis: str | None  # the axis this point moves off the base (one-at-a-time); None for the base
    label: str | None
    params: dict
    function: str
    signature: dict
    name: str | None = None
    constexprs: tuple = ()


def sweeps_dir() -> Path:
    return kernels_dir() / "sweeps"


def shipped() -> list[str]:
    return sorted(p.stem for p in sweeps_dir().glob("*.toml"))


def resolve(spec: str) -> Path:
    """A spec file's path, or the shipped spec of that name."""
    p = Path(spec)
    if p.suffix == ".toml" or p.exists():
        if not p.is_file():
            raise UsageError(f"{spec}: no such sweep spec")
        return p
    q = sweeps_dir() / f"{spec}.toml"
    if not q.is_file():
        raise UsageError(f"no sweep {spec!r}: give a TOML file or one of {', '.join(shipped()) or 'none'}")
    return q


def load_spec(spec: str | Path) -> SweepSpec:
    path = resolve(str(spec))
    raw = load_toml(path)
    where = str(path)
    head = raw.get("sweep")
    if not isinstance(head, dict) or not head.get("name"):
        raise ConfigError(f"{where}: needs a [sweep] table with a name")
    sass = head.get("sass", "base")
    if sass not in SASS_POLICIES:
        raise ConfigError(f"{where}: sass {sass!r} is not one of {', '.join(SASS_POLICIES)}")
    targets = tuple(Target(str(t["gpu"]), tuple(t.get("stacks", []))) for t in head.get("targets", []))
    if not targets:
        raise ConfigError(f"{where}: [[sweep.targets]] names no GPU profile")
    groups = tuple(_group(g, where) for g in raw.get("groups", []))
    if not groups:
        raise ConfigError(f"{where}: no [[groups]]")
    if len({g.name for g in groups}) != len(groups):
        raise ConfigError(f"{where}: group names repeat")
    return SweepSpec(name=str(head["name"]), description=str(head.get("description", "")), targets=targets,
                     timeout_s=float(head.get("timeout_s", 300)), sass=sass, groups=groups, path=where,
                     sha256=hashlib.sha256(path.read_bytes()).hexdigest(),
                     hypotheses=tuple({"name": str(h["name"]), "rule": dict(h["rule"])}
                                      for h in head.get("hypotheses", [])))


def _group(g: dict, where: str) -> Group:
    unknown = set(g) - _GROUP_KEYS
    if unknown:
        raise ConfigError(f"{where}: group {g.get('name')!r} has unknown keys {', '.join(sorted(unknown))}")
    for key in ("name", "file", "function", "signature", "base"):
        if key not in g:
            raise ConfigError(f"{where}: group {g.get('name')!r} lacks {key!r}")
    name = g["name"]
    if not CASE_ID.match(name) or "." in name:
        raise ConfigError(f"{where}: group name {name!r} must be lowercase letters, digits, _ and -")
    vary = g.get("vary", "one-at-a-time")
    if vary not in VARY:
        raise ConfigError(f"{where}: group {name!r} vary {vary!r} is not one of {', '.join(VARY)}")
    base = dict(g["base"])
    for k in ("num_warps", "num_stages"):
        if not isinstance(base.get(k), int):
            raise ConfigError(f"{where}: group {name!r} base needs an integer {k}")
    axes = []
    for axis, values in g.get("axes", {}).items():
        if not isinstance(values, list) or not values:
            raise ConfigError(f"{where}: group {name!r} axis {axis!r} needs a list of values")
        for v in values:
            if isinstance(v, dict) and axis not in v:
                raise ConfigError(f"{where}: group {name!r} axis {axis!r}: a table value must set {axis!r}")
        if axis not in base:
            raise ConfigError(f"{where}: group {name!r} axis {axis!r} has no base value")
        axes.append((axis, tuple(values)))
    div = g.get("divisible_by_16", [])
    div = dict.fromkeys(div) if isinstance(div, list) else dict(div)
    reduced = dict(g.get("reduced", {}))
    for axis in reduced:
        if axis not in dict(axes):
            raise ConfigError(f"{where}: group {name!r} reduces unknown axis {axis!r}")
    named: tuple[tuple[str, dict[str, Any]], ...] = ()
    if g.get("named_from_suite"):
        named = tuple((c["name"], {"BM": c["BM"], "BN": c["BN"], "BK": c["BK"], "num_warps": c["num_warps"],
                                   "num_stages": c["num_stages"]}) for c in load_suite().get("gemm", {}).get("configs", []))
    return Group(name=name, family=str(g.get("family", name)), vary=vary, file=g["file"], function=g["function"],
                 requires=tuple(g.get("requires", [])), signature=dict(g["signature"]), divisible_by_16=div,
                 constexprs=tuple(g.get("constexprs", [])), base=base, axes=tuple(axes), reduced=reduced,
                 expect=g.get("expect", "tma"), named=named, description=str(g.get("description", "")))


def _label(v) -> str:
    return _SLUG.sub("_", str(v).lower()).strip("_") or "x"


def _apply(group: Group, value, axis: str) -> tuple[dict, str, dict, tuple]:
    """(params, function, signature, constexpr names) with one axis value applied to the base."""
    params, function, signature = dict(group.base), group.function, dict(group.signature)
    constexprs = group.constexprs
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "function":
                function = v
            elif k == "signature":
                signature.update(v)
            elif k == "constexprs":
                constexprs = tuple(v)
            else:
                params[k] = v
    else:
        params[axis] = value
    return params, function, signature, constexprs


def _axis_values(group: Group, reduced: bool) -> list:
    if not reduced:
        return list(group.axes)
    return [(a, tuple(v for v in vals if _value_label(v, a) in {_label(x) for x in group.reduced[a]}))
            for a, vals in group.axes if a in group.reduced]


def _value_label(v, axis: str) -> str:
    return _label(v[axis] if isinstance(v, dict) else v)


def expand(spec: SweepSpec, reduced: bool = False) -> list[Point]:
    """Every point of every group, in the sweep's one order (the order of plan.json's cases)."""
    points = []
    for g in spec.groups:
        axes = _axis_values(g, reduced)
        if g.vary == "one-at-a-time":
            points.append(Point(g.name, f"{g.name}.base", None, None, dict(g.base), g.function, dict(g.signature),
                                constexprs=g.constexprs))
            for axis, values in axes:
                base_label = _label(g.base[axis])
                for v in values:
                    label = _value_label(v, axis)
                    if label == base_label:
                        continue
                    params, fn, sig, cx = _apply(g, v, axis)
                    points.append(Point(g.name, f"{g.name}.{_label(axis)}-{label}", axis, label, params, fn, sig,
                                        constexprs=cx))
        else:
            seen = set()
            combos = [dict(zip([a for a, _ in axes], vals)) for vals in itertools.product(*[v for _, v in axes])]
            extra = [p for _, p in g.named]
            for combo in combos + extra:
                params = {**g.base, **combo}
                key = tuple(sorted((k, params[k]) for k in params))
                if key in seen:
                    continue
                seen.add(key)
                pid = f"{g.name}." + "-".join(f"{_label(a)}{_label(params[a])}" for a, _ in g.axes)
                named = next((n for n, np in g.named if all(params.get(k) == v for k, v in np.items())),
                             "base" if params == g.base else None)
                points.append(Point(g.name, pid, None, None, params, g.function, dict(g.signature), named,
                                    g.constexprs))
    ids = [p.id for p in points]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise ConfigError(f"{spec.path}: two points share the id {dup!r} (labels must differ per axis)")
    for p in points:
        if not CASE_ID.match(p.id):
            raise ConfigError(f"{spec.path}: point id {p.id!r} must match {CASE_ID.pattern}")
    return points


def wants_sass(policy: str, point: Point) -> bool:
    """SASS per point: `all`, `none`, or `base` (the base point and named configs only; every
    other point is judged at PTX, whose TMA instructions ptxas turns one for one into SASS's)."""
    if policy == "all":
        return True
    if policy == "none":
        return False
    return point.axis is None and (point.name is not None or point.id.endswith(".base"))


def to_case(point: Point, group: Group, spec: SweepSpec, sass: str) -> dict:
    if group.call is not None:
        return calls.point_case(point, group, spec.name, spec.timeout_s, wants_sass(sass, point))
    p = point.params
    try:
        signature = {k: v.format_map(p) for k, v in point.signature.items()}
        constexprs = {k: p[k] for k in point.constexprs}
    except KeyError as e:
        raise ConfigError(f"{spec.path}: group {group.name!r} uses param {e.args[0]!r}, which has no value") from None
    hinted = [a for a, par in group.divisible_by_16.items() if a in signature and (par is None or p.get(par) == 16)]
    what = (f"moves {point.axis} to {point.label}" if point.axis else
            f"config {point.name}" if point.name else "the base point" if point.id.endswith(".base") else "grid point")
    return {
        "id": point.id, "family": group.family, "control": "gemm" if group.vary == "product" else
        ("P0" if point.id.endswith(".base") else "sweep"),
        "description": f"{spec.name}/{group.name}: {what}",
        "kernel": {"file": group.file, "function": point.function},
        "signature": signature, "constexprs": constexprs, "divisible_by_16": hinted,
        "num_warps": int(p["num_warps"]), "num_stages": int(p["num_stages"]),
        "requires": list(group.requires), "expect": group.expect, "gated_by": None,
        "timeout_s": spec.timeout_s, "sass": wants_sass(sass, point),
        "sweep": {"group": group.name, "axis": point.axis, "label": point.label, "name": point.name,
                  "params": dict(p)},
    }


def parse_shard(text: str | None) -> tuple[int, int] | None:
    if not text:
        return None
    m = re.fullmatch(r"(\d+)/(\d+)", text.strip())
    if not m or not 1 <= int(m.group(1)) <= int(m.group(2)):
        raise UsageError(f"--shard {text!r}: give i/n with 1 <= i <= n, e.g. 1/4")
    return int(m.group(1)), int(m.group(2))


def in_shard(index: int, shard: tuple[int, int] | None) -> bool:
    """Points are dealt round-robin in grid order, so every shard gets a mix of cheap and costly ones."""
    return shard is None or index % shard[1] == shard[0] - 1


def build_sweep_plan(spec: SweepSpec, profile: GpuProfile | GpuOptions, stack: dict | None = None, *,
                     reduced: bool = False, shard: tuple[int, int] | None = None, sass: str | None = None,
                     mode: str = "compile-only") -> Plan:
    """The sweep's plan (its shard's points) for a GPU profile or the GpuOptions of a checked GPU."""
    gpu = profile if isinstance(profile, GpuOptions) else GpuOptions(profile, mode)
    sass = sass or spec.sass
    if sass not in SASS_POLICIES:
        raise UsageError(f"--sass {sass!r} is not one of {', '.join(SASS_POLICIES)}")
    groups = {g.name: g for g in spec.groups}
    points = expand(spec, reduced)
    cases = [to_case(p, groups[p.group], spec, sass) for i, p in enumerate(points) if in_shard(i, shard)]
    grid = {
        "name": spec.name, "spec_sha256": spec.sha256, "reduced": reduced, "sass": sass,
        "points": len(points), "hypotheses": [dict(h) for h in spec.hypotheses], "shard": {"index": shard[0], "count": shard[1]} if shard else None,
        "groups": [{"name": g.name, "family": g.family, "vary": g.vary, "base": dict(g.base),
                    "axes": {a: [_value_label(v, a) for v in vals] for a, vals in _axis_values(g, reduced)},
                    "order": {a: [_value_label(v, a) for v in vals] for a, vals in g.axes},
                    "named": {n: dict(p) for n, p in g.named}} for g in spec.groups],
    }
    return Plan.build("sweep", f"sweep:{spec.name}", gpu, cases, stack=stack, sass=sass != "none",
                      timeout_s=spec.timeout_s, sweep=grid, resumable=True, kernels=kernels_dir())
