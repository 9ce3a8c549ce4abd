"""What leaves in a bundle (issue 26): secrets planted on a traced command line under every
secret-saying option form, in the environment, in a kernel comment in a known token shape, and
behind each kind of project path escape; then `trace`, `run` and `bundle` (each with and without
--share) and `report` are checked for what they let out. No secret may be in any member but the
kept tensor files, and those must be exactly the user's bytes, intact, with USER set to a short
name that occurs in them.

Real runs: `trace` under Triton's interpreter (the CPU torch venv of tests/helpers/interp.py),
`run` on the pinned triton-3.6 venv stack, real tarballs read back by `verify`.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from reprokit.errors import ExecutorError
from tests.conftest import skip_or_fail_triton
from tests.helpers.interp import interpreter_python
from tests.helpers.runs import host

pytestmark = pytest.mark.triton

ROOT = Path(__file__).resolve().parents[2]
PROGRAM = ROOT / "tests" / "data" / "trace" / "planted_secrets.py"
STACK, GPU = "triton-3.6-cu130", "h100"
USER = "amy"   # the program puts it in its input bytes, as a short name turns up in random data

# One value per secret-saying option form; the plain options keep theirs.
ARGV_SECRETS = {
    "--api-key": "zq9X7mK2pL4vR8nT1wY6", "--token": "tK7mQ2xW9pL4vR8n", "--db_password": "Pa55-w0rd-Horse",
    "--pwd": "hunter2", "--access-key": "AK3xQ9mW7pL2vR8n", "--private-key": "pK2mW9xQ7vL4nR8t",
    "--credentials": "cR3dZ9xQ7vL4nR8t", "--session-cookie": "sid-9a8b7c6d5e4f", "--client-secret": "cS9x7Q2mW4pLvR8n",
    "--apikey": "aK4xQ9mW7pL2vR8nZ", "--auth-token": "aT5mQ2xW9pL4vR8n",
}
ARGV = ["--api-key", ARGV_SECRETS["--api-key"], f"--token={ARGV_SECRETS['--token']}",
        "--db_password", ARGV_SECRETS["--db_password"], f"--pwd={ARGV_SECRETS['--pwd']}",
        "--access-key", ARGV_SECRETS["--access-key"], f"--private-key={ARGV_SECRETS['--private-key']}",
        "--credentials", ARGV_SECRETS["--credentials"], f"--session-cookie={ARGV_SECRETS['--session-cookie']}",
        "--client-secret", ARGV_SECRETS["--client-secret"], f"--apikey={ARGV_SECRETS['--apikey']}",
        "--auth-token", ARGV_SECRETS["--auth-token"], "--sort-key", "plainvalue", "--author", "someone"]
ENV_SECRET = ("HF_TOKEN", "hf_" + "Qm7xW2pL9vR4nT8kZ3yB6cD1fG5hJ0aSsE")
KERNEL_TOKEN = "ghp_Zk3Lq9Wm2Xv7Rt5Yp8Nb4Hc6Jd1Fs0Ga2Qe"    # in planted_secrets.py's kernel comment
OUTSIDE = "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzzQ"
NEEDLES = [*ARGV_SECRETS.values(), ENV_SECRET[1], KERNEL_TOKEN, "wJalrXUtnFEMI", "root:x:0:0"]


def expected_input() -> bytes:
    """planted_secrets.py's input bytes, computed here without torch: random bytes with USER in them."""
    data = bytearray(random.Random(7).randbytes(1 << 16))
    data[1000:1000 + len(USER)] = USER.encode()
    return bytes(data)


def reprokit(*args, cwd: Path, env: dict | None = None, timeout: int = 900) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, check=False, timeout=timeout,
                          env={**base, "PYTHONPATH": str(ROOT), "USER": USER, "LOGNAME": USER,
                               ENV_SECRET[0]: ENV_SECRET[1], **(env or {})})


def members(path: Path) -> dict:
    with tarfile.open(path, "r:gz") as tar:
        root = tar.getmembers()[0].name
        return {ti.name[len(root) + 1:]: tar.extractfile(ti).read() for ti in tar.getmembers() if ti.isfile()}


def leaks(files: dict) -> list:
    """(member, needle) for every secret in a member that is not a kept tensor file."""
    return [(rel, n) for rel, data in sorted(files.items()) if not rel.startswith("trace/tensors/")
            for n in NEEDLES if n.encode() in data]


def storages(pt: bytes) -> dict:
    """storage key -> bytes of a torch.save file (read as the zip it is, without torch)."""
    with zipfile.ZipFile(io.BytesIO(pt)) as z:
        assert z.testzip() is None
        return {n.rsplit("/", 1)[1]: z.read(n) for n in z.namelist() if "/data/" in n and "/.data/" not in n}


@pytest.fixture(scope="module")
def interp_python() -> str:
    try:
        return str(interpreter_python(host()))
    except ExecutorError as e:
        skip_or_fail_triton(str(e))


@pytest.fixture(scope="module")
def traced(tmp_path_factory, interp_python) -> dict:
    """share -> (process, bundle path) of `trace --tensors small` of planted_secrets.py with ARGV."""
    out = {}
    for share in (False, True):
        d = tmp_path_factory.mktemp(f"trace-share-{share}")
        p = reprokit("trace", "--json", "--tensors", "small", "--out", d / "b", *(["--share"] if share else []),
                     "--", interp_python, PROGRAM, *ARGV, cwd=d)
        assert p.returncode == 6, p.stderr     # the program exits 3 after its launch: ProgramFailed
        out[share] = (p, d / json.loads(p.stdout)["bundle"])   # relative to the folder trace ran in
    return out


@pytest.mark.parametrize("share", [False, True])
def test_trace_lets_no_secret_out_and_keeps_the_tensors_exact(traced, share, tmp_path):
    p, bundle = traced[share]
    files = members(bundle)
    assert leaks(files) == []
    doc = json.loads(files["trace/trace.json"])
    assert doc["redacted_options"] == sorted(ARGV_SECRETS)
    assert "--sort-key" in doc["command"] and "plainvalue" in doc["command"] and "someone" in doc["command"]
    assert doc["stderr_tail"].startswith("using --api-key <redacted>")    # the program printed its argv
    manifest = json.loads(files["manifest.json"])
    assert manifest["redaction"]["options"] == sorted(ARGV_SECRETS)
    assert manifest["redaction"]["unscanned"] == ["trace/tensors/0001.inputs.pt", "trace/tensors/0001.outputs.pt"]
    # The tensors: the user's bytes, USER in them, untouched by --share; the write-only output zeros.
    want = expected_input()
    assert USER.encode() in want
    inputs, outputs = storages(files["trace/tensors/0001.inputs.pt"]), storages(files["trace/tensors/0001.outputs.pt"])
    # x_ptr as the program made it; out_ptr (torch.empty, only stored to): zeros where the launch
    # wrote, never the old heap bytes (a byte the launch rewrote with its own value stays it).
    (x_in,) = [v for v in inputs.values() if v == want]
    (out_in,) = [v for v in inputs.values() if v is not x_in]
    assert len(out_in) == len(want) and all(b == 0 or b == w for b, w in zip(out_in, want))
    assert list(outputs.values()) == [want, want]
    assert reprokit("verify", bundle, cwd=tmp_path).returncode == 0
    if share:
        assert "user" in manifest["share"]["classes"]


def test_trace_says_what_leaves_and_keeps_json_clean(traced):
    p, _ = traced[False]
    said = [ln for ln in p.stderr.splitlines() if ln.startswith("trace: the bundle holds")]
    assert len(said) == 2, p.stderr
    assert said[0].startswith("trace: the bundle holds 1 source file(s) of your program, ")
    assert said[0].endswith("in trace/sources/")
    assert said[1].startswith("trace: the bundle holds 2 tensor file(s) of your program's launches, ")
    assert said[1].endswith("in trace/tensors/: your data, packed byte-exact and not scanned for secrets or host names")
    doc = json.loads(p.stdout)    # --json: the document alone on stdout
    assert "bundle holds" not in p.stdout and doc["program"]["exit_code"] == 3
    # reprokit's own lines name the command with the values cut (the program's own stderr passes through)
    running = next(ln for ln in p.stderr.splitlines() if ln.startswith("trace: running"))
    assert [v for v in ARGV_SECRETS.values() if v in running] == [] and "--api-key <redacted>" in running


def test_a_flipped_byte_in_a_real_tensor_file_is_exit_1(traced, tmp_path):
    _, bundle = traced[False]
    files = members(bundle)
    pt = bytearray(files["trace/tensors/0001.outputs.pt"])
    at = pt.find(expected_input()[:64])
    pt[at + 5000] ^= 0x01
    from tests.helpers.bundle_tools import reseal

    def edit(f):
        f["trace/tensors/0001.outputs.pt"] = bytes(pt)
        return f

    damaged = reseal(bundle, tmp_path / "damaged.tgz", edit)
    p = reprokit("verify", damaged, cwd=tmp_path)
    assert p.returncode == 1, p.stdout
    assert p.stdout.startswith("trace/tensors/0001.outputs.pt: damaged or not a tensor file: member ")


def test_trace_leaves_out_a_tensor_over_the_readers_limit(tmp_path, interp_python):
    """One set of limits: a reader told (REPROKIT_MAX_MEMBER_BYTES) that a member is at most 100K
    reads back whatever trace wrote under the same setting; trace says which tensor it left out."""
    env = {"REPROKIT_MAX_MEMBER_BYTES": "100K"}
    p = reprokit("trace", "--tensors", "all", "--out", tmp_path / "b", "--", interp_python, PROGRAM, cwd=tmp_path,
                 env=env)
    assert p.returncode == 6, p.stderr
    left = [ln for ln in p.stderr.splitlines() if ln.startswith("trace: left out")]
    assert left == ["trace: left out 1 tensor(s) over what --tensors all keeps and a bundle reader reads back "
                    "(87.5 KiB a tensor, 87.5 KiB a launch, 1792.0 MiB in all): copy_bytes.1:out_ptr"], p.stderr
    (bundle,) = (tmp_path / "b").glob("*.tgz")
    assert reprokit("verify", bundle, cwd=tmp_path, env=env).returncode == 0
    assert reprokit("show", bundle, cwd=tmp_path, env=env).returncode == 0


def test_report_lets_no_secret_out(traced, tmp_path):
    _, bundle = traced[False]
    out = tmp_path / "report.md"
    p = reprokit("report", bundle, "--out", out, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    text = out.read_text() + p.stdout + p.stderr
    assert [n for n in NEEDLES if n in text] == []


# --- run: a project with a token in a kernel comment, and each kind of path escape ----------------------

KERNEL = f'''import triton
import triton.language as tl


@triton.jit
def scale(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    # deploy token, pasted by mistake: {KERNEL_TOKEN}
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) * 2, mask=mask)
'''
TOML = '''[project]
name = "leaky"
kernels = {kernels}

[[case]]
id = "scale"
kernel = "kernels/scale.py:scale"
grid = [4]
args = {{ x_ptr = {{ tensor = [256] }}, y_ptr = {{ tensor = [256] }}, n = 256, BLOCK = 64 }}
'''


def _project(tmp: Path, kernels: str = '["kernels/"]') -> Path:
    root = tmp / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "scale.py").write_text(KERNEL)
    (tmp / "outside").mkdir(exist_ok=True)
    (tmp / "outside" / "credentials").write_text(OUTSIDE + "\n")
    (root / "reprokit.toml").write_text(TOML.format(kernels=kernels))
    return root


ESCAPES = {
    "absolute": lambda root: (root / "reprokit.toml").write_text(
        TOML.format(kernels=f'["kernels/", "{root.parent}/outside/credentials"]')),
    "dotdot": lambda root: (root / "reprokit.toml").write_text(TOML.format(kernels='["kernels/", "../outside/credentials"]')),
    "passwd": lambda root: (root / "kernels" / "passwd.py").symlink_to("/etc/passwd"),
    "link-out": lambda root: (root / "kernels" / "creds").symlink_to(root.parent / "outside" / "credentials"),
}


@pytest.fixture(scope="module")
def venv_stack(stack_ready):
    stack_ready(STACK)


@pytest.mark.parametrize("escape", sorted(ESCAPES))
@pytest.mark.parametrize("share", [False, True])
def test_run_refuses_every_path_escape(tmp_path, escape, share):
    root = _project(tmp_path)
    ESCAPES[escape](root)
    p = reprokit("run", "--gpu", GPU, "--executor", "venv", "--stacks", STACK, "--out", tmp_path / "out",
                 *(["--share"] if share else []), cwd=root)
    assert p.returncode == 2, p.stderr
    assert "resolves outside the project folder" in p.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tgz"))
    assert [n for n in NEEDLES if n in p.stdout + p.stderr] == []


@pytest.mark.parametrize("share", [False, True])
def test_run_and_bundle_let_no_secret_out(tmp_path, venv_stack, traced, share):
    """`run` of a project whose kernel comment holds a token; then `bundle` of that capture with
    a traced command's secrets and kept tensors planted beside it."""
    root = _project(tmp_path)
    flag = ["--share"] if share else []
    p = reprokit("run", "--gpu", GPU, "--executor", "venv", "--stacks", STACK, "--out", tmp_path / "out", *flag,
                 cwd=root)
    assert p.returncode == 0, p.stderr
    (bundle,) = (tmp_path / "out").glob("*.tgz")
    files = members(bundle)
    assert KERNEL_TOKEN.encode() in (root / "kernels" / "scale.py").read_bytes()   # planted, then cut
    assert leaks(files) == []
    assert "<redacted>" in files["kernels/scale.py"].decode()
    # bundle: the run's capture again, with a trace record that still holds its command's secrets
    # (as an older trace wrote it) and the tensors the trace kept.
    cap = tmp_path / "capture"
    for rel, data in files.items():
        if rel not in ("manifest.json", "SHA256SUMS", "README.md"):
            (cap / rel).parent.mkdir(parents=True, exist_ok=True)
            (cap / rel).write_bytes(data)
    (cap / "kernels" / "scale.py").write_text(KERNEL)
    traced_files = members(traced[False][1])
    (cap / "trace" / "tensors").mkdir(parents=True)
    for rel in ("trace/tensors/0001.inputs.pt", "trace/tensors/0001.outputs.pt"):
        (cap / rel).write_bytes(traced_files[rel])
    (cap / "trace" / "trace.json").write_text(json.dumps({
        "format": 1, "command": ["python", "planted_secrets.py", *ARGV], "exit_code": 3, "tensor_files": [],
        "cases": [], "missed": [],
        "stderr_tail": "using " + " ".join(ARGV) + f"\n{ENV_SECRET[1]}\n"}))
    shutil.rmtree(tmp_path / "again", ignore_errors=True)
    p = reprokit("bundle", cap, "--out", tmp_path / "again", *flag, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (again,) = (tmp_path / "again").glob("*.tgz")
    out = members(again)
    assert leaks(out) == []
    for rel in ("trace/tensors/0001.inputs.pt", "trace/tensors/0001.outputs.pt"):
        assert out[rel] == traced_files[rel]          # byte-exact, USER in them, under --share too
    assert USER.encode() in out["trace/tensors/0001.inputs.pt"]
    assert json.loads(out["manifest.json"])["redaction"]["options"] == sorted(ARGV_SECRETS)


def _named(pt: bytes) -> dict:
    """parameter -> its storage's bytes, read without torch."""
    from reprokit.bundle.tensorfile import read

    tensors, _ = read(pt)
    with zipfile.ZipFile(io.BytesIO(pt)) as z:
        base = next(n for n in z.namelist() if n.endswith("/data.pkl"))[: -len("data.pkl")]
        return {name: z.read(f"{base}data/{t.storage.key}") for name, t in tensors.items()}


def test_a_write_only_output_keeps_only_what_the_launch_left_alone(tmp_path, interp_python):
    """Its kept inputs are zeros where the launch wrote and the program's bytes where it did not
    (which the outputs hold anyway): never the memory the program handed in where the kernel
    wrote, and a replay from them gives the outputs whole."""
    import struct

    p = reprokit("trace", "--tensors", "small", "--out", tmp_path / "b", "--", interp_python,
                 ROOT / "tests" / "data" / "trace" / "partial_write.py", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (bundle,) = (tmp_path / "b").glob("*.tgz")
    files = members(bundle)
    ins, outs = _named(files["trace/tensors/0001.inputs.pt"]), _named(files["trace/tensors/0001.outputs.pt"])
    assert struct.unpack("256f", ins["x_ptr"]) == tuple(float(i) for i in range(256))
    assert struct.unpack("256f", ins["out_ptr"]) == (0.0,) * 128 + (7.0,) * 128
    assert struct.unpack("256f", outs["out_ptr"]) == tuple(2.0 * i for i in range(128)) + (7.0,) * 128
    # in place: the output is the input's memory, read through it, so its bytes are kept as they were
    ins2 = _named(files["trace/tensors/0002.inputs.pt"])
    assert struct.unpack("256f", ins2["out_ptr"]) == tuple(float(i) for i in range(256))
    # the bundle says which kept inputs are those zeros, not the program's data
    kept = {t["file"]: t for t in json.loads(files["trace/trace.json"])["tensors_kept"]}
    assert kept["trace/tensors/0001.inputs.pt"]["write_only"] == ["out_ptr"]
    assert kept["trace/tensors/0002.inputs.pt"]["write_only"] == []
    assert set(kept["trace/tensors/0001.inputs.pt"]["kept"]) == {"x_ptr", "out_ptr"}
    assert reprokit("verify", bundle, cwd=tmp_path).returncode == 0
