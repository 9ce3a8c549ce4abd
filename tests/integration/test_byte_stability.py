"""Same input, same bytes: a real capture packed with `bundle --share` under several hash seeds and
HOMEs, and a real sweep under two TMPDIRs, each give one sha256, and no HOME or temp folder of the
run is left in the bytes."""

from __future__ import annotations

import fnmatch
import gzip
import hashlib
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from reprokit.bundle.reader import open_bundle
from reprokit.errors import ExecutorError
from tests.conftest import skip_or_fail_triton
from tests.helpers.interp import interpreter_python
from tests.helpers.runs import host

pytestmark = pytest.mark.triton
ROOT = Path(__file__).resolve().parents[2]
STACK = "triton-3.6-cu130"
CASES = "block_ptr.p0,host_descriptor.p0,tensor_descriptor.p1"
SEEDS = ("0", "1", "2", "77", "4242")


def _cli(*args, env: dict, timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, timeout=timeout, check=False)


def _env(**over) -> dict:
    """This process's environment with the venv cache pinned: it must not follow HOME."""
    return {**os.environ, "REPROKIT_CACHE": str(host().cache), **{k: str(v) for k, v in over.items()}}


def _sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_bundle_share_of_one_capture_is_one_sha256_under_every_hash_seed_and_home(stack_ready, tmp_path):
    stack_ready(STACK)
    # The capture runs with a HOME outside /home whose tail looks like one (/.../x/home), as on a
    # fresh CI machine: Triton reports its cache dirs under it in env.json, and reprokit's cache
    # (the stack's venv, whose paths env.json names) lies in it too (a link to the built venvs).
    capture_home = tmp_path / "x" / "home"
    capture_home.mkdir(parents=True)
    (capture_home / "cache").symlink_to(host().cache, target_is_directory=True)
    cache = {"REPROKIT_CACHE": capture_home / "cache"}
    cap = tmp_path / "cap"
    p = _cli("capture", "--gpu", "h100", "--stack", STACK, "--executor", "venv", "--workers", "1",
             "--cases", CASES, "--out", cap, env=_env(HOME=capture_home, **cache))
    assert p.returncode == 0, p.stderr
    planted = (cap / "env.json").read_bytes()                  # the test plants what it looks for
    assert f"{capture_home}/.triton/cache".encode() in planted and f"{capture_home}/cache/venvs/".encode() in planted
    # The other HOME is a /home/<user> that exists nowhere: bundling reads it, never writes there.
    homes = (capture_home, Path(f"/home/rk{os.getpid()}"))
    tmpdirs = (tmp_path / "tmp-a", tmp_path / "tmp-bb")   # and the temp folder changes too
    for t in tmpdirs:
        t.mkdir()
    digests = {}
    for home in homes:
        for i, seed in enumerate(SEEDS):
            out = tmp_path / f"out-{home.name}-{seed}"
            p = _cli("bundle", cap, "--out", out, "--share", "--executor", "venv",
                     env=_env(HOME=home, PYTHONHASHSEED=seed, TMPDIR=tmpdirs[i % 2], **cache))
            assert p.returncode == 0, p.stderr
            (bundle,) = out.glob("*.tgz")
            digests[(str(home), seed)] = _sha(bundle)
            stream = gzip.decompress(bundle.read_bytes())   # every member's name, header and contents
            for h in homes:
                assert str(h).encode() not in stream, (home, seed, h)
            # Not a piece of it either: Triton's cache dir is the placeholder and nothing before it.
            assert open_bundle(bundle).env["knobs"]["cache"]["dir"] == "<home>/.triton/cache"
    assert len(digests) == 10 and len(set(digests.values())) == 1, digests


def test_a_sweep_is_one_sha256_under_two_tmpdirs_and_homes(stack_ready, tmp_path):
    stack = "triton-3.5-cu130"   # a stack the sweep's spec targets
    stack_ready(stack)
    digests = {}
    runs = ((tmp_path / "t1", tmp_path / "x" / "home"), (tmp_path / "another-temp-root", tmp_path / "h2"))
    for i, (tmpdir, home) in enumerate(runs):
        tmpdir.mkdir()
        home.mkdir(parents=True)
        p = _cli("sweep", "tma-invariants", "--reduced", "--stacks", stack, "--work", tmp_path / f"work{i}",
                 "--out", tmp_path / f"out{i}", env=_env(TMPDIR=tmpdir, HOME=home, SOURCE_DATE_EPOCH=1700000000),
                 timeout=900)
        assert p.returncode == 0, p.stderr
        (bundle,) = (tmp_path / f"out{i}").glob("*.tgz")
        digests[(str(tmpdir), str(home))] = _sha(bundle)
        # ptxas ran on files under this TMPDIR (in the run's scratch folder; the harness records
        # them as <tmp>), Triton kept its cache dirs under this HOME, and the work folder says so...
        work = b"".join(r.read_bytes() for r in (tmp_path / f"work{i}").rglob("*.json"))
        assert f"{home}/.triton".encode() in work
        assert b'"<tmp>.ptx"' in work  # the harness names ptxas' temp files so itself
        # ...the bundle names them by what they are.
        stream = gzip.decompress(bundle.read_bytes())
        assert str(tmpdir).encode() not in stream and str(home).encode() not in stream
        assert b'"<tmp>.ptx"' in stream and b'"<home>/.triton/cache"' in stream and b"<cache>/venvs/" in stream
    assert len(set(digests.values())) == 1, digests


@pytest.mark.docker
def test_a_docker_sweep_is_one_sha256_under_two_tmpdirs(base_image, tmp_path):
    """In a container the harness's temp folder is the container's /tmp whatever the host's
    TMPDIR, and the container's hostname and start time are no part of the answers."""
    digests = {}
    for i, tmpdir in enumerate((tmp_path / "t1", tmp_path / "another-temp-root")):
        tmpdir.mkdir()
        p = _cli("sweep", "tma-invariants", "--reduced", "--stacks", "triton-3.5-cu130", "--executor", "docker",
                 "--work", tmp_path / f"work{i}", "--out", tmp_path / f"out{i}",
                 env=_env(TMPDIR=tmpdir, SOURCE_DATE_EPOCH=1700000000, REPROKIT_BASE_IMAGE=base_image,
                          REPROKIT_WITH_TORCH=0), timeout=900)
        assert p.returncode == 0, p.stderr
        (bundle,) = (tmp_path / f"out{i}").glob("*.tgz")
        digests[str(tmpdir)] = _sha(bundle)
        env = open_bundle(bundle).env
        assert env["os"]["in_container"] is True and env["os"]["hostname"] == "reprokit-container"
        assert b'"<tmp>.ptx"' in gzip.decompress(bundle.read_bytes())
    assert len(set(digests.values())) == 1, digests


# ---- trace: two runs of one program ------------------------------------------------------------

TIMING_DOC = ROOT / "docs" / "bundle-format.md"
PROGRAM = ROOT / "tests" / "data" / "trace" / "processes.py"


def timing_fields() -> dict:
    """member pattern -> fields, from docs/bundle-format.md's `timing-fields` block."""
    text = TIMING_DOC.read_text()
    block = text.split("```text timing-fields\n", 1)[1].split("```", 1)[0]
    return {line.split()[0]: line.split()[1:] for line in block.splitlines() if line.strip()}


def _drop(doc, path: list):
    """The JSON document less the field at `path` (`cases[]` walks every element of a list)."""
    if not path or doc is None:
        return doc
    head, rest = path[0], path[1:]
    if head.endswith("[]"):
        for item in doc.get(head[:-2]) or []:
            _drop(item, rest)
    elif rest:
        _drop(doc.get(head), rest)
    else:
        doc.pop(head, None)
    return doc


def _masked(member: str, data: bytes, fields: list, bundle_name: str) -> bytes:
    if fields == ["*"]:
        return b""
    if fields[0].startswith("line:"):
        needles = [f[len("line:"):].encode() for f in fields]
        return b"\n".join(ln for ln in data.split(b"\n") if not any(n in ln for n in needles))
    if fields[0].startswith("column:"):
        rows = [r.split(b"\t") for r in data.split(b"\n")]
        drop = {rows[0].index(f[len("column:"):].encode()) for f in fields}
        return b"\n".join(b"\t".join(c for i, c in enumerate(r) if i not in drop) for r in rows)
    doc = json.loads(data)
    for f in fields:
        _drop(doc, f.split("."))
    return json.dumps(doc, sort_keys=True).encode()


def _members(bundle: Path) -> dict:
    with tarfile.open(bundle) as tar:
        return {m.name.split("/", 1)[1]: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def test_two_traces_of_one_program_differ_only_in_the_documented_timing_fields(tmp_path):
    """A program with a forked child and kept tensors, traced twice under 2 TMPDIRs, 2 HOMEs, 2
    hash seeds and 2 working folders (one SOURCE_DATE_EPOCH): every member is the same bytes but
    the documented timing fields, which are masked here exactly as docs/bundle-format.md lists
    them; kernels/, the IR, cubins, SASS, plan.json and trace/ are never masked."""
    try:
        python = str(interpreter_python(host()))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))
    listed = timing_fields()
    assert not any(fnmatch.fnmatch(m, p) for p in listed
                   for m in ("plan.json", "kernels/x.py", "trace/trace.json", "cases/a.1/kernel.cubin",
                             "cases/a.1/kernel.sass", "cases/a.1/kernel.ttir", "cases/a.1/kernel.ptx"))
    bundles = []
    for i in (1, 2):
        home, tmp, cwd = (tmp_path / f"{kind}{i}" for kind in ("home", "tmp", "cwd"))
        for d in (home, tmp, cwd):
            d.mkdir()
        env = _env(HOME=home, TMPDIR=tmp, PYTHONHASHSEED=str(i * 17), SOURCE_DATE_EPOCH=1700000000,
                   PYTHONPATH=ROOT)
        env.pop("TRITON_INTERPRET", None)
        p = subprocess.run([sys.executable, "-m", "reprokit", "trace", "--tensors", "small", "--out",
                            str(tmp_path / f"out{i}"), "--", python, str(PROGRAM), "fork"],
                           cwd=cwd, env=env, capture_output=True, text=True, timeout=900, check=False)
        assert p.returncode == 0, p.stderr[-3000:]
        (bundle,) = (tmp_path / f"out{i}").glob("*.tgz")
        bundles.append(bundle)
        assert not list(tmp.iterdir()), "the trace left files in its TMPDIR"
    names = [b.name[:-len(".tgz")] for b in bundles]
    a, b = (_members(x) for x in bundles)
    assert sorted(a) == sorted(b)
    assert any(m.startswith("trace/tensors/") for m in a) and any(m.startswith("kernels/") for m in a)
    # the members whose sums may differ: the timed ones, and README.md and manifest.json, which
    # name the bundle
    timed = sorted(m for m in a if any(fnmatch.fnmatch(m, p) for p in listed)) + ["README.md", "manifest.json"]
    for member in sorted(a):
        fields = next((f for p, f in listed.items() if fnmatch.fnmatch(member, p)), None)
        if fields is not None:
            assert _masked(member, a[member], fields, names[0]) == _masked(member, b[member], fields, names[1]), member
        elif member == "manifest.json":
            docs = []
            for doc, name in ((json.loads(a[member]), names[0]), (json.loads(b[member]), names[1])):
                assert doc.pop("name") == name
                doc.pop("content_sha256")
                doc["files"] = [f for f in doc["files"] if f["path"] not in timed]
                docs.append(doc)
            assert docs[0] == docs[1]
        elif member == "SHA256SUMS":
            def kept(data):
                return [ln for ln in data.decode().splitlines() if ln.split("  ", 1)[1] not in timed]
            assert kept(a[member]) == kept(b[member])
        elif member == "README.md":
            assert a[member].replace(names[0].encode(), b"<name>") == b[member].replace(names[1].encode(), b"<name>")
        else:
            assert a[member] == b[member], member


def test_two_captures_of_one_case_give_the_same_cubin_and_metadata(stack_ready, tmp_path):
    """`capture` (and so `run`) stages the kernel files with a fixed modification time, which
    ptxas writes into the cubin: two captures, under 2 TMPDIRs and 2 working folders, give the
    same IR, cubin and SASS, and metadata.json apart from the documented timing fields."""
    stack_ready(STACK)
    listed = timing_fields()
    caps = []
    for i in (1, 2):
        tmp, cwd = tmp_path / f"tmp{i}", tmp_path / f"cwd{i}"
        tmp.mkdir()
        cwd.mkdir()
        cap = tmp_path / f"cap{i}"
        p = subprocess.run([sys.executable, "-m", "reprokit", "capture", "--gpu", "h100", "--stack", STACK,
                            "--executor", "venv", "--workers", "1", "--cases", "block_ptr.p0", "--out", str(cap)],
                           capture_output=True, text=True, cwd=cwd, timeout=600, check=False,
                           env=_env(TMPDIR=tmp, PYTHONPATH=ROOT))
        assert p.returncode == 0, p.stderr[-3000:]
        caps.append(cap / "cases" / "block_ptr.p0")
    a, b = caps
    for name in ("kernel.ttir", "kernel.ttgir", "kernel.llir", "kernel.ptx", "kernel.cubin", "kernel.sass"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    fields = listed["cases/*/metadata.json"]
    assert _masked("", (a / "metadata.json").read_bytes(), fields, "") == \
        _masked("", (b / "metadata.json").read_bytes(), fields, "")
