"""Packing a capture folder into a bundle: redacted, schema-checked, checksummed, byte-reproducible.

One pass over the files: each is read once, scrubbed, hashed and compressed. Payload entries go
in sorted path order; README.md, manifest.json and SHA256SUMS, which describe them, come last.
Every header is normalised (mtime = the bundle's epoch, uid/gid 0, no owner names, 0644/0755)
and the gzip header carries neither a time nor a name, so the same capture, epoch and reprokit
give the same bytes. The file appears under its final name only once complete.
"""

from __future__ import annotations

import errno
import gzip
import hashlib
import io
import json
import os
import re
import tarfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Mapping

from reprokit import __version__, locks
from reprokit.bundle import readme, schemas
from reprokit.bundle.redact import SHARE_CLASSES, HostFacts, Outcome, Scrubber, content_words, recorded_homes
from reprokit.bundle.schemas import TRACE_DOC
from reprokit.bundle.templates import template_words, templates_sha256
from reprokit.common.redact import MARKER, cut_values, redact_argv, redact_env
from reprokit.errors import CaptureInvalid, FileSystemError, OutputExists, UsageError
from reprokit.options import COMPRESS_LEVEL, BundleOptions, Origin  # noqa: F401 (COMPRESS_LEVEL: benchmarks)

FORMAT = 1
DOCS = ("plan.json", "results.json", "env.json")
GENERATED = ("README.md", "manifest.json", "SHA256SUMS")
_JSON_ROLES = ("plan", "results", "env", "metadata")
_IR_SUFFIXES = (".ttir", ".ttgir", ".llir", ".ptx", ".sass")
# Compiler output: secret *values* are still cut from it, secret *shapes* are not searched.
_NO_SHAPE_ROLES = ("ir", "cubin")
# Tensors a trace kept (--tensors): the user's own data, which they opted into sending. Packed
# byte-exact and never scanned: random float bytes hold any short name by chance, and a rewrite
# would break the archive (docs/trace.md).
TENSORS = "trace/tensors/"
_SLUG = re.compile(r"[^A-Za-z0-9._+-]+")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_COPY_BUFSIZE = 1 << 20


@dataclass(frozen=True)
class Entry:
    """One file of the capture as it will sit in the bundle."""

    path: str          # relative to the bundle root, '/'-separated
    source: Path
    role: str


def role_of(path: str) -> str:
    """The manifest role of a file, from its place in the capture layout."""
    top = {"plan.json": "plan", "results.json": "results", "env.json": "env", "summary.tsv": "summary",
           "README.md": "readme", "sweep.json": "answers"}
    if path in top:
        return top[path]
    head, _, name = path.partition("/")
    if head == "kernels":
        return "kernel-source"
    if head == "logs":
        return "log"
    if head == "cases":
        base = path.rsplit("/", 1)[-1]
        if base.endswith(_IR_SUFFIXES):
            return "ir"
        if base.endswith(".cubin"):
            return "cubin"
        if base == "metadata.json":
            return "metadata"
        if base.endswith(".log"):
            return "log"
        if base.startswith("reproducer"):
            return "reproducer"
    return "other"


def collect(capture_dir: Path) -> tuple[list[Entry], list[str]]:
    """Every regular file of the capture (sorted) and every folder; links and devices refused."""
    capture_dir = Path(capture_dir)
    if not capture_dir.is_dir():
        raise UsageError(f"{capture_dir}: not a capture folder (no such directory)")
    entries, dirs, problems = [], [], []
    for dirpath, dirnames, filenames in os.walk(capture_dir):
        rel_dir = Path(dirpath).relative_to(capture_dir).as_posix()
        for d in list(dirnames):
            rel = d if rel_dir == "." else f"{rel_dir}/{d}"
            if os.path.islink(os.path.join(dirpath, d)):
                problems.append(f"{rel}: a symbolic link; bundles hold regular files and folders only")
                dirnames.remove(d)
            else:
                dirs.append(rel)
        for f in filenames:
            rel = f if rel_dir == "." else f"{rel_dir}/{f}"
            full = Path(dirpath, f)
            if rel == locks.MARKER:
                continue  # says the folder is reprokit's (so --force may replace it); not a finding
            if any(ch in rel for ch in "\\\n\r\0"):
                problems.append(f"{rel!r}: file names with backslashes or line breaks cannot be listed in SHA256SUMS")
            elif full.is_symlink() or not full.is_file():
                problems.append(f"{rel}: not a regular file (link, device or FIFO); bundles hold regular files only")
            elif rel in GENERATED:
                problems.append(f"{rel}: the bundle writes this name itself; remove it from the capture")
            else:
                entries.append(Entry(rel, full, role_of(rel)))
    missing = [d for d in DOCS if not (capture_dir / d).is_file()]
    problems += [f"{d}: missing from the capture" for d in missing]
    if problems:
        raise CaptureInvalid(f"{capture_dir}: cannot be bundled: {problems[0]}", problems)
    return sorted(entries, key=lambda e: e.path), sorted(dirs)


def _load_json(path: Path, label: str):
    try:
        return json.loads(path.read_bytes())
    except (ValueError, RecursionError) as e:
        raise CaptureInvalid(f"{label}: not valid JSON: {e}") from None


def dump_json(doc) -> bytes:
    return (json.dumps(doc, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()


def _plain(d: object, what: str) -> dict:
    if not isinstance(d, Mapping):
        raise UsageError(f"{what} must be a mapping, not {type(d).__name__}")
    return json.loads(json.dumps(dict(d), default=str))


def parse_utc(text: str) -> int:
    """Seconds since the epoch of an ISO 8601 UTC time such as 2026-11-22T06:00:12Z."""
    t = text.strip().replace("Z", "+00:00")
    if "." in t:  # fromisoformat on 3.9/3.10 takes 3 or 6 fraction digits only
        head, _, rest = t.partition(".")
        digits = rest[:len(rest) - len(rest.lstrip("0123456789"))]
        t = head + rest[len(digits):]
    dt = datetime.fromisoformat(t)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp())


def bundle_epoch(results: dict, source_date_epoch: int | None = None) -> int:
    """The bundle's one time: the argument (SOURCE_DATE_EPOCH, at the edge), else when the capture finished."""
    if source_date_epoch is not None:
        epoch = source_date_epoch
    else:
        try:
            epoch = parse_utc(results["finished"])
        except (KeyError, TypeError, ValueError):
            raise CaptureInvalid("results.json: no usable 'finished' time to date the bundle "
                                 "(set SOURCE_DATE_EPOCH)") from None
    if not isinstance(epoch, int) or isinstance(epoch, bool) or not 0 <= epoch < 8 ** 11:
        raise UsageError(f"bundle time {epoch!r} is not a non-negative whole number of seconds that tar can hold")
    return epoch


def _slug(text: str) -> str:
    return _SLUG.sub("_", str(text)).strip("._-+") or "unknown"


def _tarinfo(name: str, epoch: int, size: int = 0, is_dir: bool = False) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type = tarfile.DIRTYPE if is_dir else tarfile.REGTYPE
    ti.mode = 0o755 if is_dir else 0o644
    ti.size = 0 if is_dir else size
    ti.mtime = epoch
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


class _Scrubbed:
    """Collects what the scrubbing did, per file, for the manifest (names and paths only)."""

    def __init__(self):
        self.variables: set[str] = set()
        self.secret_files: set[str] = set()
        self.share_classes: set[str] = set()
        self.share_files: set[str] = set()
        self.share_binary: set[str] = set()
        self.unscanned: set[str] = set()
        # classes whose name is also a word of the code, cut only where it names someone
        self.as_words: set[str] = set()

    def note(self, path: str, outcome: Outcome, binary: bool) -> None:
        self.variables |= outcome.variables
        if outcome.secret:
            self.secret_files.add(path)
        if outcome.classes:
            self.share_classes |= outcome.classes
            (self.share_binary if binary else self.share_files).add(path)


def _redact_env_doc(env) -> None:
    """Apply the secret-name check again to env.json's variables, whatever the harness did."""
    if isinstance(env, dict) and isinstance(env.get("env_vars"), dict):
        env["env_vars"], names = redact_env(env["env_vars"])
        if isinstance(env.get("redacted"), list):
            env["redacted"] = sorted(set(env["redacted"]) | set(names))


def _drop_board_identity(env) -> None:
    """--share: which board ran it is host identity (a maintainer's grid then says "board
    unknown"); how the board was set up (env.json's board.state) stays."""
    if isinstance(env, dict) and isinstance(env.get("board"), dict):
        env["board"]["identity"] = None


def _triton_home(env) -> None:
    """Triton's folders under the stack's HOME (its knobs: home_dir, and the cache, dump and
    override folders that default under it) as `<home>/...`, with or without --share: where
    HOME was is no fact about the compiler, and would pack one program's capture to other bytes
    under another HOME. (The scrubber has taken that HOME already, for what --share scrubs.)"""
    knobs = env.get("knobs") if isinstance(env, dict) else None
    if not isinstance(knobs, dict):
        return
    homes = sorted({h.rstrip("/") for h in recorded_homes({"knobs": knobs}) if len(h.rstrip("/")) > 1},
                   key=lambda h: (-len(h), h))
    for group in knobs.values():
        for key, value in (group.items() if isinstance(group, dict) else ()):
            home = next((h for h in homes if isinstance(value, str) and (value == h or value.startswith(h + "/"))),
                        None)
            if home is not None:
                group[key] = "<home>" + value[len(home):]


def _ir_texts(entries: list):
    """The bytes of the bundle's IR, one file at a time: what the compiler wrote, where a host or
    user name that is a word of its languages shows it (`i32`, `@llvm.nvvm`)."""
    for e in entries:
        if e.role == "ir":
            try:
                data = e.source.read_bytes()
            except OSError:
                continue
            if b"\0" not in data:
                yield data


def _keep_words(plan: dict, stack: dict, profile: dict, executor: dict) -> frozenset:
    words = {stack.get("name"), profile.get("key"), profile.get("name"), executor.get("name"), plan.get("suite")}
    for c in plan.get("cases", []) if isinstance(plan.get("cases"), list) else []:
        if isinstance(c, dict):
            words |= {c.get("id"), c.get("family"), c.get("control")}
    return frozenset(w for w in words if isinstance(w, str))


def _image_digest(stack: dict, executor: dict) -> str | None:
    """The image the stack ran in: a digest given as such, else its registry digest, else the
    engine's image id (the sha256 of its config, what a locally built image has)."""
    for where in (stack, executor):
        if isinstance(where.get("image_digest"), str) and where["image_digest"]:
            return where["image_digest"]
    repo = executor.get("image_repo_digests")
    if isinstance(repo, list) and repo and isinstance(repo[0], str):
        return repo[0]
    image_id = executor.get("image_id")
    return image_id if isinstance(image_id, str) and image_id.startswith("sha256:") else None


def write_bundle(capture_dir: Path, origin: Origin, options: BundleOptions | None = None) -> Path:
    """Pack `capture_dir` into options.out_dir/<stack>-<gpu>-<UTC time>-<short hash>.tgz; return its path.

    origin.stack: the stack's name and pins (image_digest too, where known); origin.profile: the
    GPU profile as GpuProfile.to_dict() gives it; origin.executor: {"name": ..., facts...};
    origin.mode: compile-only | gpu. options: share, parent, bundle time (see BundleOptions).
    Raises CaptureInvalid (a file or document is wrong) or UsageError (bad arguments).
    """
    options = options if options is not None else BundleOptions()
    capture_dir, out_dir = Path(capture_dir), Path(options.out_dir)
    mode, share, parent = origin.mode, options.share, options.parent
    if mode not in ("compile-only", "gpu"):
        raise UsageError(f"mode {mode!r} is not compile-only or gpu")
    if parent is not None and not _SHA256.match(parent):
        raise UsageError(f"parent {parent!r} is not a sha256 (64 lowercase hex digits)")
    stack, profile = _plain(origin.stack, "stack"), _plain(origin.profile, "profile")
    executor = _plain(origin.executor, "executor")
    executor.setdefault("name", executor.get("kind", "unknown"))
    digest = _image_digest(stack, executor)
    if digest:
        stack["image_digest"] = digest
    entries, dirs = collect(capture_dir)
    originals = {n: _load_json(capture_dir / n, n) for n in DOCS}
    docs = json.loads(json.dumps(originals))
    plan_raw = docs["plan.json"] if isinstance(docs["plan.json"], dict) else {}
    env_raw = docs["env.json"] if isinstance(docs["env.json"], dict) else None
    # Host identity and secret values are taken before env.json's variables are redacted.
    # A traced command's secret options (trace/trace.json, however old the trace that wrote it).
    traced = _traced_secrets(capture_dir)
    secret_options = {**{v: o for o, v in traced}, **options.secret_options}
    facts = HostFacts.gather(env_raw, options.environ, (docs["results.json"],)) if share else None
    words = content_words(facts, _ir_texts(entries), template_words()) if facts else frozenset()
    scrubber = Scrubber.for_capture(env_raw, share=share, environ=options.environ,
                                    keep=_keep_words(plan_raw, stack, profile, executor), also=(docs["results.json"],),
                                    extra=secret_options, facts=facts, words=words)
    _redact_env_doc(env_raw)
    if share:
        _drop_board_identity(env_raw)
    _triton_home(env_raw)
    log = _Scrubbed()
    if facts:
        log.as_words = {c for c, names in (("hostname", facts.hostnames), ("user", facts.users)) if names & words}
    doc_bytes = {}
    for n in DOCS:
        docs[n], outcome = scrubber.scrub_json(docs[n], env=n == "env.json")
        log.note(n, outcome, binary=False)
        doc_bytes[n] = dump_json(docs[n]) if docs[n] != originals[n] else (capture_dir / n).read_bytes()
    problems = [p for name in DOCS for p in schemas.problems(name, docs[name])]
    if (capture_dir / "sweep.json").is_file():  # a sweep's answers
        problems += schemas.problems("sweep.json", _load_json(capture_dir / "sweep.json", "sweep.json"))
    if (capture_dir / TRACE_DOC).is_file():  # a trace's record of its program, which verify judges
        problems += schemas.problems(TRACE_DOC, _load_json(capture_dir / TRACE_DOC, TRACE_DOC))
    plan, results, env = docs["plan.json"], docs["results.json"], docs["env.json"]
    if not problems:
        problems += schemas.consistency_problems(plan, results, {e.path for e in entries})
        if plan["mode"] != mode:
            problems.append(f"plan.json: mode is {plan['mode']}, but the bundle was asked for {mode}")
        if plan["profile"]["key"] != profile.get("key"):
            problems.append(f"plan.json: profile is {plan['profile']['key']}, but the bundle was asked for "
                            f"{profile.get('key')}")
    if problems:
        raise CaptureInvalid(f"{capture_dir}: cannot be bundled: {problems[0]}", problems)
    epoch = bundle_epoch(results, options.source_date_epoch)
    meta = {
        "stack": scrubber.scrub_json(stack)[0], "profile": scrubber.scrub_json(profile)[0],
        "executor": scrubber.scrub_json(executor)[0],
    }
    templates = templates_sha256()
    name = bundle_name(stack, profile, epoch, entries, doc_bytes, [meta, mode, share, parent, __version__, templates])
    head = {
        "format": FORMAT, "name": name, "reprokit": __version__, "templates_sha256": templates,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch)), "source_date_epoch": epoch,
        "mode": mode, "suite": plan["suite"], **meta, "parent": parent,
    }
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(out_dir, e, "cannot create the bundle folder") from None
    final = out_dir / f"{name}.tgz"
    locks.sweep(out_dir)
    with locks.hold(final, "bundle"), locks.temp(out_dir, f".{name}", "partial", is_dir=False) as tmp:
        # Whatever stops us (a read error, a full disk, a bug, a signal), the temp file goes.
        try:
            with open(tmp.path, "wb") as raw:
                _write_tar(raw, _Pack(name, epoch, options.compresslevel, entries, dirs, doc_bytes, head, share,
                                      plan, results, env, sorted(set(secret_options.values()))),
                           scrubber, log)
                raw.flush()
                os.fsync(raw.fileno())
        except OSError as e:
            raise FileSystemError.of(tmp.path, e, "cannot write the bundle") from None
        link_into_place(tmp.path, final)
    return final


def bundle_name(stack: dict, profile: dict, epoch: int, entries: list[Entry], doc_bytes: dict, facts: list) -> str:
    """<stack>-<gpu>-<UTC time>-<10 hex>: the hash covers every input byte (each file of the capture,
    the redacted documents) and every fact that shapes the output, so two different bundles never
    share a name, and the same capture packed again gets the same one."""
    h = hashlib.sha256(dump_json(facts))
    for e in entries:
        data = doc_bytes.get(e.path)
        digest = hashlib.sha256(data) if data is not None else _file_sha256(e)
        h.update(f"{digest.hexdigest()}  {e.path}\n".encode())
    return "-".join((_slug(stack.get("name", "stack")), _slug(profile.get("key", "gpu")),
                     time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(epoch)), h.hexdigest()[:10]))


def _file_sha256(entry: Entry):
    h = hashlib.sha256()
    try:
        with open(entry.source, "rb") as f:
            while chunk := f.read(_COPY_BUFSIZE):
                h.update(chunk)
    except OSError as e:
        raise FileSystemError.of(entry.source, e, "cannot read") from None
    return h


def link_into_place(tmp: Path, final: Path) -> None:
    """Put the finished file under its name, never over a different one: a link fails where a
    rename would silently replace. The same bytes already there (the same capture packed
    again) are fine; different bytes under the same name are refused."""
    os.chmod(tmp, 0o644)
    try:
        os.link(tmp, final)
        return
    except FileExistsError:
        pass
    except OSError as e:
        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP) or final.exists():
            raise FileSystemError.of(final, e, "cannot publish the bundle") from None
        os.replace(tmp, final)  # a file system without hard links: we hold the name's lock
        return
    if _sha256(final) != _sha256(tmp):
        raise OutputExists(f"{final} exists and holds a different bundle; it was not replaced "
                           "(move it away, or pack into another --out)")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(_COPY_BUFSIZE):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class _Pack:
    """What one bundle holds, worked out before a byte is written."""

    name: str
    epoch: int
    level: int
    entries: list
    dirs: list
    doc_bytes: dict
    head: dict         # the manifest's fields that do not depend on the files
    share: bool
    plan: dict
    results: dict
    env: dict
    options: list      # command-line options whose values were cut (trace/trace.json's command)


def _write_tar(raw, pack: _Pack, scrubber: Scrubber, log: _Scrubbed) -> None:
    name, epoch, doc_bytes, env = pack.name, pack.epoch, pack.doc_bytes, pack.env
    files = []
    with gzip.GzipFile(filename="", mode="wb", compresslevel=pack.level, fileobj=raw, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        setattr(tar, "copybufsize", _COPY_BUFSIZE)  # noqa: B010 - TarFile's own, not in its type stubs

        def add(rel: str, data: bytes, role: str | None) -> None:
            tar.addfile(_tarinfo(f"{name}/{rel}", epoch, len(data)), io.BytesIO(data))
            if role is not None:
                files.append({"path": rel, "size": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                              "role": role})

        tar.addfile(_tarinfo(name, epoch, is_dir=True))
        items = [(d, None) for d in pack.dirs] + [(e.path, e) for e in pack.entries]
        for rel, entry in sorted(items, key=lambda it: it[0]):
            if entry is None:
                tar.addfile(_tarinfo(f"{name}/{rel}", epoch, is_dir=True))
                continue
            if rel in doc_bytes:
                data = doc_bytes[rel]
            else:
                data = _read_scrubbed(entry, scrubber, log)
            add(rel, data, entry.role)
        manifest = dict(pack.head)
        manifest["redaction"] = {"marker": MARKER,
                                 "variables": sorted((log.variables | set(env.get("redacted", []))) - set(pack.options)),
                                 "files": sorted(log.secret_files)}
        # Said only where there is something to say: a bundle without a trace keeps its bytes.
        if pack.options:
            manifest["redaction"]["options"] = pack.options
        if log.unscanned:
            manifest["redaction"]["unscanned"] = sorted(log.unscanned)
        manifest["share"] = {"applied": pack.share, "classes": [c for c in SHARE_CLASSES if c in log.share_classes],
                             "files": sorted(log.share_files), "binary_files": sorted(log.share_binary)}
        if log.as_words:  # said only where it happened: other bundles keep their bytes
            manifest["share"]["as_words"] = sorted(log.as_words)
        add("README.md", readme.render(name, manifest=manifest, results=pack.results, env=env, plan=pack.plan).encode(), "readme")
        manifest["content_sha256"] = hashlib.sha256("".join(
            f"{f['sha256']}  {f['path']}\n" for f in files if f["role"] != "readme").encode()).hexdigest()
        manifest["files"] = sorted(files, key=lambda f: f["path"])
        problems = schemas.problems("manifest.json", manifest)
        if problems:  # a bug of ours, or stack/profile/executor facts of the wrong shape
            raise CaptureInvalid(f"the manifest for {name} breaks its schema: {problems[0]}", problems)
        manifest_bytes = dump_json(manifest)
        add("manifest.json", manifest_bytes, None)
        sums = sorted([(f["path"], f["sha256"]) for f in files]
                      + [("manifest.json", hashlib.sha256(manifest_bytes).hexdigest())])
        add("SHA256SUMS", "".join(f"{h}  {p}\n" for p, h in sums).encode(), None)


def _traced_secrets(capture_dir: Path) -> list:
    """[(option, value)] of the secret-saying options in trace/trace.json's command."""
    try:
        doc = json.loads((capture_dir / TRACE_DOC).read_bytes())
    except FileNotFoundError:
        return []
    except (OSError, ValueError, RecursionError):
        return []   # packed as any other file; the trace's own record of a broken program
    command = doc.get("command") if isinstance(doc, dict) else None
    if not isinstance(command, list) or not all(isinstance(w, str) for w in command):
        return []
    return [(o, v) for o, v in redact_argv(command)[1] if v != MARKER]


def _cut_command(data: bytes) -> bytes:
    """trace/trace.json with the values of secret-saying options cut from its command and from the
    program's stderr tail, and the options named in redacted_options (unchanged when none)."""
    doc = json.loads(data)
    command, cut = redact_argv(doc["command"])
    cut = [(o, v) for o, v in cut if v != MARKER]
    if not cut:
        return data
    doc["command"] = command
    if isinstance(doc.get("stderr_tail"), str):
        doc["stderr_tail"] = cut_values(doc["stderr_tail"], [v for _, v in cut])
    doc["redacted_options"] = sorted(set(doc.get("redacted_options") or []) | {o for o, _ in cut})
    return (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()


def _read_scrubbed(entry: Entry, scrubber: Scrubber, log: _Scrubbed) -> bytes:
    try:
        data = entry.source.read_bytes()
    except OSError as e:
        raise FileSystemError.of(entry.source, e, "cannot read") from None
    if entry.path == TRACE_DOC and _traced_secrets(entry.source.parent.parent):
        data = _cut_command(data)
    if entry.role in _JSON_ROLES and entry.path.endswith(".json"):
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            doc = None
        if doc is not None:
            scrubbed, outcome = scrubber.scrub_json(doc)
            log.note(entry.path, outcome, binary=False)
            return dump_json(scrubbed) if outcome.secret or outcome.classes else data
    if entry.path.startswith(TENSORS):
        log.unscanned.add(entry.path)
        return data
    if b"\0" in data:
        # A binary member (a cubin) is never rewritten: its bytes are what the compiler made, and
        # filler inside an archive or an ELF can break it. Host identity in it is listed
        # (share.binary_files); a secret value in it stops the bundle, as it cannot be cut.
        _, outcome = scrubber.scrub(data, binary=True, shapes=False)
        if outcome.secret:
            names = ", ".join(sorted(outcome.variables)) or "a secret-shaped string"
            raise CaptureInvalid(f"{entry.path}: a binary file holds the value of {names}, which cannot be cut "
                                 "from it without corrupting it: no bundle written")
        log.note(entry.path, outcome, binary=True)
        return data
    new, outcome = scrubber.scrub(data, binary=False, shapes=entry.role not in _NO_SHAPE_ROLES)
    log.note(entry.path, outcome, False)
    return new
