"""On a real GPU (issue 26): a trace whose command holds secrets and whose output is write-only
(torch.empty) replays from its kept tensors: the write-only output kept as zeros still reproduces
the program's output, and the GPU replay's pre-check turns a malformed trace record or a damaged
tensor file into one line, never a traceback. With $OUT set, the bundles and each command's
output are copied there as evidence.

Run on a GPU host (torch + triton importable by this python):
    REPROKIT_REQUIRE_GPU=1 OUT=/some/folder python -m pytest -q tests/gpu/test_share_replay.py
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.bundle_tools import reseal

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "data" / "trace" / "planted_secrets.py"
SECRET = "zq9X7mK2pL4vR8nT1wY6"


def reprokit(*args, cwd: Path, name: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "USER": "amy", "LOGNAME": "amy"}
    env.pop("TRITON_INTERPRET", None)
    p = subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], cwd=cwd, env=env, capture_output=True,
                       text=True, check=False, timeout=900)
    out = os.environ.get("OUT")
    if out:
        Path(out, f"{name}.txt").write_text(f"$ reprokit {' '.join(map(str, args))}\nexit {p.returncode}\n"
                                            f"--- stdout\n{p.stdout}\n--- stderr\n{p.stderr}\n")
    return p


def keep(path: Path) -> None:
    if os.environ.get("OUT"):
        shutil.copy(path, os.environ["OUT"])


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("share-gpu")
    p = reprokit("trace", "--json", "--tensors", "small", "--out", d / "b", "--", sys.executable, PROGRAM,
                 "--api-key", SECRET, cwd=d, name="trace")
    assert p.returncode == 6, p.stderr           # the program exits 3 after its launch
    bundle = d / json.loads(p.stdout)["bundle"]
    keep(bundle)
    return bundle


def test_the_write_only_output_replays_from_zeros(traced, tmp_path):
    assert reprokit("verify", traced, cwd=tmp_path, name="verify").returncode == 0
    p = reprokit("replay", traced, "--executor", "local", "--out", tmp_path / "r", "--json", "--all", cwd=tmp_path,
                 name="replay")
    assert p.returncode == 0, p.stdout + p.stderr
    (replayed,) = (tmp_path / "r").glob("*.tgz")
    keep(replayed)
    import tarfile

    with tarfile.open(replayed) as tar:
        root = tar.getmembers()[0].name
        results = json.load(tar.extractfile(f"{root}/results.json"))
        blob = b"".join(tar.extractfile(m).read() for m in tar.getmembers()
                        if m.isfile() and "/trace/tensors/" not in m.name)
    case = next(c for c in results["cases"] if c["id"] == "copy_bytes.1")
    assert case["status"] == "ok", case
    assert SECRET.encode() not in blob


@pytest.mark.parametrize("text", ["[1, 2]", "not json {"])
def test_a_malformed_trace_record_is_one_line_in_the_gpu_pre_check(traced, tmp_path, text):
    def edit(files):
        files["trace/trace.json"] = text.encode()
        return files

    bad = reseal(traced, tmp_path / "bad.tgz", edit)
    p = reprokit("replay", bad, "--executor", "local", "--out", tmp_path / "r", cwd=tmp_path,
                 name=f"replay-malformed-{'list' if text.startswith('[') else 'text'}")
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr
    # refused when the bundle is opened (verify judges trace/trace.json), before any GPU work
    assert "fails verification" in p.stderr and "trace/trace.json" in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1, p.stderr
    assert not (tmp_path / "r").exists() or not list((tmp_path / "r").glob("*.tgz"))


def test_a_damaged_tensor_file_is_refused_before_the_gpu_runs(traced, tmp_path):
    def edit(files):
        pt = bytearray(files["trace/tensors/0001.inputs.pt"])
        pt[len(pt) // 2] ^= 0x01
        files["trace/tensors/0001.inputs.pt"] = bytes(pt)
        return files

    bad = reseal(traced, tmp_path / "bad.tgz", edit)
    p = reprokit("verify", bad, cwd=tmp_path, name="verify-damaged")
    assert p.returncode == 1 and p.stdout.startswith("trace/tensors/0001.inputs.pt: damaged or not a tensor file")
    p = reprokit("replay", bad, "--executor", "local", "--out", tmp_path / "r", cwd=tmp_path, name="replay-damaged")
    assert p.returncode in (1, 2) and "Traceback" not in p.stderr, p.stderr
