"""The user-data suite: every verb that writes runs against a tree seeded with a user's files at and
around each of its output paths, and each of those files is byte-identical afterwards; the same
invocation in an unseeded tree exits 0 and writes its output, so a verb that merely refuses at the
door does not pass.

Generated from the argparse tree (reprokit.clitree, the walker the CLI reference and the
bad-argument suite use): every verb is either in READ_ONLY or has a recipe in RECIPES, and a verb
with an output option (OUTPUT_FLAGS) may not be called read-only, so a new verb fails
test_every_verb_is_classified until it has a recipe.

Seeded, per output path X in folder F (see `seed`):
  at      X itself (a folder of the user's files, or a file), and for a folder that a verb writes
          into, `X/<stack>-<gpu>/` and its `.lock`, `.partial` and `.failed` neighbours;
  around  `F/.X.lock`, `F/X.partial/`, `F/X.failed/`, names with reprokit- tokens in F (one of them
          the exact shape of a reprokit temp name, with no lock of reprokit's), and $TMPDIR
          neighbours (reprokit-cases-*, a scratch-shaped folder, tmp* files).
A verb whose output is the seeded path itself (capture --force, report --out, sign, a venv, a
fleet folder) must refuse in one line; every other verb must succeed beside the user's files. Those
that refuse are run once more with only the neighbours seeded, where they must succeed.
Every run (seeded or not) must leave no temp name, *.partial or stale lock of reprokit's behind
and nothing of its own in $TMPDIR.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from reprokit.clitree import verbs
from tests.helpers.faults import half_done

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
STACK, GPU, CASE = "triton-3.6-cu130", "h100", "block_ptr.p0"
CELL = f"{STACK}-{GPU}"   # the name `run` and `replay` once captured into, inside --out
OUTPUT_FLAGS = ("--out", "--dir", "--work")
# Verbs that write nothing: they print, verify, or ask Slurm. Each says why.
READ_ONLY = {
    "diff": "prints a comparison",
    "verify": "prints a verdict",
    "show": "prints a bundle's summary",
    "stacks": "prints stacks.toml",
    "check": "reads reprokit.toml and its kernel files, prints their problems",
    "fleet status": "reads a fleet folder and asks Slurm",
    "fleet cancel": "asks Slurm to cancel jobs",
}

SPEC = """
[sweep]
name = "user-data"
timeout_s = 120
[[sweep.targets]]
gpu = "h100"
stacks = ["triton-3.6-cu130"]

[[groups]]
name = "copy"
family = "tensor_descriptor"
file = "sweep_tma.py"
function = "tensor_desc_copy"
requires = ["tl.make_tensor_descriptor|tl._experimental_make_tensor_descriptor"]
signature = { src = "*{dtype}", dst = "*{dtype}", M = "i32", N = "i32" }
divisible_by_16 = ["src", "dst", "M", "N"]
constexprs = ["BM", "BN", "INNER", "BOUNDARY"]
base = { dtype = "fp16", BM = 64, BN = 64, INNER = 1, BOUNDARY = 0, num_warps = 4, num_stages = 2 }
[groups.axes]
num_warps = [4, 8]
"""


@dataclass
class Inv:
    """One invocation of a verb in a tree: its arguments, its output paths, and what it made.

    outputs: (path, kind): "into" a folder the verb writes files into (user files inside are
    normal), "whole" a folder the verb makes or replaces as a whole, "file" a file it writes.
    refuses: True when the seeded output itself must be refused (a "whole" folder or a file of the
    user's there); refuse_rc: that refusal's exit code; locks: whether the verb takes a lock named
    `.X.lock` beside its output (a user's file of that name is then refused too, so the
    neighbours are also tried without it).
    """

    argv: list
    outputs: list
    made: Callable[[], bool]
    env: dict = field(default_factory=dict)
    refuses: bool = False
    refuse_rc: int = 2
    locks: bool = True


@dataclass
class Ctx:
    """What recipes share, made once: a bundle of the stack, a synthetic capture, an SSH key."""

    bundle: Path
    capture: Path
    key: Path | None
    wheels: Path
    venv_name: str


def _bundles(folder: Path) -> Callable[[], bool]:
    return lambda: any(folder.glob("*.tgz"))


def r_run(ctx: Ctx, t: Path) -> Inv:
    out = t / "out"
    return Inv(["run", "--gpu", GPU, "--executor", "venv", "--stacks", STACK, "--cases", CASE, "--out", out],
               [(out, "into")], _bundles(out))


def r_replay(ctx: Ctx, t: Path) -> Inv:
    out = t / "out"
    return Inv(["replay", ctx.bundle, "--executor", "venv", "--out", out], [(out, "into")], _bundles(out))


def r_capture(ctx: Ctx, t: Path) -> Inv:
    cap = t / "cap"
    return Inv(["capture", "--gpu", GPU, "--executor", "venv", "--stack", STACK, "--cases", CASE, "--out", cap,
                "--force"], [(cap, "whole")], lambda: (cap / "results.json").is_file(), refuses=True)


def r_bundle(ctx: Ctx, t: Path) -> Inv:
    out = t / "bundles"
    return Inv(["bundle", ctx.capture, "--out", out], [(out, "into")], _bundles(out))


def r_sweep(ctx: Ctx, t: Path) -> Inv:
    spec = t.parent / "in" / "user-data.toml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(SPEC)
    work, out = t / "work", t / "out"
    return Inv(["sweep", spec, "--work", work, "--out", out], [(work, "into"), (out, "into")], _bundles(out))


def r_bisect(ctx: Ctx, t: Path) -> Inv:
    out = t / "out"
    # Two releases, both pinned stacks whose venvs the suite's other tiers build anyway.
    return Inv(["bisect", "--case", CASE, "--versions", "3.0.0..3.1.0", "--gpu", GPU, "--out", out],
               [(out, "into")], _bundles(out))


def r_sign(ctx: Ctx, t: Path) -> Inv:
    if ctx.key is None:
        pytest.skip("no ssh-keygen here")
    b = t / ctx.bundle.name
    if not b.exists():
        t.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ctx.bundle, b)
    sig = b.with_name(b.name + ".sig")
    return Inv(["sign", b, "--key", ctx.key], [(sig, "file")],
               lambda: sig.read_bytes().startswith(b"-----BEGIN SSH SIGNATURE-----"), refuses=True)


def r_prepare(ctx: Ctx, t: Path) -> Inv:
    cache = t / "cache"
    venv = cache / "venvs" / ctx.venv_name
    env = {"REPROKIT_CACHE": str(cache), "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(ctx.wheels)}
    # prepare reports a stack it could not prepare as FAILED and exits 3, the user's folder kept.
    return Inv(["prepare", "--stacks", STACK, "--executor", "venv"], [(venv, "whole")],
               lambda: (venv / "reprokit-venv.json").is_file(), env=env, refuses=True, refuse_rc=3, locks=False)


def r_wheelhouse(ctx: Ctx, t: Path) -> Inv:
    out = t / "wheels"
    return Inv(["wheelhouse", "--out", out, "--extras", ""], [(out, "into")],
               lambda: any(out.glob("reprokit*.whl")))


def r_report(ctx: Ctx, t: Path) -> Inv:
    out = t / "report.md"
    t.mkdir(parents=True, exist_ok=True)  # --out names a file in an existing folder
    return Inv(["report", ctx.bundle, "--out", out], [(out, "file")],
               lambda: out.read_text().startswith("<!-- Made by `reprokit report`"), refuses=True, locks=False)


def r_trace(ctx: Ctx, t: Path) -> Inv:
    python = _interp_python()
    out = t / "out"
    return Inv(["trace", "--gpu", GPU, "--out", out, "--", python, ROOT / "tests" / "data" / "trace" / "several.py"],
               [(out, "into")], _bundles(out), env={"TRITON_INTERPRET": ""})


def r_init(ctx: Ctx, t: Path) -> Inv:
    proj = t / "project"
    toml, kernel = proj / "reprokit.toml", proj / "kernels" / "scale_rows.py"
    return Inv(["init", "--example", proj], [(toml, "file"), (kernel, "file")],
               lambda: toml.is_file() and kernel.is_file(), refuses=True, locks=False)


RECIPES: dict[str, Callable[[Ctx, Path], Inv]] = {
    "run": r_run, "replay": r_replay, "capture": r_capture, "bundle": r_bundle, "sweep": r_sweep,
    "bisect": r_bisect, "sign": r_sign, "prepare": r_prepare, "wheelhouse": r_wheelhouse, "report": r_report,
    "trace": r_trace, "init": r_init,
}
# The fleet verbs run against a real one-host Slurm: tests/fleet/test_fleet_user_data.py holds
# their recipes (they need that folder's cluster fixture), named here so the census stays whole.
FLEET_RECIPES = ("fleet submit", "fleet collect", "fleet render", "fleet task")
# Verbs whose user-data checks live beside their own tests, with why.
ELSEWHERE = {
    "reduce": "tests/integration/test_reduce.py: writes one new bundle into --out, nothing when the "
              "predicate does not hold, and resumes from its cache after a kill",
}
# Verbs whose run needs a package index (wheelhouse, bisect list and fetch releases with pip).
NEEDS_INDEX = {"wheelhouse", "bisect"}


def test_every_verb_is_classified():
    """A verb is read-only (and says why), or it has a recipe here; one with an output option
    cannot be read-only. A new verb fails here until it is given a recipe."""
    names = {v.name for v in verbs()}
    for v in verbs():
        flags = {f for o in v.options for f in o.flags}
        if v.name in READ_ONLY:
            assert not flags & set(OUTPUT_FLAGS), f"{v.name} has an output option but is listed as read-only"
            continue
        assert v.name in RECIPES or v.name in FLEET_RECIPES or v.name in ELSEWHERE, \
            f"{v.name}: a verb with no user-data recipe (add one to RECIPES, or to READ_ONLY with why)"
    # No stale entries: every name here is a verb of the command line.
    assert set(RECIPES) | set(FLEET_RECIPES) | set(READ_ONLY) | set(ELSEWHERE) <= names


# -- seeding ------------------------------------------------------------------------------------------

def _put(seeded: dict, path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    seeded[path] = data


def _around(seeded: dict, folder: Path, name: str, *, lock: bool) -> None:
    """A user's files beside `folder/name`, named as reprokit's own things once were."""
    if lock:
        _put(seeded, folder / f".{name}.lock", b"my lock notes\n")
    _put(seeded, folder / f"{name}.partial" / "draft.txt", b"half of my draft\n")
    _put(seeded, folder / f"{name}.failed" / "why.txt", b"my failed attempt\n")
    _put(seeded, folder / "reprokit-2025-0badf00d-notes" / "n.txt", b"notes\n")
    _put(seeded, folder / "paper-reprokit-12-deadbeef.md", b"# my paper\n")
    _put(seeded, folder / f".{name}.reprokit-12-deadbeef.partial" / "mine.txt", b"the shape, not the lock\n")


def _tmp(seeded: dict, tmp: Path) -> None:
    _put(seeded, tmp / "reprokit-cases-mine" / "c.txt", b"mine\n")
    _put(seeded, tmp / "reprokit-run.reprokit-12-deadbeef.tmp" / "x", b"mine too\n")
    _put(seeded, tmp / "paper-reprokit-12-deadbeef.md", b"# my paper\n")
    _put(seeded, tmp / "tmpq1w2e3.ptx", b"// my ptx\n")


def seed(inv: Inv, tmp: Path, *, at: bool, lock: bool) -> dict:
    """The user's files around each output, at it too when `at`, and `.X.lock` beside it when
    `lock`; path -> bytes."""
    seeded: dict = {}
    for out, kind in inv.outputs:
        if at and kind == "file":
            _put(seeded, out, b"my own file, not a report or a signature\n")
        if (at and kind == "whole") or kind == "into":
            _put(seeded, out / "thesis.txt", b"my thesis\n")
            _put(seeded, out / "notes" / "chapter1.md", b"# chapter 1\n")
        if kind == "into":
            _put(seeded, out / CELL / "thesis.txt", b"my thesis, in a folder named like a capture\n")
            _put(seeded, out / CELL / "notes" / "n.md", b"notes\n")
            _around(seeded, out, CELL, lock=True)
        _around(seeded, out.parent, out.name, lock=lock)
    _tmp(seeded, tmp)
    return seeded


def _reprokit(inv: Inv, tmp: Path, cwd: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(tmp), **inv.env}
    env = {k: v for k, v in env.items() if v != ""}
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, inv.argv)], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def _leftovers(inv: Inv, tmp: Path, seeded: dict) -> list[str]:
    """Temp names, *.partial and stale locks of reprokit's near the outputs, and anything in $TMPDIR
    that is not the user's."""
    folders = {o.parent for o, _ in inv.outputs} | {o for o, k in inv.outputs if k != "file" and o.is_dir()}
    mine = {str(p) for p in seeded} | {str(p.parent) for p in seeded}
    left = [p for p in half_done(*folders) if p not in mine]
    left += [str(tmp / n) for n in os.listdir(tmp) if str(tmp / n) not in mine]
    return sorted(left)


def _one_line(p: subprocess.CompletedProcess) -> bool:
    """A refusal: no traceback, and one error line (prepare's per-stack FAILED line, or reprokit:)."""
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("reprokit:") or ": FAILED: " in ln]
    return "Traceback" not in p.stderr and len(lines) == 1


# -- shared inputs --------------------------------------------------------------------------------------

_INTERP: list = []


def _interp_python() -> str:
    if not _INTERP:
        pytest.skip("the trace recipe needs the interpreter venv fixture")
    return _INTERP[0]


@pytest.fixture(scope="module")
def ctx(tmp_path_factory, stack_ready, config) -> Ctx:
    from reprokit.executors.venv import VenvExecutor
    from reprokit.options import HostEnv
    from tests.helpers.fake_capture import make_capture
    from tests.helpers.wheels import stand_in_wheel

    stack_ready(STACK)
    d = tmp_path_factory.mktemp("user-data-inputs")
    p = subprocess.run([sys.executable, "-m", "reprokit", "run", "--gpu", GPU, "--executor", "venv", "--stacks", STACK,
                        "--cases", CASE, "--out", str(d / "bundles")], cwd=ROOT, capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=900, check=False)
    assert p.returncode == 0, p.stderr
    (bundle,) = (d / "bundles").glob("*.tgz")
    key = None
    if shutil.which("ssh-keygen"):
        key = d / "key"
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "user-data", "-f", str(key)], check=True)
    wheels = d / "wheels"
    stand_in_wheel(wheels, config.stack(STACK).triton)
    venv_name = VenvExecutor(host=HostEnv(cache=d / "c")).venv_dir(config.stack(STACK)).name
    return Ctx(bundle, make_capture(d / "capture"), key, wheels, venv_name)


def _prepare_interp() -> None:
    """The trace recipe's interpreter venv (tests/helpers/interp.py builds and caches it)."""
    if _INTERP:
        return
    from reprokit.errors import ExecutorError
    from tests.conftest import skip_or_fail_triton
    from tests.helpers.interp import interpreter_python
    from tests.helpers.runs import host

    try:
        _INTERP.append(str(interpreter_python(host())))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))


def _index_or_skip(verb: str, p: subprocess.CompletedProcess) -> None:
    if verb in NEEDS_INDEX and p.returncode != 0 and "pip" in p.stderr \
            and os.environ.get("REPROKIT_REQUIRE_TRITON") != "1":
        pytest.skip(f"{verb} needs a package index: {p.stderr.strip().splitlines()[-1]}")


@pytest.mark.parametrize("verb", sorted(RECIPES))
def test_a_writing_verb_keeps_every_user_file(verb, ctx, tmp_path):
    recipe = RECIPES[verb]
    if verb == "trace":
        _prepare_interp()
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    # Unseeded: the invocation works and writes its output, and leaves nothing of its own behind.
    clean, tmp = tmp_path / "clean", tmp_path / "clean-tmp"
    tmp.mkdir()
    inv = recipe(ctx, clean)
    p = _reprokit(inv, tmp, cwd)
    _index_or_skip(verb, p)
    assert p.returncode == 0 and inv.made(), f"{verb} in an unseeded tree: exit {p.returncode}: {p.stderr[-2000:]}"
    assert _leftovers(inv, tmp, {}) == []

    # Seeded: each file of the user's stays, byte for byte. A verb that writes into a folder must
    # work beside everything at once; one whose output is the seeded path must refuse it in one
    # line, may refuse a user's .X.lock, and must work beside the rest.
    if not inv.refuses:
        modes = [(True, True)]
    else:
        modes = [(True, False), (False, True)] + ([(False, False)] if inv.locks else [])
    for at, lock in modes:
        tree, tmp = tmp_path / f"seeded-{at}-{lock}", tmp_path / f"seeded-{at}-{lock}-tmp"
        tmp.mkdir()
        inv = recipe(ctx, tree)
        seeded = seed(inv, tmp, at=at, lock=lock)
        p = _reprokit(inv, tmp, cwd)
        changed = [str(f) for f, data in seeded.items() if not f.is_file() or f.read_bytes() != data]
        assert changed == [], f"{verb} changed or removed the user's files: {changed}\n{p.stderr[-2000:]}"
        how = f"{verb} seeded (at {at}, lock {lock})"
        if at and inv.refuses:
            assert p.returncode == inv.refuse_rc and _one_line(p), f"{how}: exit {p.returncode}: {p.stderr[-2000:]}"
        elif lock and inv.locks and p.returncode != 0:
            assert p.returncode == 2 and _one_line(p) and "lock" in p.stderr, f"{how}: {p.stderr[-2000:]}"
        else:
            assert p.returncode == 0 and inv.made(), f"{how}: exit {p.returncode}: {p.stderr[-2000:]}"
        assert _leftovers(inv, tmp, seeded) == []
    assert sorted(os.listdir(cwd)) == []  # nothing written where the verb was started
