"""Bad input that would make a bundle carry more than the user meant, or break what it carries
(issue 26): project paths that leave the project, secret-saying options on a traced command,
binary members, kept tensor files that are damaged or hostile, a malformed trace record, a kernel
too deep for Python's parser, and the one set of size limits. Each case runs the real thing: real
files, symlinks and FIFOs, real tarballs, the CLI in a real process where a user would meet it."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from reprokit import limits
from reprokit.bundle import reader, tensorfile
from reprokit.bundle.reader import open_bundle, verify
from reprokit.common.redact import MARKER, cut_values, is_secret_option, redact_argv
from reprokit.errors import BundleInvalid
from reprokit.run.replay import write_tensors
from tests.helpers.bundle_tools import edit_json, make_bundle, reseal

ROOT = Path(__file__).resolve().parents[2]

KERNEL = '''import triton
import triton.language as tl


@triton.jit
def k(x_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
'''
CASE = '''
[[case]]
id = "a"
kernel = "kernels/k.py:k"
args = { x_ptr = { tensor = [16] }, n = 16, BLOCK = 16 }
'''


def cli(*args, cwd: Path, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "reprokit", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, check=False, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _project(tmp: Path, kernels: str = '["kernels/"]', extra: str = "") -> Path:
    """A valid project at tmp/proj (one kernel, one case) with a secret file beside it."""
    root = tmp / "proj"
    (root / "kernels").mkdir(parents=True)
    (root / "kernels" / "k.py").write_text(KERNEL)
    (tmp / "outside").mkdir()
    (tmp / "outside" / "credentials").write_text("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYzz\n")
    (root / "reprokit.toml").write_text(f'[project]\nname = "p"\nkernels = {kernels}\n{CASE}{extra}')
    return root


# (label, how the project is set up, the line of reprokit.toml named, what the line says)
def _absolute(root: Path) -> None:
    text = (root / "reprokit.toml").read_text()
    (root / "reprokit.toml").write_text(text.replace('kernels = ["kernels/"]',
                                                     f'kernels = ["kernels/", "{root.parent}/outside/credentials"]'))


def _dotdot(root: Path) -> None:
    text = (root / "reprokit.toml").read_text()
    (root / "reprokit.toml").write_text(text.replace('kernels = ["kernels/"]',
                                                     'kernels = ["kernels/", "../outside/credentials"]'))


def _passwd(root: Path) -> None:
    (root / "kernels" / "x.py").symlink_to("/etc/passwd")


def _link_out(root: Path) -> None:
    (root / "kernels" / "creds.txt").symlink_to(root.parent / "outside" / "credentials")


def _hard_link(root: Path) -> None:
    os.link(root.parent / "outside" / "credentials", root / "kernels" / "creds.txt")


def _folder_link_out(root: Path) -> None:
    (root / "kernels" / "more").symlink_to(root.parent / "outside", target_is_directory=True)


def _fifo(root: Path) -> None:
    os.mkfifo(root / "kernels" / "pipe")


def _huge(root: Path) -> None:
    with open(root / "kernels" / "data.py", "wb") as f:
        f.truncate(limits.MAX_MEMBER_BYTES // 64)   # 8 MiB, sparse: over the 4 MB a project file may have


def _not_python(root: Path) -> None:
    (root / "kernels" / "k.txt").write_text(KERNEL)
    text = (root / "reprokit.toml").read_text()
    (root / "reprokit.toml").write_text(text.replace('kernel = "kernels/k.py:k"', 'kernel = "kernels/k.txt:k"'))


def _case_link(root: Path) -> None:
    (root / "kernels" / "k.py").unlink()
    (root / "kernels" / "k.py").symlink_to(root.parent / "outside" / "credentials")


def _dockerfile(root: Path) -> None:
    with open(root / "reprokit.toml", "a") as f:
        f.write('\n[stacks.mine]\ntriton = "3.6.0"\ndockerfile = "../outside/credentials"\n')


ESCAPES = [
    ("absolute path", _absolute, 3, "kernels names '/", "resolves outside the project folder"),
    ("../ escape", _dotdot, 3, "kernels names '../outside/credentials'", "resolves outside the project folder"),
    ("symlink to /etc/passwd", _passwd, 3, "kernels file 'x.py'", "resolves outside the project folder"),
    ("symlink to a file outside", _link_out, 3, "kernels file 'creds.txt'", "resolves outside the project folder"),
    ("hard link to a file outside", _hard_link, 3, "kernels file 'creds.txt'", "is a hard link"),
    ("folder link out", _folder_link_out, 3, "kernels folder link 'more'", "resolves outside the project"),
    ("FIFO", _fifo, 3, "kernels file 'pipe'", "is not a regular file"),
    ("huge file", _huge, 3, "kernels file 'data.py'", "over the 4 MB a project file may have"),
    ("kernel not Python", _not_python, 7, "case 'a': kernel file kernels/k.txt", "is not a Python file"),
    ("case kernel linked out", _case_link, 7, "case 'a': kernel file kernels/k.py", "resolves outside"),
    ("dockerfile outside", _dockerfile, 12, "stack 'mine': dockerfile '../outside/credentials'", "resolves outside"),
]


@pytest.mark.parametrize("label, make, line, names, why", ESCAPES, ids=[e[0] for e in ESCAPES])
def test_check_names_the_line_of_a_path_out_of_the_project(tmp_path, label, make, line, names, why):
    root = _project(tmp_path)
    assert cli("check", cwd=root).returncode == 0      # the project before the escape is fine
    make(root)
    p = cli("check", cwd=root)
    assert p.returncode == 2, p.stdout + p.stderr
    mine = [ln for ln in p.stdout.splitlines() if names in ln]
    assert len(mine) == 1 and mine[0].startswith(f"reprokit.toml:{line}: ") and why in mine[0], p.stdout
    assert "Traceback" not in p.stderr and "wJalrXUtnFEMI" not in p.stdout + p.stderr


@pytest.mark.parametrize("label, make", [(e[0], e[1]) for e in ESCAPES if e[0] != "dockerfile outside"],
                         ids=[e[0] for e in ESCAPES if e[0] != "dockerfile outside"])
def test_run_refuses_a_project_with_a_path_out_of_it(tmp_path, label, make):
    """`run` judges the project before any stack is made: exit 2, no bundle, no secret said."""
    root = _project(tmp_path)
    make(root)
    stack = next(iter(__import__("reprokit.config", fromlist=["load_config"]).load_config().stacks))
    p = cli("run", "--gpu", "h100", "--executor", "venv", "--stacks", stack, "--out", tmp_path / "out", "--json",
            cwd=root, env={"REPROKIT_CACHE": str(tmp_path / "cache")})
    assert p.returncode == 2, p.stderr
    assert "problem(s) in reprokit.toml" in p.stderr or "resolves outside" in p.stderr or "not a" in p.stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.tgz"))
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("bin/python"))
    assert "wJalrXUtnFEMI" not in p.stdout + p.stderr and "root:x:0:0" not in p.stdout + p.stderr


def test_a_kernel_too_deep_for_the_parser_is_one_line(tmp_path):
    root = _project(tmp_path)
    # 200000 terms of one sum: ast.parse raises RecursionError, not SyntaxError.
    (root / "kernels" / "k.py").write_text(KERNEL + "\nDEEP = " + "+".join(["1"] * 200000) + "\n")
    p = cli("check", cwd=root)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "RecursionError" not in p.stderr, p.stderr
    assert any(ln.endswith("kernels/k.py:1: case 'a': the kernel file nests an expression too deeply for Python "
                           "to read it") for ln in p.stdout.splitlines()), p.stdout


# --- secrets on a traced command line ---------------------------------------------------------------

@pytest.mark.parametrize("option, secret", [
    ("--api-key", True), ("--api_key", True), ("--apikey", True), ("--API-KEY", True), ("--token", True),
    ("--hf-token", True), ("--auth-token", True), ("--secret", True), ("--client-secret", True),
    ("--password", True), ("--db_password", True), ("--passwd", True), ("--pwd", True),
    ("--access-key", True), ("--aws_access_key", True), ("--private-key", True), ("--credentials", True),
    ("--credential", True), ("--cookie", True), ("--session.cookie", True),
    ("--sort-key", False), ("--key", False), ("--author", False), ("--auth", False), ("--auth-method", False),
    ("--tokenizer", False), ("--size", False), ("--keys", False), ("--primary-key", False),
    ("--accesskey", True), ("--privatekey", True), ("-password", True),
    ("--max-tokens", False), ("--num_tokens", False), ("--max-new-tokens", False),
])
def test_which_options_say_secret(option, secret):
    assert is_secret_option(option) is secret


def test_both_option_forms_lose_their_value_and_nothing_else_does():
    argv = ["python", "p.py", "--api-key", "zq9X7mK2pL4vR8nT1wY6", "--token=abc", "--sort-key", "name",
            "--author", "me", "--password", "--verbose", "--cookie=", "--pwd", "hunter2", "x"]
    out, cut = redact_argv(argv)
    assert out == ["python", "p.py", "--api-key", MARKER, f"--token={MARKER}", "--sort-key", "name", "--author",
                   "me", "--password", "--verbose", "--cookie=", "--pwd", MARKER, "x"]
    assert cut == [("--api-key", "zq9X7mK2pL4vR8nT1wY6"), ("--token", "abc"), ("--pwd", "hunter2")]
    # one-dash forms, compound names, and environment assignments before the program
    out, cut = redact_argv(["env", "GITHUB_TOKEN=envVALgh123456", "SORT=name", "python", "p.py", "-password",
                            "singleDashPW1", "-token=singleEqTok2", "--accesskey", "akCompound3", "--max-tokens", "256"])
    assert out == ["env", f"GITHUB_TOKEN={MARKER}", "SORT=name", "python", "p.py", "-password", MARKER,
                   f"-token={MARKER}", "--accesskey", MARKER, "--max-tokens", "256"]
    assert [v for _, v in cut] == ["envVALgh123456", "singleDashPW1", "singleEqTok2", "akCompound3"]
    # the value as a program prints its argv (repr: backslashes doubled) is cut too
    tail = str(["p.py", "--password", 'Pa\\ss"w0rdQ9']) + ' {"password": "Pa\\\\ss\\"w0rdQ9"}'
    assert "w0rdQ9" not in cut_values(tail, ['Pa\\ss"w0rdQ9']), cut_values(tail, ['Pa\\ss"w0rdQ9'])
    # a short value is cut where it stands as a word, never out of other words
    assert cut_values("pwd hunter2; abc; abcdef; hunter2x", ["hunter2", "abc"]) == \
        f"pwd {MARKER}; {MARKER}; abcdef; hunter2x"


def _trace_capture(tmp: Path, command: list, stderr_tail: str) -> Path:
    """A capture as `trace` leaves it for the writer: the fake capture plus trace/trace.json."""
    from tests.helpers.fake_capture import make_capture

    cap = make_capture(tmp / "capture")
    (cap / "trace").mkdir()
    (cap / "trace" / "trace.json").write_text(json.dumps({"format": 1, "command": command, "exit_code": 1,
                                                          "stderr_tail": stderr_tail, "tensor_files": [],
                                                          "cases": [], "missed": []}))
    return cap


@pytest.mark.parametrize("share", [False, True])
def test_bundle_cuts_a_traced_commands_secrets_from_every_member(tmp_path, share):
    """`reprokit bundle` of a capture whose trace.json holds a secret option (an older trace, a
    hand-made capture): the value leaves no member, and the manifest names the option."""
    value = "zq9X7mK2pL4vR8nT1wY6"
    cap = _trace_capture(tmp_path, ["python", "p.py", f"--db-password={value}", "--sort-key", "k"],
                         f"error: login with {value} refused\n")
    (cap / "logs" / "program.log").write_text(f"argv had {value}\n")
    p = cli("bundle", cap, "--out", tmp_path / "out", *(["--share"] if share else []), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    (path,) = (tmp_path / "out").glob("*.tgz")
    assert verify(path) == []
    b = open_bundle(path)
    for rel in b.data:
        assert value.encode() not in b.read(rel), rel
    doc = json.loads(b.read("trace/trace.json"))
    assert doc["command"] == ["python", "p.py", f"--db-password={MARKER}", "--sort-key", "k"]
    assert doc["redacted_options"] == ["--db-password"] and MARKER in doc["stderr_tail"]
    assert b.manifest["redaction"]["options"] == ["--db-password"]
    assert "--db-password" not in b.manifest["redaction"]["variables"]


# --- binary members and kept tensors --------------------------------------------------------------------

def _x(text: str) -> bytes:
    return b"X" + len(text.encode()).to_bytes(4, "little") + text.encode()


def _ints(xs) -> bytes:
    return b"(" + b"".join(b"J" + x.to_bytes(4, "little") for x in xs) + b"t"


def _pt(tensors: dict, *, call: tuple | None = None) -> bytes:
    """A tensor file as torch.save (zip format) writes one, made without torch, opcode by opcode as
    torch writes it (GLOBAL, BINPERSID, REDUCE): {name: (storage class, element size, shape,
    strides, data)}. call: (module, name, argument) for a hostile pickle that calls it instead."""
    if call is not None:
        raw = b"\x80\x02c" + f"{call[0]}\n{call[1]}\n".encode() + _x(call[2]) + b"\x85R."
    else:
        ops = [b"\x80\x02}("]
        for i, (name, (storage, size, shape, strides, data)) in enumerate(sorted(tensors.items())):
            ops += [_x(name), b"ctorch._utils\n_rebuild_tensor_v2\n(",
                    b"(" + _x("storage") + f"ctorch\n{storage}\n".encode() + _x(str(i)) + _x("cpu")
                    + b"J" + (len(data) // size).to_bytes(4, "little") + b"tQ",
                    b"K\x00" + _ints(shape) + _ints(strides), b"\x89ccollections\nOrderedDict\n)RtR"]
        raw = b"".join(ops) + b"u."
    body = io.BytesIO()
    with zipfile.ZipFile(body, "w", zipfile.ZIP_STORED) as z:
        z.writestr("0001.inputs/data.pkl", raw)
        z.writestr("0001.inputs/byteorder", "little")
        for i, (_, (_, _, _, _, data)) in enumerate(sorted(tensors.items())):
            z.writestr(f"0001.inputs/data/{i}", data)
        z.writestr("0001.inputs/version", "3\n")
    return body.getvalue()


def _with_tensors(tmp: Path, data: bytes, name: str = "trace/tensors/0001.inputs.pt",
                  recorded: dict | None = None) -> Path:
    """A valid bundle resealed with a tensor file and a traced case 1 whose x_ptr is uint8[64]
    (or `recorded`)."""
    src = make_bundle(tmp)
    x_ptr = recorded or {"tensor": [64], "dtype": "uint8", "strides": [1], "align": 16}

    def edit(files):
        files[name] = data

        def traced(plan):
            plan["cases"][0]["trace"] = {"n": 1}
            plan["cases"][0]["call"] = {"args": {"x_ptr": x_ptr}, "grid": [1], "options": {}}
        return edit_json(files, "plan.json", traced)

    return reseal(src, tmp / "sealed.tgz", edit)


def test_a_sound_tensor_file_verifies(tmp_path):
    data = _pt({"x_ptr": ("ByteStorage", 1, [64], [1], bytes(range(64)))})
    tensors, sizes = tensorfile.read(data)
    assert tensors["x_ptr"].shape == (64,) and tensors["x_ptr"].dtype == "uint8" and sizes == {"0": 64}
    path = _with_tensors(tmp_path, data)
    assert not [p for p in verify(path) if "trace/tensors" in p]


@pytest.mark.parametrize("label, damage, says", [
    ("flipped byte", lambda d: d.replace(bytes(range(64)), bytes([1]) + bytes(range(1, 64))), "fails its CRC"),
    ("truncated", lambda d: d[: len(d) // 2], "damaged or not a tensor file"),
    ("not a zip", lambda d: b"\x00" * 300, "damaged or not a tensor file"),
])
def test_a_damaged_tensor_file_is_exit_1(tmp_path, label, damage, says):
    path = _with_tensors(tmp_path, damage(_pt({"x_ptr": ("ByteStorage", 1, [64], [1], bytes(range(64)))})))
    p = cli("verify", path, cwd=tmp_path)
    assert p.returncode == 1, p.stdout + p.stderr
    assert any(ln.startswith("trace/tensors/0001.inputs.pt: ") and says in ln for ln in p.stdout.splitlines()), p.stdout


def test_a_tensor_file_that_calls_code_is_refused_without_running_it(tmp_path):
    marker = tmp_path / "pwned"
    data = _pt({}, call=("os", "system", f"touch {marker}"))
    path = _with_tensors(tmp_path, data)
    p = cli("verify", path, cwd=tmp_path)
    assert p.returncode == 1 and not marker.exists()
    assert "names os.system, which no tensor file needs" in p.stdout, p.stdout


def test_a_tensor_unlike_the_recorded_call_is_exit_1(tmp_path):
    data = _pt({"x_ptr": ("FloatStorage", 4, [16], [1], bytes(64))})    # float32[16], the plan says uint8[64]
    p = cli("verify", _with_tensors(tmp_path, data), cwd=tmp_path)
    assert p.returncode == 1
    assert "trace/tensors/0001.inputs.pt: x_ptr: float32[16] strides [1], but the trace recorded uint8[64] " \
           "strides [1]" in p.stdout, p.stdout


def test_a_contiguous_copy_of_a_recorded_view_verifies(tmp_path):
    """torch copies a view that is not dense (a slice of a wider row) contiguously: sound."""
    view = {"tensor": [8, 8], "dtype": "uint8", "strides": [16, 1], "align": 16}
    sound = _pt({"x_ptr": ("ByteStorage", 1, [8, 8], [8, 1], bytes(64))})
    assert not [p for p in verify(_with_tensors(tmp_path / "a", sound, recorded=view)) if "trace/tensors" in p]
    odd = _pt({"x_ptr": ("ByteStorage", 1, [8, 8], [1, 8], bytes(64))})     # neither recorded nor contiguous
    assert [p for p in verify(_with_tensors(tmp_path / "b", odd, recorded=view)) if "trace/tensors" in p] == [
        "trace/tensors/0001.inputs.pt: x_ptr: uint8[8, 8] strides [1, 8], but the trace recorded uint8[8, 8] "
        "strides [16, 1]"]


def test_a_binary_member_is_packed_byte_exact_under_share(tmp_path, monkeypatch):
    """A short user name that occurs by chance in a binary member: --share leaves the member's
    bytes alone and lists it; the text members lose the name."""
    monkeypatch.setenv("USER", "amy")
    from tests.helpers.fake_capture import make_capture

    cap = make_capture(tmp_path / "capture", harness_log_extra="06:00:05 user amy\n")
    cubin = cap / "cases/tensor_descriptor.p0/kernel.cubin"
    cubin.write_bytes(cubin.read_bytes()[:64] + b"\x00amy\x00" + cubin.read_bytes()[69:])
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions
    from tests.helpers.bundle_tools import ORIGIN, members

    path = write_bundle(cap, ORIGIN, BundleOptions(tmp_path / "out", share=True, environ={"USER": "amy"}))
    _, files = members(path)
    assert files["cases/tensor_descriptor.p0/kernel.cubin"] == cubin.read_bytes()
    assert b"amy" not in files["logs/harness.log"]
    assert "cases/tensor_descriptor.p0/kernel.cubin" in open_bundle(path).manifest["share"]["binary_files"]


# --- a malformed trace record in the GPU replay's pre-check ------------------------------------------

@pytest.mark.parametrize("text", ["[1, 2]", "not json {", '{"tensor_files": 7}'])
def test_a_malformed_trace_record_is_one_line_in_the_replay_pre_check(tmp_path, text):
    src = make_bundle(tmp_path)

    def edit(files):
        files["trace/trace.json"] = text.encode()
        return files

    sealed = reseal(src, tmp_path / "sealed.tgz", edit)
    # verify judges the trace's record as it judges plan.json (schemas/trace.schema.json): exit 1,
    # one line per problem, each naming the member
    v = cli("verify", str(sealed), cwd=tmp_path)
    assert v.returncode == 1 and "Traceback" not in v.stderr, v.stdout + v.stderr
    said = [ln for ln in (v.stdout + v.stderr).splitlines() if "trace/trace.json" in ln]
    assert said and all(ln.count("trace/trace.json") == 1 for ln in said), v.stdout + v.stderr
    # and every verb that opens it (show, replay, reduce) refuses it in one line before reading it
    with pytest.raises(BundleInvalid) as e:
        open_bundle(sealed)
    assert "trace/trace.json" in str(e.value) and "\n" not in str(e.value)
    s = cli("show", str(sealed), cwd=tmp_path)
    lines = s.stderr.strip().splitlines()
    assert s.returncode != 0 and "Traceback" not in s.stderr and lines, s.stderr
    assert all("trace/trace.json" in ln for ln in lines), s.stderr


# --- one set of limits ----------------------------------------------------------------------------

def test_trace_keeps_what_the_reader_reads_back():
    assert reader.DEFAULT_MAX_MEMBER_BYTES == limits.MAX_MEMBER_BYTES
    assert reader.DEFAULT_MAX_BUNDLE_BYTES == limits.MAX_BUNDLE_BYTES
    for env in ({}, {"REPROKIT_MAX_MEMBER_BYTES": "100K", "REPROKIT_MAX_BUNDLE_BYTES": "1M"}):
        member, bundle = limits.reader_limits(env)
        lim = reader.Limits.from_env(environ=env)
        assert (member, bundle) == (lim.max_member_bytes, lim.max_bundle_bytes)
        for mode in ("small", "all"):
            each, per_file, whole = limits.tensor_caps(mode, env)
            assert each <= per_file < member and whole < bundle
