"""The committed example bundles were written by today's templates (manifest.json's
templates_sha256, reprokit.bundle.templates): a CPU-made example that was not fails ("run make
examples"); a stale GPU example is listed at the end of the session, not failed (it is remade on
the device, with the command scripts/examples.py names), and so is a stale slow CPU one (the
810-point sweeps: `make examples SLOW=1`). Also: the digest does not depend on
the hash seed, cwd or HOME, and every committed example is in the table."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from reprokit.bundle.templates import templates_sha256
from tests.helpers import counts

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("reprokit_examples", ROOT / "scripts" / "examples.py")
assert _spec is not None and _spec.loader is not None
examples = importlib.util.module_from_spec(_spec)
sys.modules["reprokit_examples"] = examples  # dataclasses look their module up there
_spec.loader.exec_module(examples)


def test_every_committed_example_is_in_the_table():
    committed = {str(p.relative_to(examples.EXAMPLES)) for p in examples.EXAMPLES.rglob("*.tgz")}
    assert committed == {ex.name for ex in examples.EXAMPLES_TABLE}


def test_cpu_examples_were_written_by_todays_templates_and_gpu_ones_are_listed():
    current = templates_sha256()
    stale = [ex for ex in examples.EXAMPLES_TABLE if examples.status(ex, current) != "current"]
    stale_cpu = [ex.name for ex in stale if ex.where == "cpu" and not ex.slow]
    stale_gpu = [ex for ex in stale if ex.where == "gpu"]
    stale_slow = [ex for ex in stale if ex.where == "cpu" and ex.slow]
    counts.record("stale GPU examples (remade on the device; scripts/examples.py --list)",
                  f"{len(stale_gpu)}" + "".join(f"\n  {ex.name}: {ex.device}" for ex in stale_gpu))
    counts.record("stale slow CPU examples (make examples SLOW=1)",
                  f"{len(stale_slow)}" + "".join(f"\n  {ex.name}" for ex in stale_slow))
    assert not stale_cpu, f"{len(stale_cpu)} example bundles were written by other templates: {stale_cpu}; run make examples"


def test_the_digest_is_the_same_whatever_the_seed_cwd_or_home(tmp_path):
    code = "from reprokit.bundle.templates import templates_sha256; print(templates_sha256())"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "HOME": str(tmp_path), "TMPDIR": str(tmp_path)}
    out = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == templates_sha256()


def test_a_bundle_names_the_templates_that_wrote_it(tmp_path):
    from tests.helpers.bundle_tools import make_bundle

    path = make_bundle(tmp_path)
    assert examples.manifest(path)["templates_sha256"] == templates_sha256()


def test_a_current_example_holds_the_reproducers_todays_code_writes():
    """The digest's promise, checked on the contents: every reproducer in a CPU example that
    reads current is, byte for byte, what today's templates write from its plan and records."""
    import json

    from reprokit.bundle.reader import open_bundle
    from reprokit.harness.reproducer import ARTIFACT, Reproducers

    current = templates_sha256()
    checked = 0
    for ex in examples.EXAMPLES_TABLE:
        if ex.where != "cpu" or examples.status(ex, current) != "current":
            continue
        b = open_bundle(ex.path)
        res = json.loads(b.read("results.json"))
        scripts = Reproducers(b.plan, lambda name, b=b: b.read(f"kernels/{name}").decode(), triton_version=res.get("triton"))
        for rec in res["cases"]:
            rel = (rec.get("artifacts") or {}).get(ARTIFACT)
            if rel:
                assert scripts.text(rec["id"], rec) == b.read(rel).decode(), f"{ex.name}: {rel}"
                checked += 1
    assert checked >= 20
