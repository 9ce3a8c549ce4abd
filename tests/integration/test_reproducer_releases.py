"""The reproducers reprokit writes today, for every case of the example bundles, run on every
release 3.0-3.9 in a bare pinned venv (no reprokit): each answers with a verdict, never with a
fault of its own; on its own release it reproduces the record; a planted fault of the script is
`script_error` (exit 2), never `reproduced`."""

from __future__ import annotations

import json
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.harness.reproducer import Reproducers

pytestmark = pytest.mark.triton
EXAMPLES = Path(__file__).resolve().parents[2] / "bundles" / "examples"
COMPILE_ONLY = ("triton-3.0-cu129-h100", "triton-3.4-cu129-h100", "triton-3.5-cu130-h100", "triton-3.9-cu132-h100")
RELEASES = ("triton-3.0-cu129", "triton-3.1-cu129", "triton-3.2-cu129", "triton-3.3-cu129", "triton-3.4-cu129",
            "triton-3.5-cu130", "triton-3.6-cu130", "triton-3.7-cu130", "triton-3.8-cu130", "triton-3.9-cu132")
VERDICTS = {"tma", "no-tma", "rejected", "crashed", "error", "unsupported", "inconclusive", "timeout"}


def _scripts(name: str) -> tuple[str, dict[str, str], dict[str, str]]:
    """(the bundle's stack, case id -> reproducer text, case id -> minimal text), made now."""
    b = open_bundle(EXAMPLES / f"{name}.tgz")
    made = Reproducers(b.plan, lambda n: b.read_text(f"kernels/{n}"), triton_version=b.results["triton"])
    full, small = {}, {}
    for rec in b.results["cases"]:
        text = made.text(rec["id"], rec)
        if text is not None:
            full[rec["id"]], small[rec["id"]] = text, made.minimal(rec["id"])
    return b.plan["stack"]["name"], full, small


def _run(python: str, script: Path, *args: str) -> tuple[int, dict | None, str]:
    env = {"PATH": "/usr/bin:/bin", "HOME": str(script.parent)}
    p = subprocess.run([python, str(script), *args], cwd=script.parent, env=env, capture_output=True, text=True,
                       timeout=600)
    doc = json.loads(p.stdout) if "--json" in args and p.stdout.strip().startswith("{") else None
    return p.returncode, doc, p.stdout + p.stderr


@pytest.fixture(scope="module")
def pythons(stack_ready, venv_executor):
    return {name: str(venv_executor.venv_dir(stack_ready(name)) / "bin" / "python") for name in RELEASES}


def test_every_example_reproducer_answers_on_every_release(pythons, tmp_path):
    jobs = []
    seen = set()
    for name in COMPILE_ONLY:
        own, full, _ = _scripts(name)
        for cid, text in sorted(full.items()):
            script = tmp_path / name / f"{cid}.py"
            script.parent.mkdir(exist_ok=True)
            script.write_text(text)
            jobs.append((own, cid, script, "--expect", "recorded"))  # its own release: reproduces
            body = text[text.index("# ---- the compile"):]  # the same case from another bundle: once
            if (cid, body) not in seen:
                seen.add((cid, body))
                jobs += [(r, cid, script, "--expect", "none") for r in RELEASES if r != own]
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda j: (j, _run(pythons[j[0]], j[2], "--json", *j[3:])), jobs))
    answers = {}
    for (release, cid, script, _, expect), (rc, doc, out) in results:
        assert doc is not None and doc["verdict"] in VERDICTS, f"{script} on {release}: rc {rc}\n{out[-2000:]}"
        if expect == "recorded":
            assert rc == 0 and doc["reproduced"] is True, f"{script} on its own {release}:\n{out[-2000:]}"
        else:
            assert rc == 0 and doc["reproduced"] is None, f"{script} on {release}:\n{out[-2000:]}"
        answers.setdefault(cid, {})[release] = doc["verdict"]
    # The 3.0 crash case, asked on every release: the crash, then a clean rejection, then no API.
    crash = answers["experimental_descriptor.p1"]
    assert [crash[r] for r in RELEASES] == ["crashed"] * 3 + ["rejected"] + ["unsupported"] * 6, crash
    assert len(results) >= 10 * len({j[1] for j in jobs})


def test_the_crash_case_compared_with_its_record_differs_where_it_no_longer_crashes(pythons, tmp_path):
    _, full, _ = _scripts("triton-3.0-cu129-h100")
    script = tmp_path / "p1.py"
    script.write_text(full["experimental_descriptor.p1"])
    rc, doc, _ = _run(pythons["triton-3.3-cu129"], script, "--json")
    assert rc == 1 and doc["verdict"] == "rejected" and doc["reproduced"] is False
    rc, doc, _ = _run(pythons["triton-3.1-cu129"], script, "--json")
    assert rc == 0 and doc["verdict"] == "crashed" and doc["reproduced"] is True


@pytest.mark.parametrize("plant,where", [
    # an exception building the compile's input: the script's own, before the compiler ran
    ("_make_source(copy_p1_narrow,", "return _make_source_gone(copy_p1_narrow,"),
    # the compile process dies before the compiler is called
    ("_make_source(copy_p1_narrow,", "__import__('os')._exit(3) or _make_source(copy_p1_narrow,"),
    # a fault at module level, in the parent
    ("_LEVELS = (", "_LEVELS = undefined_name + ("),
])
def test_a_fault_of_the_script_is_never_counted_as_the_compiler_crash(pythons, tmp_path, plant, where):
    _, full, _ = _scripts("triton-3.0-cu129-h100")
    text = full["experimental_descriptor.p1"]
    assert plant in text
    old = plant if plant != "_make_source(copy_p1_narrow," else "return " + plant
    script = tmp_path / "planted.py"
    script.write_text(text.replace(old, where, 1))
    for release in ("triton-3.0-cu129", "triton-3.3-cu129"):  # recorded: crashed; 3.0 would reproduce it
        rc, _, out = _run(pythons[release], script)
        assert rc == 2, out[-2000:]
        assert "script_error" in out and "reproduced" not in out and "crashed" not in out.split("recorded")[0]


def test_minimal_scripts_compile_on_their_own_release(pythons, tmp_path):
    for name in COMPILE_ONLY:
        own, full, small = _scripts(name)
        b = open_bundle(EXAMPLES / f"{name}.tgz")
        ok = {c["id"] for c in b.results["cases"] if c["status"] == "ok"}
        for cid in sorted(ok & set(small)):
            script = tmp_path / f"{name}-{cid}.py"
            script.write_text(small[cid])
            assert len(small[cid].splitlines()) <= 80
            rc, _, out = _run(pythons[own], script)
            assert rc == 0 and "ptx: cp.async.bulk.tensor x" in out, f"{script} on {own}:\n{out[-2000:]}"


@pytest.mark.parametrize("name,release", [("h100-gpu-triton-3.0.0", "triton-3.0-cu129"),
                                          ("h100-gpu-triton-3.6.0", "triton-3.6-cu130")])
def test_the_gpu_bundles_reproducers_reproduce_on_their_release(pythons, tmp_path, name, release):
    """The H100 bundles (JIT on the GPU): their compile-only reproducers give the recorded verdict."""
    _, full, _ = _scripts(name)
    scripts = []
    for cid, text in sorted(full.items()):
        script = tmp_path / f"{cid}.py"
        script.write_text(text)
        scripts.append(script)
    with ThreadPoolExecutor(2) as pool:
        results = list(pool.map(lambda s: (s, _run(pythons[release], s, "--json")), scripts))
    assert len(results) >= 20
    for script, (rc, doc, out) in results:
        assert rc == 0 and doc["reproduced"] is True, f"{script.name} on {release}: rc {rc}\n{out[-2000:]}"
