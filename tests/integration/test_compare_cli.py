"""replay, diff and bisect end to end: the example bundles (bundles/examples/) replayed in real venv
stacks, real IR diffs between releases, and bisects over releases taken from the package index."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "bundles" / "examples"
B30 = EXAMPLES / "triton-3.0-cu129-h100.tgz"
B34 = EXAMPLES / "triton-3.4-cu129-h100.tgz"
B35 = EXAMPLES / "triton-3.5-cu130-h100.tgz"


def reprokit(*args, cwd=ROOT, env=None, timeout=1200):
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env=env, timeout=timeout)


def test_the_30_example_replayed_on_its_own_stack_reproduces(stack_ready, tmp_path):
    stack_ready("triton-3.0-cu129")
    p = reprokit("replay", B30, "--executor", "venv", "--workers", "2", "--out", tmp_path, "--json")
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr
    data = json.loads(p.stdout)
    assert data["reproduced"] is True and data["own_stack"] is True and data["grid"]["moved"] is False
    assert data["parent"] == hashlib.sha256(B30.read_bytes()).hexdigest()
    cols = data["grid"]["columns"]
    assert [c["role"] for c in cols] == ["recorded", "replay"] and cols[1]["parent"] == data["parent"]
    (new,) = tmp_path.glob("*.tgz")
    assert reprokit("verify", new).returncode == 0
    crash = next(r for r in data["grid"]["cases"] if r["id"] == "experimental_descriptor.p1")
    assert [c["verdict"] for c in crash["cells"]] == ["crashed", "crashed"]   # a compiler abort reproduces too
    assert all(c["ir"]["ttgir"] for r in data["grid"]["cases"] for c in r["cells"] if c["status"] == "ok")


def test_replayed_on_36_and_39_it_exits_1_and_the_grid_says_what_moved(stack_ready, tmp_path):
    for s in ("triton-3.6-cu130", "triton-3.9-cu132"):
        stack_ready(s)
    p = reprokit("replay", B30, "--stacks", "triton-3.6-cu130,triton-3.9-cu132", "--executor", "venv",
                 "--workers", "2", "--out", tmp_path, "--json")
    assert p.returncode == 1, p.stderr
    grid = json.loads(p.stdout)["grid"]
    ch = {c["column"]: c for c in grid["changes"]}
    for stack in ("triton-3.6-cu130", "triton-3.9-cu132"):
        moved = {v["case"]: (v["from"], v["to"]) for v in ch[stack]["verdicts"]}
        assert moved["experimental_descriptor.p0"] == ("tma", "unsupported")
        assert moved["experimental_descriptor.p1"] == ("crashed", "unsupported")
        assert moved["tensor_descriptor.p0"] == ("unsupported", "tma")
        assert moved["host_descriptor.p0"] == ("unsupported", "tma")
        assert "experimental_descriptor" in ch[stack]["became_unsupported"]
        assert {"tensor_descriptor", "host_descriptor"} <= set(ch[stack]["became_supported"])
    # block pointers: the same no-tma verdict on 3.6 (only the IR under TTGIR moved); 3.9 removed them
    assert "block_ptr.p0" not in {v["case"] for v in ch["triton-3.6-cu130"]["verdicts"]}
    assert ch["triton-3.9-cu132"]["became_unsupported"] == ["block_ptr", "experimental_descriptor"]
    assert ch["triton-3.6-cu130"]["became_unsupported"] == ["experimental_descriptor"]
    row = next(r for r in grid["cases"] if r["id"] == "block_ptr.p0")
    assert "verdict" not in row["cells"][1]["moved"] and "ir.sass" in row["cells"][1]["moved"]
    assert len(list(tmp_path.glob("*.tgz"))) == 2   # the replays are still written
    text = reprokit("replay", B30, "--stacks", "triton-3.6-cu130", "--executor", "venv", "--out", tmp_path / "t",
                    "--cases", "experimental_descriptor.*")
    assert text.returncode == 1
    assert "became unsupported: experimental_descriptor" in text.stdout
    assert "experimental_descriptor.p0 tma->unsupported" in text.stdout


def test_a_diff_of_a_bundle_with_itself_is_empty():
    p = reprokit("diff", B30, B30)
    assert (p.returncode, p.stdout) == (0, "")
    p = reprokit("diff", B30, B30, "--case", "experimental_descriptor.p0", "--level", "ttgir")
    assert (p.returncode, p.stdout) == (0, "")


def test_a_one_op_ttgir_change_between_34_and_35_is_found_and_shown():
    # Only normalised IR moved (no verdict, TMA count or resource): listed, exit 0; --strict exits 1.
    p = reprokit("diff", B34, B35)
    assert p.returncode == 0
    assert "tensor_descriptor.p0 ttgir: -1 arith.muli" in p.stdout.splitlines()
    assert "3.5-cu130: 3 of 5 cases moved (3 IR only)" in p.stdout
    assert reprokit("diff", B34, B35, "--strict").returncode == 1
    u = reprokit("diff", B34, B35, "--case", "tensor_descriptor.p0", "--level", "ttgir")
    assert u.returncode == 0
    assert reprokit("diff", B34, B35, "--case", "tensor_descriptor.p0", "--level", "ttgir", "--strict").returncode == 1
    lines = u.stdout.splitlines()
    assert lines[0].startswith("--- a/") and lines[1].startswith("+++ b/")
    removed = [ln for ln in lines[2:] if ln.startswith("-")]
    added = [ln for ln in lines[2:] if ln.startswith("+")]
    # 3.5 computes the descriptor's stride once for both descriptors: one muli fewer, and its user
    # now takes the first one's result
    assert len(removed) == 2 and "arith.muli" in removed[0] and "ttng.tensormap_create" in removed[1]
    assert len(added) == 1 and "ttng.tensormap_create" in added[0]
    j = json.loads(reprokit("diff", B34, B35, "--json").stdout)
    cell = next(r for r in j["cases"] if r["id"] == "tensor_descriptor.p0")["cells"][1]
    assert {"level": "ttgir", "op": "arith.muli", "delta": -1} in cell["ops"]
    assert cell["verdict"] == "tma" and "verdict" not in cell["moved"]


@pytest.mark.parametrize("case, versions, before, after, first", [
    # the device tensor-descriptor API appears (as tl._experimental_make_tensor_descriptor) in 3.3.0,
    # a release stacks.toml does not pin: its venv is built from the index on demand
    ("tensor_descriptor.p0", "3.2.0..3.4.0", "3.2.0", "3.3.0", ("ok", "tma")),
    # the 3.0-era experimental descriptor API is gone from 3.4.0 on
    ("experimental_descriptor.p0", "3.3.1..3.5.0", "3.3.1", "3.4.0", ("unsupported", "unsupported")),
])
def test_bisect_finds_where_a_descriptor_family_appears_and_where_one_disappears(
        tmp_path, case, versions, before, after, first):
    p = reprokit("bisect", "--case", case, "--versions", versions, "--gpu", "h100", "--out", tmp_path, "--json")
    assert p.returncode == 0, p.stderr
    r = json.loads(p.stdout)
    assert (r["last_same"], r["first_changed"]) == (before, after)
    step = next(s for s in r["steps"] if s["version"] == after)
    assert (step["status"], step["verdict"]) == first
    assert r["captures"] <= 2 + (len(r["releases"]) - 2).bit_length()
    assert r["answer"].startswith(f"{case} on h100: first changed in Triton {after}")
    bundles = sorted(tmp_path.glob("*.tgz"))
    assert len(bundles) == 2 and [Path(b) for b in r["bundles"]] == [tmp_path / Path(b).name for b in r["bundles"]]
    for b in bundles:
        assert reprokit("verify", b).returncode == 0
    if case.startswith("experimental_descriptor"):   # the text output once: it captures as much again
        text = reprokit("bisect", "--case", case, "--versions", versions, "--gpu", "h100", "--out", tmp_path / "t")
        assert text.returncode == 0 and text.stdout.strip().splitlines()[-1] == r["answer"]
        assert f"step 3: triton {after}" in text.stdout + text.stderr


@pytest.fixture(scope="module")
def b200_bundle(tmp_path_factory, stack_ready):
    stack_ready("triton-3.5-cu130")
    out = tmp_path_factory.mktemp("b200")
    p = reprokit("run", "--gpu", "b200", "--stacks", "triton-3.5-cu130", "--executor", "venv",
                 "--cases", "host_descriptor.p0", "--out", out)
    assert p.returncode == 0, p.stderr
    (b,) = out.glob("*.tgz")
    return b


def _one_line(p, code):
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    assert len(p.stderr.strip().splitlines()) == 1 and p.stderr.startswith("reprokit: "), p.stderr
    return p.stderr


def test_bad_input_gets_one_line_and_an_exit_code(tmp_path, b200_bundle):
    not_a_bundle = tmp_path / "notes.tgz"
    not_a_bundle.write_text("hello")
    out = tmp_path / "out"
    assert "not a gzip file" in _one_line(reprokit("replay", not_a_bundle, "--out", out), 2)
    assert "matches no case" in _one_line(reprokit("replay", B30, "--cases", "nope.*", "--executor", "venv",
                                                   "--out", out), 2)
    assert "not a gzip file" in _one_line(reprokit("diff", B30, not_a_bundle), 2)
    assert "no case 'nope.p0'" in _one_line(reprokit("diff", B30, B35, "--case", "nope.p0"), 2)
    assert "GPU profile h100" in _one_line(reprokit("diff", B35, b200_bundle), 2)
    assert reprokit("diff", B35, b200_bundle, "--any-profile").returncode == 1
    assert "no case 'nope.p0' in the suite" in _one_line(
        reprokit("bisect", "--case", "nope.p0", "--versions", "3.0.0..3.9.0", "--gpu", "h100", "--out", out), 2)
    assert "no Triton release from 3.0.1 to 3.0.9" in _one_line(
        reprokit("bisect", "--case", "block_ptr.p0", "--versions", "3.0.1..3.0.9", "--gpu", "h100", "--out", out), 2)
    assert "expected FIRST..LAST" in _one_line(
        reprokit("bisect", "--case", "block_ptr.p0", "--versions", "3.0", "--gpu", "h100", "--out", out), 2)
    from tests.helpers.bundle_tools import repack

    tampered = repack(B30, tmp_path / "tampered.tgz",
                      lambda files: {**files, "kernels/copy_block_ptr.py": b"# edited after packing\n"})
    assert "fails verification" in _one_line(reprokit("replay", tampered, "--out", out), 2)
    assert "fails verification" in _one_line(reprokit("diff", tampered, B30), 2)
    assert not out.exists()   # nothing half-written


def test_a_replay_stack_that_cannot_run_exits_3_and_the_others_are_judged(tmp_path, stack_ready):
    stack_ready("triton-3.0-cu129")
    other = tmp_path / "checkout"
    shutil.copytree(ROOT, other, ignore=shutil.ignore_patterns(".git", "bundles", ".reprokit", "__pycache__"))
    with open(other / "stacks.toml", "a") as f:
        f.write('\n[stacks."triton-0.0-broken"]\ntriton = "0.0.0.dev0"\n')
    env = {**os.environ, "REPROKIT_ROOT": str(other)}
    p = reprokit("replay", B30, "--stacks", "triton-0.0-broken,triton-3.0-cu129", "--executor", "venv",
                 "--cases", "block_ptr.p0", "--out", tmp_path / "r", "--json", env=env)
    assert p.returncode == 3, p.stderr
    grid = json.loads(p.stdout)["grid"]
    broken = next(c for c in grid["columns"] if c["key"] == "triton-0.0-broken")
    assert broken["role"] == "failed" and "venv: building triton-0.0-broken failed" in broken["error"]
    assert [c["present"] for c in grid["cases"][0]["cells"]] == [True, False, True]
    assert grid["cases"][0]["cells"][2]["moved"] == []


def test_a_bundle_from_a_real_h100_reproduces_compile_only_here(tmp_path):
    """The recorded run was JIT on an H100 (gpu mode); its own stack here compiles ahead of time
    for sm_90a and gives the same statuses, verdicts, counts and normalised IR at every level."""
    (golden,) = (ROOT / "bundles" / "golden" / "h100-triton-3.6.0").glob("*.tgz")
    p = reprokit("replay", golden, "--executor", "venv", "--workers", "2", "--out", tmp_path, "--json",
                 "--cases", "block_ptr.p0,tensor_descriptor.p0,host_descriptor.p1")
    assert p.returncode == 0, p.stdout[-2000:] + p.stderr
    data = json.loads(p.stdout)
    assert data["reproduced"] and [c["mode"] for c in data["grid"]["columns"]] == ["gpu", "compile-only"]
    assert len(data["grid"]["cases"]) == 3
