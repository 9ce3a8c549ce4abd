"""The one reader of bundles: every verb that opens a .tgz (verify, show, replay, diff, report)
goes through here, and nothing it does writes outside the folder it is given.

The archive is streamed once. Each tar header is judged before any of its bytes are read: a
member must be a regular file or a folder under the single bundle root, with a normalised
relative name, no link, device, FIFO or setuid/setgid/sticky bit, no duplicate, and within the
size limits. The decompressed stream is counted as it flows, so a gzip bomb or a header that
lies is stopped at the limit rather than after it. Only then come the contents: the manifest
(its format version first, then its schema), every listed file's size and sha256, no unlisted
file, SHA256SUMS, and the plan, results and env documents against their schemas.

Failures split in two (see docs/bundle-format.md): the archive could not or would not be read
(BundleUnusable / BundleRefused, exit 2), or it was read and is wrong (problems, exit 1).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import re
import tarfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import IO, Callable, Mapping, cast

from reprokit import limits as bundle_limits
from reprokit import locks
from reprokit.bundle import meaning, schemas, tensorfile
from reprokit.bundle.schemas import TRACE_DOC
from reprokit.errors import BundleInvalid, BundleRefused, BundleUnusable, FileSystemError, OutputExists, UsageError
from reprokit.records import RecordInvalid, Results

FORMATS = (1, 1)            # the manifest formats this reprokit reads, oldest..newest
DOCS = ("plan.json", "results.json", "env.json")
UNLISTED = ("manifest.json", "SHA256SUMS")   # the two files the manifest cannot list
RECORDS = "results.json (parsed)"             # where _check_contents leaves the typed results
# One set of limits with what `trace` writes (reprokit/limits.py).
DEFAULT_MAX_BUNDLE_BYTES = bundle_limits.MAX_BUNDLE_BYTES
DEFAULT_MAX_MEMBER_BYTES = bundle_limits.MAX_MEMBER_BYTES
DEFAULT_MAX_MEMBERS = bundle_limits.MAX_MEMBERS
# Headers (pax, GNU long names) between two members may take this much; anything larger is
# read into memory by tarfile before we see it, so it is refused.
_HEADER_SLACK = 1 << 20
_CHUNK = 1 << 20
_TAR_BUFSIZE = 64 << 10
_SUM_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")
_TYPE_NAMES = {
    tarfile.SYMTYPE: "symbolic link", tarfile.LNKTYPE: "hard link", tarfile.CHRTYPE: "character device",
    tarfile.BLKTYPE: "block device", tarfile.FIFOTYPE: "FIFO (named pipe)", tarfile.CONTTYPE: "contiguous file",
    tarfile.GNUTYPE_SPARSE: "sparse file",
}
_MODE_BITS = ((0o4000, "setuid"), (0o2000, "setgid"), (0o1000, "sticky"))


def parse_size(text: str | int) -> int:
    """Bytes from '1048576', '512M', '2G', '2GiB' (powers of 1024)."""
    if isinstance(text, int):
        return text
    try:
        return bundle_limits.parse_size(text)
    except ValueError as e:
        raise UsageError(str(e)) from None


@dataclass(frozen=True)
class Limits:
    """How much a bundle may hold; judged from tar headers before bytes, and on the stream."""

    max_bundle_bytes: int = DEFAULT_MAX_BUNDLE_BYTES
    max_member_bytes: int = DEFAULT_MAX_MEMBER_BYTES
    max_members: int = DEFAULT_MAX_MEMBERS

    @classmethod
    def from_env(cls, max_bundle_bytes: str | int | None = None, max_member_bytes: str | int | None = None,
                 max_members: int | None = None, environ: Mapping[str, str] | None = None) -> Limits:
        """Arguments win; else REPROKIT_MAX_BUNDLE_BYTES / REPROKIT_MAX_MEMBER_BYTES /
        REPROKIT_MAX_MEMBERS of `environ` (the HostEnv's, read at the edge); else the defaults
        (2 GiB, 512 MiB, 100000)."""
        env = environ or {}

        def pick(arg, var, default):
            raw = arg if arg is not None else env.get(var, "").strip() or None
            try:
                value = default if raw is None else parse_size(raw)
            except UsageError as e:  # say where the bad size came from
                raise UsageError(f"{var if arg is None else 'the limit'}: {e}") from None
            if value <= 0:
                raise UsageError(f"{var}: the limit must be positive, not {raw!r}")
            return value

        return cls(pick(max_bundle_bytes, "REPROKIT_MAX_BUNDLE_BYTES", DEFAULT_MAX_BUNDLE_BYTES),
                   pick(max_member_bytes, "REPROKIT_MAX_MEMBER_BYTES", DEFAULT_MAX_MEMBER_BYTES),
                   pick(max_members, "REPROKIT_MAX_MEMBERS", DEFAULT_MAX_MEMBERS))


@dataclass(frozen=True)
class Member:
    path: str       # relative to the bundle root
    size: int
    sha256: str


@dataclass(frozen=True)
class Bundle:
    """A verified bundle, read into memory: documents parsed, kept members' bytes at hand."""

    path: Path
    sha256: str                      # of the .tgz file: what a replay names as its parent
    root: str
    manifest: dict
    plan: dict
    results: dict                    # results.json as written
    records: Results                 # the same, parsed once here: what the host reads
    env: dict
    members: Mapping[str, Member]    # every file, by path relative to the root
    data: Mapping[str, bytes] = field(repr=False)

    @property
    def name(self) -> str:
        return self.root

    def read(self, rel: str) -> bytes:
        """A member's bytes; KeyError when it is not in the bundle or was not kept."""
        return self.data[rel]

    def read_text(self, rel: str) -> str:
        return self.read(rel).decode("utf-8")


class _HashingFile:
    """The raw .tgz as GzipFile reads it, hashed on the way: the bundle's own sha256."""

    def __init__(self, f):
        self._f = f
        self.sha = hashlib.sha256()

    def read(self, n: int = -1) -> bytes:
        data = self._f.read(n)
        self.sha.update(data)
        return data

    def drain(self) -> None:
        while self.read(_CHUNK):
            pass


class _CountingStream:
    """The decompressed tar stream, counted: refuses past the bundle limit or past the fence
    (the furthest point the current member and the next headers may legitimately reach)."""

    def __init__(self, gz, limit: int):
        self._gz = gz
        self.limit = limit
        self.fence = _HEADER_SLACK
        self.pos = 0

    def read(self, n: int = -1) -> bytes:
        n = _CHUNK if n is None or n < 0 else n
        data = self._gz.read(n)
        self.pos += len(data)
        if self.pos > self.limit:
            raise BundleRefused(f"refused: the decompressed archive passed the limit of {self.limit} bytes "
                                "before it ended (a compression bomb, or a bundle over REPROKIT_MAX_BUNDLE_BYTES)")
        if self.pos > self.fence:
            raise BundleRefused(f"refused: tar headers at offset {self.fence - _HEADER_SLACK} take more than "
                                f"{_HEADER_SLACK} bytes (an oversized pax or long-name header)")
        return data


@dataclass
class _Scan:
    root: str | None = None
    sha256: str = ""
    members: dict = field(default_factory=dict)      # rel -> Member
    data: dict = field(default_factory=dict)         # rel -> bytes, for kept members
    ir: dict = field(default_factory=dict)           # rel -> (level, TMA moves, {op: count}) of IR files
    refused: list = field(default_factory=list)
    problems: list = field(default_factory=list)


def _root_of(scan: _Scan) -> str:
    """The bundle's root folder, which its first member sets (_check_member) before any member is
    read; a bundle with no member never gets past its missing documents."""
    if scan.root is None:
        raise BundleInvalid("the bundle has no root folder")
    return scan.root


def _label(name: str) -> str:
    """A member name safe to print on one line."""
    return repr(name) if any(ord(c) < 32 for c in name) else name


def _check_member(ti: tarfile.TarInfo, scan: _Scan, seen: set, folded: set, files: set, dirs: set) -> list[str]:
    """Why this member is refused (empty when it is acceptable). Judged on the header alone."""
    name = ti.name
    label = _label(name)
    out = []
    if name.startswith("/") or re.match(r"^[A-Za-z]:", name):
        out.append(f"refused: {label}: absolute path")
    parts = name.lstrip("/").split("/")
    if ".." in parts:
        out.append(f"refused: {label}: '..' in the path escapes the bundle root")
    elif any(p in ("", ".") for p in parts[1:]) or not parts[0] or parts[0] == ".":
        out.append(f"refused: {label}: path is not normalised (empty or '.' component)")
    if any(ord(c) < 32 or c == "\\" for c in name):
        out.append(f"refused: {label}: control character or backslash in the name")
    if ti.type in _TYPE_NAMES:
        kind = _TYPE_NAMES[ti.type]
        target = f" to {ti.linkname!r}" if ti.type in (tarfile.SYMTYPE, tarfile.LNKTYPE) else ""
        out.append(f"refused: {label}: {kind}{target}; bundles hold regular files and folders only")
    elif ti.type not in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
        out.append(f"refused: {label}: unsupported member type {ti.type!r}")
    for bit, what in _MODE_BITS:
        if ti.mode & bit:
            out.append(f"refused: {label}: {what} bit set (mode {ti.mode:04o})")
    if scan.root is None:
        scan.root = parts[0]
    elif parts[0] != scan.root:
        out.append(f"refused: {label}: outside the single bundle root {scan.root!r}")
    if name in seen:
        out.append(f"refused: {label}: duplicate member name")
    elif name.casefold() in folded:
        out.append(f"refused: {label}: differs only by letter case from another member")
    seen.add(name)
    folded.add(name.casefold())
    ancestors = ["/".join(parts[:i]) for i in range(1, len(parts))]
    inside = next((a for a in ancestors if a in files), None)
    if inside:
        out.append(f"refused: {label}: lies inside {inside!r}, which is a file")
    if ti.type in (tarfile.REGTYPE, tarfile.AREGTYPE):
        if name in dirs:
            out.append(f"refused: {label}: a file, but other members sit inside it as a folder")
        files.add(name)
    else:
        dirs.add(name)
    dirs.update(ancestors)
    return out


def _scan(path: Path, limits: Limits, keep: Callable[[str], bool], write_to: Path | None) -> _Scan:
    """Stream the bundle once; raise BundleUnusable/BundleRefused, else return what was read."""
    path = Path(path)
    try:
        size = path.stat().st_size
        f = open(path, "rb")
    except FileNotFoundError:
        raise BundleUnusable(f"{path}: no such file") from None
    except IsADirectoryError:  # the user named the wrong thing: bad input, like a missing file
        raise BundleUnusable(f"{path}: is a folder, not a bundle") from None
    except OSError as e:  # no permission, an I/O error: the system's refusal, exit 5
        raise FileSystemError.of(path, e, "cannot be read") from None
    scan = _Scan()
    with f:
        if f.read(2) != b"\x1f\x8b":
            raise BundleUnusable(f"{path}: not a gzip file (a bundle is a .tgz)")
        f.seek(0)
        if size > limits.max_bundle_bytes:
            raise BundleRefused(f"refused: {path} is {size} bytes, over the bundle limit of "
                                f"{limits.max_bundle_bytes} (REPROKIT_MAX_BUNDLE_BYTES / --max-bytes)")
        raw = _HashingFile(f)
        try:
            with gzip.GzipFile(fileobj=cast("IO[bytes]", raw), mode="rb") as gz:  # it reads only read()
                stream = _CountingStream(gz, limits.max_bundle_bytes)
                _walk(stream, scan, limits, keep, write_to)
                if scan.refused:
                    raise BundleRefused(scan.refused[0], scan.refused)
                stream.fence = stream.limit  # past the tar end only the bundle limit applies
                trailing = 0
                while True:  # to the end of the gzip stream: its CRC, and nothing hidden after the tar
                    chunk = stream.read(_CHUNK)
                    if not chunk:
                        break
                    trailing += len(chunk.strip(b"\0"))
            raw.drain()
        except EOFError:
            raise BundleUnusable(f"{path}: truncated (the gzip stream ends before its end marker)") from None
        except gzip.BadGzipFile as e:
            raise BundleUnusable(f"{path}: corrupt gzip stream: {e}") from None
        except zlib.error as e:
            raise BundleUnusable(f"{path}: corrupt gzip stream: {e}") from None
        except tarfile.ReadError as e:
            raise BundleUnusable(f"{path}: not a readable tar archive: {e}") from None
        except OSError as e:
            raise FileSystemError.of(path, e, "cannot be read") from None
    if trailing:
        scan.problems.append(f"{trailing} bytes of data after the end of the tar archive")
    if scan.root is None:
        raise BundleUnusable(f"{path}: an empty archive, not a bundle")
    scan.sha256 = raw.sha.hexdigest()
    return scan


def _walk(stream: _CountingStream, scan: _Scan, limits: Limits, keep, write_to: Path | None) -> None:
    seen: set = set()
    folded: set = set()
    files: set = set()
    dirs: set = set()
    total = 0
    count = 0
    with tarfile.open(fileobj=cast("IO[bytes]", stream), mode="r|", bufsize=_TAR_BUFSIZE) as tar:  # read() only
        for ti in tar:
            count += 1
            if count > limits.max_members:
                scan.refused.append(f"refused: more than {limits.max_members} members (REPROKIT_MAX_MEMBERS)")
                return
            stream.fence = ti.offset_data + _HEADER_SLACK + (
                -(-ti.size // 512) * 512 if ti.type in (tarfile.REGTYPE, tarfile.AREGTYPE) else 0)
            if ti.size > limits.max_member_bytes:
                scan.refused.append(f"refused: {_label(ti.name)}: {ti.size} bytes, over the per-member limit of "
                                    f"{limits.max_member_bytes} (REPROKIT_MAX_MEMBER_BYTES / --max-member-bytes)")
                return
            total += ti.size
            if total > limits.max_bundle_bytes:
                scan.refused.append(f"refused: members add up to more than the bundle limit of "
                                    f"{limits.max_bundle_bytes} bytes (REPROKIT_MAX_BUNDLE_BYTES / --max-bytes)")
                return
            why = _check_member(ti, scan, seen, folded, files, dirs)
            if why:
                scan.refused.extend(why)
                continue
            if scan.refused:
                continue  # a refused archive: headers are still judged, no bytes are read
            root = _root_of(scan)
            rel = ti.name[len(root) + 1:]
            if ti.isdir():
                if write_to is not None:
                    write_to.joinpath(root, *[p for p in rel.split("/") if p]).mkdir(parents=True, exist_ok=True)
                continue
            if not rel:
                scan.refused.append(f"refused: {_label(ti.name)}: the bundle root is a file, not a folder")
                continue
            scan.members[rel] = _read_member(tar, ti, rel, scan, keep, write_to)


def _read_member(tar: tarfile.TarFile, ti: tarfile.TarInfo, rel: str, scan: _Scan, keep,
                 write_to: Path | None) -> Member:
    sha = hashlib.sha256()
    level = meaning.ir_level(rel)
    keep_it = rel in DOCS or rel in UNLISTED or rel == TRACE_DOC or keep(rel)
    kept: list[bytes] | None = [] if keep_it or level else None
    out = None
    if write_to is not None:
        target = write_to.joinpath(_root_of(scan), *rel.split("/"))
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL|O_NOFOLLOW: the folder is fresh and ours, but never follow or overwrite anything.
            out = os.fdopen(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0),
                                    0o644), "wb")
        except OSError as e:
            raise FileSystemError.of(target, e, "cannot write") from None
    src = tar.extractfile(ti)
    if src is None:  # _check_member refused every member that is not a folder or a regular file
        raise BundleRefused(f"refused: {_label(ti.name)}: not a regular file")
    n = 0
    try:
        while True:
            chunk = src.read(_CHUNK)
            if not chunk:
                break
            n += len(chunk)
            sha.update(chunk)
            if kept is not None:
                kept.append(chunk)
            if out is not None:
                try:
                    out.write(chunk)
                except OSError as e:  # the destination's fault (a full disk), not the bundle's
                    raise FileSystemError.of(target, e, "cannot write") from None
    finally:
        if out is not None:
            try:
                out.close()
            except OSError:
                pass
    if kept is not None:
        data = b"".join(kept)
        if level:  # the oracle counts it now, so verify need not hold every IR file at once
            scan.ir[rel] = (level, *meaning.count(level, data))
        if keep_it:
            scan.data[rel] = data
    return Member(rel, n, sha.hexdigest())


def _json(scan: _Scan, rel: str, problems: list[str]):
    if rel not in scan.data:
        problems.append(f"{rel}: missing")
        return None
    try:
        return json.loads(scan.data[rel])
    except (ValueError, RecursionError) as e:
        problems.append(f"{rel}: not valid JSON: {e}")
        return None


def _check_format(manifest) -> None:
    fmt = manifest.get("format") if isinstance(manifest, dict) else None
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        return  # the schema reports it
    lo, hi = FORMATS
    if fmt < lo:
        raise BundleUnusable(f"bundle format {fmt} is too old for this reprokit (reads {lo}..{hi}); "
                             f"read it with the reprokit that wrote it ({manifest.get('reprokit', 'unknown')})")
    if fmt > hi:
        raise BundleUnusable(f"bundle format {fmt} is newer than this reprokit understands (reads {lo}..{hi}); "
                             "upgrade reprokit")


def _check_contents(scan: _Scan) -> tuple[dict, dict, list[str]]:
    """The manifest, the valid documents, and every problem with the contents (one line each)."""
    problems = list(scan.problems)
    manifest = _json(scan, "manifest.json", problems)
    _check_format(manifest)
    docs = {}
    if manifest is not None:
        problems += schemas.problems("manifest.json", manifest)
    listed = {}
    if manifest is not None and not any(p.startswith("manifest.json:") for p in problems):
        if manifest["name"] != scan.root:
            problems.append(f"manifest.json: $.name: {manifest['name']!r} but the bundle root is {scan.root!r}")
        for i, entry in enumerate(manifest["files"]):
            rel = entry["path"]
            if rel in listed:
                problems.append(f"manifest.json: $.files[{i}]: {rel} is listed twice")
            listed[rel] = entry
            have = scan.members.get(rel)
            if rel in UNLISTED:
                problems.append(f"manifest.json: $.files[{i}]: {rel} cannot list itself")
            elif have is None:
                problems.append(f"{rel}: listed in the manifest but missing from the bundle")
            elif have.size != entry["size"]:
                problems.append(f"{rel}: {have.size} bytes, the manifest says {entry['size']}")
            elif have.sha256 != entry["sha256"]:
                problems.append(f"{rel}: sha256 {have.sha256[:16]}... differs from the manifest's "
                                f"{entry['sha256'][:16]}...")
        for rel in sorted(set(scan.members) - set(listed) - set(UNLISTED)):
            problems.append(f"{rel}: in the bundle but not listed in the manifest")
    problems += _check_sums(scan)
    for rel in DOCS:
        doc = _json(scan, rel, problems)
        if doc is not None:
            doc_problems = schemas.problems(rel, doc)
            problems += doc_problems
            docs[rel] = doc if not doc_problems else None
    plan_doc, results_doc = docs.get("plan.json"), docs.get("results.json")
    if plan_doc is not None and results_doc is not None:
        problems += schemas.consistency_problems(plan_doc, results_doc, set(scan.members))
        try:
            records = Results.from_json(results_doc)
        except RecordInvalid as e:
            problems.append(f"results.json: {e}")
        else:
            problems += meaning.problems(plan_doc, records, scan.ir)
            docs[RECORDS] = records
    # A trace's own record (trace/trace.json), which show and the replay read: a malformed one is
    # a problem here, not a traceback there.
    if TRACE_DOC in scan.data:
        trace_doc = _json(scan, TRACE_DOC, problems)
        if trace_doc is not None:
            problems += schemas.problems(TRACE_DOC, trace_doc)
    # The tensors a trace kept, read without torch (zip CRCs, a pickle of tensors only, the shapes
    # the plan recorded): replay hands them to a program, so a damaged one is a problem here.
    problems += tensorfile.problems({r: d for r, d in scan.data.items() if r.startswith(tensorfile.PREFIX)},
                                    docs.get("plan.json"))
    return (manifest if isinstance(manifest, dict) else {}), docs, problems


def _check_sums(scan: _Scan) -> list[str]:
    if "SHA256SUMS" not in scan.data:
        return ["SHA256SUMS: missing"]
    out = []
    sums = {}
    try:
        text = scan.data["SHA256SUMS"].decode("utf-8")
    except UnicodeDecodeError:
        return ["SHA256SUMS: not UTF-8 text"]
    for n, line in enumerate(text.splitlines(), 1):
        m = _SUM_LINE.match(line)
        if not m:
            out.append(f"SHA256SUMS: line {n} is not '<sha256>  <path>'")
            continue
        sums[m.group(2)] = m.group(1)
    for rel, digest in sorted(sums.items()):
        have = scan.members.get(rel)
        if have is None:
            out.append(f"SHA256SUMS: lists {rel}, which the bundle lacks")
        elif have.sha256 != digest:
            out.append(f"SHA256SUMS: {rel}: sha256 differs from the file's")
    for rel in sorted(set(scan.members) - set(sums) - {"SHA256SUMS"}):
        out.append(f"SHA256SUMS: does not list {rel}")
    return out


@dataclass(frozen=True)
class Report:
    """What verification found: problems (empty when valid) and, for the record, what was read."""

    path: Path
    sha256: str
    root: str | None      # None: an archive with no member
    files: int
    problems: tuple

    @property
    def valid(self) -> bool:
        return not self.problems


def check(path: Path, limits: Limits | None = None) -> Report:
    """verify() with the bundle's sha256, root folder and file count beside the problems."""
    scan = _scan(Path(path), limits or Limits(), keep=lambda rel: rel.startswith(tensorfile.PREFIX), write_to=None)
    return Report(Path(path), scan.sha256, scan.root, len(scan.members), tuple(_check_contents(scan)[2]))


def verify(path: Path, limits: Limits | None = None) -> list[str]:
    """Every problem with the bundle at `path`, one line each; [] when it is valid.

    Raises BundleUnusable (missing, not gzip/tar, truncated, a format this reprokit cannot read)
    or BundleRefused (hostile structure or over the limits): see the module docstring.
    """
    return list(check(path, limits).problems)


def open_bundle(path: Path, limits: Limits | None = None, *, keep: Callable[[str], bool] | None = None) -> Bundle:
    """Read and verify a bundle without touching the disk; BundleInvalid lists its problems.

    keep: which members' bytes to hold in memory (default all); the JSON documents,
    manifest.json and SHA256SUMS are always kept.
    """
    path = Path(path)
    scan = _scan(path, limits or Limits(), keep=keep or (lambda rel: True), write_to=None)
    manifest, docs, problems = _check_contents(scan)
    if problems:
        raise BundleInvalid(f"{path}: not a valid bundle: {problems[0]}", problems)
    return Bundle(path=path, sha256=scan.sha256, root=_root_of(scan), manifest=manifest, plan=docs["plan.json"],
                  results=docs["results.json"], records=docs[RECORDS], env=docs["env.json"],
                  members=MappingProxyType(scan.members), data=MappingProxyType(scan.data))


def extract(path: Path, dest: Path, limits: Limits | None = None) -> Path:
    """Verify and unpack a bundle into dest/<bundle root>, and return that folder.

    Members are written into a fresh private folder inside dest and moved into place only once
    the whole bundle has verified; whatever fails, nothing is left behind and nothing is ever
    written outside dest.
    """
    dest = Path(dest)
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise FileSystemError.of(dest, e, "cannot create") from None
    locks.sweep(dest)  # what a killed extraction left
    with locks.temp(dest, ".reprokit-extract", "partial", is_dir=True) as tmp:
        work = tmp.path
        scan = _scan(Path(path), limits or Limits(), keep=lambda rel: False, write_to=work)
        problems = _check_contents(scan)[2]
        if problems:
            raise BundleInvalid(f"{path}: not a valid bundle: {problems[0]}", problems)
        root = _root_of(scan)
        final = dest / root
        if final.exists():
            raise OutputExists(f"{final} already exists; remove it or extract elsewhere")
        os.rename(work / root, final)
        return final
