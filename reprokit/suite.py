"""The control suite definition (kernels/suite.toml) and the plan built from it for one run."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from reprokit.config import GpuProfile, defaults_root, load_toml
from reprokit.errors import ConfigError, UsageError
from reprokit.options import GpuOptions
from reprokit.plan import FORMAT as PLAN_FORMAT  # noqa: F401  (re-exported: older callers import it here)
from reprokit.plan import Plan

CASE_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]*$")
EXPECT = ("tma", "no-tma")
CONTROLS = ("P0", "P1", "P2", "gemm")
_CASE_KEYS = ("signature", "divisible_by_16", "requires", "file", "language")


def kernels_dir() -> Path:
    return defaults_root() / "kernels"


def load_suite(path: Path | None = None) -> dict:
    path = path or kernels_dir() / "suite.toml"
    raw = load_toml(path)
    raw["_path"] = str(path)
    return raw


def expand_cases(suite: dict) -> list[dict]:
    """Every case of the suite, with family defaults merged in and GEMM configs expanded."""
    where = suite.get("_path", "suite.toml")
    families = suite.get("families", {})
    cases = []
    for c in suite.get("cases", []):
        fam = families.get(c.get("family"))
        if fam is None:
            raise ConfigError(f"{where}: case {c.get('id')!r} names unknown family {c.get('family')!r}")
        merged = {k: fam[k] for k in _CASE_KEYS if k in fam}
        merged.update(c)
        cases.append(merged)
    gemm = suite.get("gemm")
    if gemm:
        for api, spec in gemm.get("apis", {}).items():
            for cfg in gemm.get("configs", []):
                shape = f"{cfg['BM']}x{cfg['BN']}x{cfg['BK']}"
                cases.append({
                    "id": f"{api}.gemm-{shape}-w{cfg['num_warps']}-s{cfg['num_stages']}",
                    "family": api, "control": "gemm", "file": spec["file"], "function": spec["function"],
                    "signature": spec["signature"], "divisible_by_16": spec.get("divisible_by_16", []),
                    "requires": spec.get("requires", []),
                    "constexprs": {"BM": cfg["BM"], "BN": cfg["BN"], "BK": cfg["BK"]},
                    "num_warps": cfg["num_warps"], "num_stages": cfg["num_stages"],
                    "expect": gemm.get("expect", "tma"),
                    "description": f"TMA GEMM {shape}, {cfg['num_warps']} warps, {cfg['num_stages']} stages "
                                   f"({cfg.get('name', shape)}) via {api}",
                })
    _validate(cases, where)
    return cases


def _validate(cases: list[dict], where: str) -> None:
    seen = set()
    for c in cases:
        cid = c.get("id", "")
        if not CASE_ID.match(cid):
            raise ConfigError(f"{where}: case id {cid!r} must match {CASE_ID.pattern}")
        if cid in seen:
            raise ConfigError(f"{where}: duplicate case id {cid!r}")
        seen.add(cid)
        for key in ("family", "control", "function", "file", "signature", "num_warps", "num_stages"):
            if key not in c:
                raise ConfigError(f"{where}: case {cid!r} lacks {key!r}")
        if c["control"] not in CONTROLS:
            raise ConfigError(f"{where}: case {cid!r} control {c['control']!r} is not one of {', '.join(CONTROLS)}")
        if c.get("expect", "tma") not in EXPECT:
            raise ConfigError(f"{where}: case {cid!r} expect {c.get('expect')!r} is not one of {', '.join(EXPECT)}")
        _validate_reject(c, f"{where}: case {cid!r}")
    for c in cases:
        gate = c.get("gated_by")
        if gate and gate not in seen:
            raise ConfigError(f"{where}: case {c['id']!r} is gated by unknown case {gate!r}")


def _validate_reject(case: dict, where: str) -> None:
    """`reject`: the compile errors a negative control may end in, each {triton, pass, message}."""
    rules = case.get("reject", [])
    if rules and case.get("expect", "tma") != "no-tma":
        raise ConfigError(f"{where}: only a case that expects no-tma names rejections")
    if not isinstance(rules, list):
        raise ConfigError(f"{where}: reject must be a list of tables")
    for r in rules:
        if not isinstance(r, dict) or not isinstance(r.get("message"), str) or set(r) - {"triton", "pass", "message"}:
            raise ConfigError(f"{where}: each reject entry is {{triton, pass, message}} with a message, not {r!r}")
        try:
            re.compile(r["message"])
        except re.error as e:
            raise ConfigError(f"{where}: reject message /{r['message']}/ is not a regular expression: {e}") from None
        spec = r.get("triton", "")
        if spec and not all(_VERSION_CLAUSE.match(part) for part in spec.split(",")):
            raise ConfigError(f"{where}: reject triton {spec!r} is not a version spec such as '>=3.4,<3.7'")


_VERSION_CLAUSE = re.compile(r"^\s*(>=|<=|==|>|<)?\s*\d+(\.\d+)*\s*$")


def select(cases: list[dict], only: str | None) -> list[dict]:
    """Keep cases whose id matches any comma-separated glob in `only` (all when empty).

    A gated case pulls in its gate, so its verdict can still be judged.
    """
    if not only:
        return cases
    pats = [p.strip() for p in only.split(",") if p.strip()]
    keep = {c["id"] for c in cases if any(fnmatch.fnmatchcase(c["id"], p) for p in pats)}
    if not keep:
        raise UsageError(f"--cases {only!r} matches no case")
    keep |= {c["gated_by"] for c in cases if c["id"] in keep and c.get("gated_by")}
    return [c for c in cases if c["id"] in keep]


def build_plan(profile: GpuProfile | GpuOptions, stack: dict | None = None, *, mode: str = "compile-only",
               only: str | None = None, timeout_s: float | None = None, suite: dict | None = None,
               sass: bool = True) -> Plan:
    """The control suite's plan for a GPU profile (or the GpuOptions of a checked GPU), the
    cases matching `only`'s globs, on `stack` (or on the stack Plan.for_stack names later)."""
    gpu = profile if isinstance(profile, GpuOptions) else GpuOptions(profile, mode)
    suite = suite or load_suite()
    meta = suite.get("suite", {})
    default_timeout = timeout_s or meta.get("timeout_s", 300)
    cases = []
    for c in select(expand_cases(suite), only):
        cases.append({
            "id": c["id"], "family": c["family"], "control": c["control"],
            "description": c.get("description", ""),
            "kernel": {"file": c["file"], "function": c["function"]},
            "signature": dict(c["signature"]), "constexprs": dict(c.get("constexprs", {})),
            "divisible_by_16": list(c.get("divisible_by_16", [])),
            "num_warps": int(c["num_warps"]), "num_stages": int(c["num_stages"]),
            "requires": list(c.get("requires", [])), "expect": c.get("expect", "tma"),
            "reject": [dict(r) for r in c.get("reject", [])],
            "gated_by": c.get("gated_by"), "timeout_s": float(timeout_s or c.get("timeout_s", default_timeout)),
            # Triton unless it says otherwise ("cuda": kernels/cuda/, built with nvcc).
            **({"language": c["language"]} if c.get("language", "triton") != "triton" else {}),
            **({"options": dict(c["options"])} if c.get("options") else {}),  # torch.compile's, by name
        })
    return Plan.build("suite", meta.get("name", "tma-controls"), gpu, cases, stack=stack,
                      problem=dict(meta.get("problem", {})), sass=sass, timeout_s=float(default_timeout),
                      kernels=kernels_dir())
