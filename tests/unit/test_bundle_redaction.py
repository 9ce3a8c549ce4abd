"""Nothing secret leaves in a bundle, whatever its shape or wherever it landed in the capture;
`--share` also removes who and where it ran."""

from __future__ import annotations

import json
import socket

import pytest

from reprokit.bundle.reader import open_bundle, verify
from reprokit.common.redact import MARKER, is_secret_name, looks_secret_value, redact_env
from tests.helpers.bundle_tools import decompressed, make_bundle, members

PEM_BODY = ["MIIEowIBAAKCAQEAvq3yTn8QpFakeKeyMaterialLine1AbCdEfGhIjKlMnOpQr",
            "StUvWxYz0123456789FakeKeyMaterialLine2+/AbCdEfGhIjKlMnOpQrStUv",
            "WxYzFakeKeyMaterialLine3ZZZZ0123456789abcdefABCDEF=="]
PEM = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(PEM_BODY) + "\n-----END RSA PRIVATE KEY-----\n"
GHP = "ghp_" + "R4nd0mT0kenV4lue1234567890abcdEFGHIJ"
SECRETS = {
    "FOO_TOKEN": "tok-3f9a8b7c6d5e4f30a1b2",                                   # secret by name
    "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "DB_PASSWORD": "correct-Horse-battery-9",
    "DATABASE_URL": "postgres://admin:s3cr3tPassw0rd@db.internal:5432/results",  # user:password in a URL
    "DEPLOY_SIGNING": PEM,                                                       # private key, innocent name
    "INNOCENT_SETTING": GHP,                                                     # token shape, innocent name
    "SESSION_COOKIE": "sid=9a8b7c6d5e4f3a2b1c0d",
}
# What must not appear anywhere: whole values, and the telling parts of the multi-line one.
NEEDLES = [v for v in SECRETS.values() if "\n" not in v] + PEM_BODY + ["s3cr3tPassw0rd", "hostonly-5e4f3a2b1c"]


@pytest.fixture(scope="module")
def secret_bundle(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("HOST_ONLY_TOKEN", "hostonly-5e4f3a2b1c")     # on the host, never in env.json
    tmp = tmp_path_factory.mktemp("secrets")
    leaks = (
        f"06:00:01 env dump: {json.dumps(SECRETS)}\n"
        f"06:00:01 env repr: {SECRETS!r}\n"
        f"06:00:02 pip index https://admin:s3cr3tPassw0rd@db.internal/simple\n"
        f"06:00:02 token in use {GHP} and host token hostonly-5e4f3a2b1c\n"
        f"06:00:03 key follows\n{PEM}"
    )
    try:
        path = make_bundle(tmp, env_vars=SECRETS, harness_log_extra=leaks)
    finally:
        mp.undo()
    cap = tmp / "capture"
    return path, cap


def test_no_secret_byte_survives_anywhere(secret_bundle):
    path, cap = secret_bundle
    # The planted values really were in the capture, in env.json and in the log.
    assert GHP in (cap / "env.json").read_text() and "s3cr3tPassw0rd" in (cap / "logs/harness.log").read_text()
    blob = decompressed(path) + path.read_bytes()
    for needle in NEEDLES:
        assert needle.encode() not in blob, needle
        assert json.dumps(needle)[1:-1].encode() not in blob, needle
    assert b"PRIVATE KEY" not in blob.replace(b"-----BEGIN RSA PRIVATE KEY-----", b"")  # no key body left


def test_redacted_names_listed_never_values(secret_bundle):
    path, _ = secret_bundle
    assert verify(path) == []
    b = open_bundle(path)
    red = b.manifest["redaction"]
    assert set(SECRETS) | {"HOST_ONLY_TOKEN"} <= set(red["variables"])
    assert "logs/harness.log" in red["files"]
    assert all(b.env["env_vars"][k] == MARKER for k in SECRETS)
    assert set(SECRETS) <= set(b.env["redacted"])
    assert b.env["env_vars"]["CUDA_VISIBLE_DEVICES"] == "0"            # ordinary values stay
    log = b.read_text("logs/harness.log")
    assert "postgres://admin:" not in log and "https://<redacted>@db.internal/simple" in log


def test_a_secret_inside_a_binary_file_stops_the_bundle(tmp_path, monkeypatch):
    """A binary file is never rewritten (filler can break an ELF or an archive): a secret value in
    one means no bundle at all, one line naming the file, and no partial file left behind."""
    monkeypatch.setenv("HOST_TOKEN", "Zq8Pw3Lm5Nx7Rv2Ts4")
    cap_kwargs = dict(env_vars={"GH_TOKEN": "Zq8Pw3Lm5Nx7Rv2Ts4"})
    path = make_bundle(tmp_path, **cap_kwargs)
    cubin = tmp_path / "capture/cases/tensor_descriptor.p0/kernel.cubin"
    data = cubin.read_bytes()
    _, files = members(path)
    assert files["cases/tensor_descriptor.p0/kernel.cubin"] == data      # byte-exact
    cubin.write_bytes(data[:100] + b"Zq8Pw3Lm5Nx7Rv2Ts4" + data[118:])
    from reprokit.bundle.writer import write_bundle
    from reprokit.errors import CaptureInvalid
    from reprokit.options import BundleOptions
    from tests.helpers.bundle_tools import ORIGIN
    with pytest.raises(CaptureInvalid, match=r"cases/tensor_descriptor.p0/kernel.cubin: a binary file holds the "
                                             r"value of .*GH_TOKEN"):
        write_bundle(tmp_path / "capture", ORIGIN, BundleOptions(tmp_path / "again"))
    assert not (tmp_path / "again").exists() or not any((tmp_path / "again").iterdir())


SHARE = {"hostname": "gpu-node-17.lab.example", "user": "kowalski", "home": "/home/kowalski",
         "uuid": "GPU-8f3e2d1c-aaaa-bbbb-cccc-0123456789ab", "serial": "1652823049871"}


def _share_bundle(tmp_path, monkeypatch, share: bool):
    monkeypatch.setenv("USER", SHARE["user"])
    monkeypatch.setenv("LOGNAME", SHARE["user"])
    monkeypatch.setenv("HOME", SHARE["home"])
    monkeypatch.setattr(socket, "gethostname", lambda: SHARE["hostname"])
    return make_bundle(tmp_path, share=share, hostname="c0ffee123456", home=SHARE["home"],
                       gpu_uuid=SHARE["uuid"], gpu_serial=SHARE["serial"],
                       harness_log_extra=f"06:00:05 on {SHARE['hostname']} (gpu-node-17) user {SHARE['user']}\n"
                                         f"06:00:05 GPU-11112222-3333-4444-5555-666677778888 also seen\n")


def test_share_mode_removes_host_identity_everywhere(tmp_path, monkeypatch):
    plain = _share_bundle(tmp_path / "plain", monkeypatch, share=False)
    shared = _share_bundle(tmp_path / "shared", monkeypatch, share=True)
    identity = [SHARE["hostname"], "gpu-node-17", SHARE["user"], SHARE["home"], SHARE["uuid"], SHARE["serial"],
                "c0ffee123456", "GPU-11112222-3333-4444-5555-666677778888"]
    before = decompressed(plain)
    assert all(x.encode() in before for x in identity)      # the test plants what it then looks for
    _, after = members(shared)
    b = open_bundle(shared)
    share = b.manifest["share"]
    # Binary files are listed, never rewritten: byte-exact as the capture holds them.
    assert "cases/tensor_descriptor.p0/kernel.cubin" in share["binary_files"]
    for rel in share["binary_files"]:
        assert after[rel] == (tmp_path / "shared/capture" / rel).read_bytes()
    for rel, data in after.items():
        if rel not in share["binary_files"]:
            for x in identity:
                assert x.encode() not in data, (rel, x)
    assert verify(shared) == []
    assert share["applied"] is True
    assert set(share["classes"]) == {"hostname", "user", "home", "gpu-uuid", "gpu-serial"}
    assert {"cases/tensor_descriptor.p0/kernel.ttgir", "cases/tensor_descriptor.p0/kernel.ptx",
            "logs/harness.log", "env.json"} <= set(share["files"])
    assert "<home>/src/kernels/copy_tensor_descriptor.py" in b.read_text("cases/tensor_descriptor.p0/kernel.ttgir")
    assert b.env["os"]["hostname"] == "<host>"
    # Words the bundle needs are never taken for host names.
    assert b.manifest["profile"]["key"] == "h100" and b.results["cases"][0]["id"] == "block_ptr.p0"
    assert "Shared mode" in b.read_text("README.md")


@pytest.mark.parametrize("name, secret", [
    ("HF_TOKEN", True), ("GITHUB_TOKEN", True), ("AWS_SECRET_ACCESS_KEY", True), ("DB_PASSWORD", True),
    ("MYSQL_PASSWD", True), ("DB_PASS", True), ("OPENAI_API_KEY", True), ("APIKEY", True), ("NPM_AUTH", True),
    ("AUTHORIZATION", True), ("SESSION_COOKIE", True), ("GOOGLE_CREDENTIALS", True), ("ssh_private", True),
    ("PATH", False), ("PWD", False), ("OLDPWD", False), ("HOME", False), ("TRITON_CACHE_DIR", False),
    ("CUDA_VISIBLE_DEVICES", False), ("TOKENIZERS_PARALLELISM", False), ("PYTHONPATH", False),
    ("TRITON_KERNEL_DUMP", False), ("LD_LIBRARY_PATH", False),
])
def test_secret_names(name, secret):
    assert is_secret_name(name) is secret


@pytest.mark.parametrize("value, secret", [
    (PEM, True), ("https://user:pa55@example.com/x", True), (GHP, True), ("github_pat_" + "a1B2" * 10, True),
    ("AKIAIOSFODNN7EXAMPLE", True), ("xoxb-1234567890-abcdefghij", True), ("hf_" + "aB3" * 12, True),
    ("Bearer abcdefghijklmnop1234", True), ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.c2lnbmF0dXJlLXZhbHVl", True),
    ("https://example.com/simple", False), ("/home/alice/.triton/cache", False), ("0", False), ("sm_90a", False),
    ("cp.async.bulk.tensor.2d.shared::cluster.global", False), ("user@example.com", False),
])
def test_secret_values(value, secret):
    assert looks_secret_value(value) is secret


def test_redact_env_is_idempotent():
    env = {"A": "1", "FOO_TOKEN": "x", "URL": "https://u:p@h/", "DONE": MARKER}
    once, names = redact_env(env)
    assert once == {"A": "1", "FOO_TOKEN": MARKER, "URL": MARKER, "DONE": MARKER}
    assert names == ["DONE", "FOO_TOKEN", "URL"]
    assert redact_env(once) == (once, names)


def test_share_mode_short_host_name_only_where_it_is_a_whole_value(tmp_path, monkeypatch):
    monkeypatch.setattr(socket, "gethostname", lambda: "vm")
    path = make_bundle(tmp_path, share=True, hostname="vm")
    b = open_bundle(path)
    assert b.env["os"]["hostname"] == "<host>" and "hostname" in b.manifest["share"]["classes"]
    assert "LLVMDialectModule" in b.read_text("cases/tensor_descriptor.p0/kernel.llir")   # text left whole


@pytest.mark.parametrize("homes", [
    ("/tmp/x/home", "/home/cache"),            # equal lengths: set order used to pick which ran first
    ("/home/cache", "/tmp/x/home"),
    ("/tmp/x/home", "/home/cache", "/tmp/x"),
])
def test_overlapping_homes_leave_no_piece_of_either_whatever_their_order(homes):
    from reprokit.bundle.redact import HostFacts, Scrubber

    text = b'{"dir": "/tmp/x/home/cache/triton", "other": "/home/cache/.local"}'
    scrubber = Scrubber.for_capture({}, share=True, environ={}, facts=HostFacts(homes=frozenset(homes)))
    out, outcome = scrubber.scrub(text, binary=False, shapes=False)
    assert out == b'{"dir": "<home>/cache/triton", "other": "<home>/.local"}'
    assert outcome.classes == {"home"}
    binary, _ = scrubber.scrub(text, binary=True, shapes=False)
    assert len(binary) == len(text) and b"/tmp/x" not in binary and b"/home/cache" not in binary


def test_a_home_outside_home_is_not_taken_apart_by_the_home_pattern(tmp_path):
    from reprokit.bundle.redact import HostFacts

    env_doc = {"knobs": {"cache": {"home_dir": "/tmp/x/home/", "dir": "/tmp/x/home/.triton/cache"}},
               "env_vars": {"PATH": "/tmp/x/home/.local/bin:/home/alice/bin"}}
    facts = HostFacts.gather(env_doc, {"HOME": "/srv/ci/home"})
    assert {"/tmp/x/home", "/srv/ci/home", "/home/alice"} <= facts.homes
    # Triton's own home (3.4+ knobs) names the stack's HOME; /home/.triton is no home, .triton no user.
    assert not any(h.startswith("/home/.") for h in facts.homes) and ".triton" not in facts.users
    assert "alice" in facts.users


def test_a_stack_image_home_is_a_home_but_its_user_is_no_identity():
    from reprokit.bundle.redact import HostFacts, Scrubber

    env_doc = {"knobs": {"cache": {"home_dir": "/home/stack/"}}, "os": {"hostname": "reprokit-container"}}
    scrubber = Scrubber.for_capture(env_doc, share=True, environ={"HOME": "/home/alice", "USER": "alice"},
                                    facts=HostFacts.gather(env_doc, {"HOME": "/home/alice", "USER": "alice"}))
    out, _ = scrubber.scrub(b"/home/stack/.triton/cache: the stack ran as reprokit for alice", binary=False,
                            shapes=False)
    assert out == b"<home>/.triton/cache: the stack ran as reprokit for <user>"


def test_a_user_named_like_a_word_of_the_code_leaves_the_code_intact(tmp_path, monkeypatch):
    """USER=triton (or cuda, i32, nvvm): cut as a word, `--share` rewrote `import triton` in every
    kernel, the IR and the reproducers, and the bundle still verified. Such a name is cut only
    where it names someone (`triton@host`, env.json's values, home paths), and the manifest says so."""
    monkeypatch.setenv("USER", "triton")
    monkeypatch.setenv("LOGNAME", "triton")
    monkeypatch.setenv("HOME", "/home/triton")
    monkeypatch.setattr(socket, "gethostname", lambda: "buildhost-3")
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions
    from tests.helpers.bundle_tools import ORIGIN
    from tests.helpers.fake_capture import make_capture

    cap = make_capture(tmp_path / "capture", home="/home/triton", hostname="buildhost-3", env_vars={"USER": "triton"},
                       harness_log_extra="06:00:05 ssh triton@buildhost-3 ran it in /home/triton/src\n")
    # as the harness writes one for every case: the language's own words (`import triton`)
    (cap / "cases/tensor_descriptor.p0/reproducer.py").write_text("import triton\nimport triton.language as tl\n")
    shared = write_bundle(cap, ORIGIN, BundleOptions(tmp_path / "bundles", share=True))
    _, after = members(shared)
    kernels = [rel for rel in after if rel.startswith("kernels/")]
    assert kernels and all(after[rel] == (cap / rel).read_bytes() for rel in kernels)
    assert any(b"import triton" in after[rel] for rel in kernels)
    log = after["logs/harness.log"].decode()
    assert "ssh <user>@<host> ran it in <home>/src" in log, log
    b = open_bundle(shared)
    assert b.env["env_vars"]["USER"] == "<user>"
    assert b.manifest["share"]["as_words"] == ["user"]
    assert verify(shared) == []
    # a name that is no word of the code is still cut as a word (the test above), and a bundle
    # without such a name says nothing of it
    assert "as_words" not in open_bundle(_share_bundle(tmp_path / "plain", monkeypatch, share=True)).manifest["share"]


def test_a_user_name_in_the_users_own_comment_is_still_cut(tmp_path, monkeypatch):
    """Only the words of the code's languages (reprokit's own templates, the IR) keep a name out
    of the word rule: a kernel comment that names its user loses the name under --share."""
    monkeypatch.setenv("USER", "kowalski")
    monkeypatch.setenv("LOGNAME", "kowalski")
    from reprokit.bundle.writer import write_bundle
    from reprokit.options import BundleOptions
    from tests.helpers.bundle_tools import ORIGIN
    from tests.helpers.fake_capture import make_capture

    cap = make_capture(tmp_path / "capture")
    kernel = cap / "kernels" / "copy_block_ptr.py"
    kernel.write_text("# tuned by kowalski\n" + kernel.read_text())
    (cap / "cases/tensor_descriptor.p0/reproducer.py").write_text("# tuned by kowalski\nimport triton\n")
    shared = write_bundle(cap, ORIGIN, BundleOptions(tmp_path / "bundles", share=True))
    _, after = members(shared)
    assert after["kernels/copy_block_ptr.py"].startswith(b"# tuned by <user>\n")
    assert b"kowalski" not in after["cases/tensor_descriptor.p0/reproducer.py"]
    assert "as_words" not in open_bundle(shared).manifest["share"]
