"""Building bundles for tests: a valid one from a synthetic capture, edited re-packs of it, and
hand-made tar streams for the hostile archives a reader must refuse."""

from __future__ import annotations

import gzip
import io
import tarfile
import zlib
from pathlib import Path

from reprokit.bundle.writer import write_bundle
from reprokit.options import BundleOptions, Origin
from tests.helpers.fake_capture import EXECUTOR, PROFILE_H100, STACK, make_capture

ORIGIN = Origin(stack=STACK, profile=PROFILE_H100, executor=EXECUTOR, mode="compile-only")


def make_bundle(tmp: Path, *, share: bool = False, parent: str | None = None, source_date_epoch=None,
                out: Path | None = None, **capture_kwargs) -> Path:
    cap = make_capture(tmp / "capture", **capture_kwargs)
    origin = Origin(stack=STACK, profile=PROFILE_H100, executor=EXECUTOR,
                    mode=capture_kwargs.get("mode", "compile-only"))
    return write_bundle(cap, origin, BundleOptions(out or tmp / "bundles", share=share, parent=parent,
                                                   source_date_epoch=source_date_epoch))


def members(path: Path) -> tuple[str, dict[str, bytes]]:
    """(root, {relative path: bytes}) of a bundle we made ourselves (trusted: plain tarfile)."""
    out = {}
    with tarfile.open(path, "r:gz") as tar:
        root = tar.getmembers()[0].name
        for ti in tar.getmembers():
            if ti.isfile():
                out[ti.name[len(root) + 1:]] = tar.extractfile(ti).read()
    return root, out


def decompressed(path: Path) -> bytes:
    """Every byte of the tar stream inside a .tgz."""
    return gzip.decompress(Path(path).read_bytes())


def _info(name: str, *, size: int = 0, type=tarfile.REGTYPE, mode: int = 0o644, linkname: str = "") -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.size, ti.type, ti.mode, ti.linkname, ti.mtime = size, type, mode, linkname, 1_700_000_000
    if type in (tarfile.CHRTYPE, tarfile.BLKTYPE):
        ti.devmajor, ti.devminor = 1, 3
    return ti


def raw_tar(entries: list[tuple[tarfile.TarInfo, bytes | None]], *, end: bool = True) -> bytes:
    """A tar stream written header by header, so that nothing tarfile would refuse to write is lost.

    data None: the header only (for headers that lie about their size).
    """
    buf = io.BytesIO()
    for ti, data in entries:
        buf.write(ti.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape"))
        if data is not None:
            buf.write(data)
            buf.write(b"\0" * (-len(data) % 512))
    if end:
        buf.write(b"\0" * 1024)
    return buf.getvalue()


def tgz(path: Path, tar_bytes: bytes) -> Path:
    path.write_bytes(gzip.compress(tar_bytes, mtime=0))
    return path


def repack(src: Path, dst: Path, edit) -> Path:
    """Re-pack a bundle after edit({rel: bytes}) -> {rel: bytes}, same root, same normalisation."""
    root, files = members(src)
    files = edit(dict(files))
    entries = [(_info(root, type=tarfile.DIRTYPE, mode=0o755), None)]
    for rel in sorted(files):
        entries.append((_info(f"{root}/{rel}", size=len(files[rel])), files[rel]))
    return tgz(dst, raw_tar(entries))


def hostile(tmp: Path, kind: str, *, root: str = "evil") -> Path:
    """One archive per class of hostile structure; each otherwise looks like a small bundle."""
    ok = (_info(f"{root}/ok.txt", size=3), b"ok\n")
    d = (_info(root, type=tarfile.DIRTYPE, mode=0o755), None)
    specials = {
        "absolute": [d, ok, (_info(str(tmp / "absolute-target.txt"), size=4), b"pwn\n")],
        "dotdot": [d, ok, (_info(f"{root}/../../dotdot-target.txt", size=4), b"pwn\n")],
        "symlink": [d, (_info(f"{root}/link", type=tarfile.SYMTYPE, linkname=str(tmp / "symlink-target")), None),
                    (_info(f"{root}/link/through.txt", size=4), b"pwn\n")],
        "hardlink": [d, ok, (_info(f"{root}/hard", type=tarfile.LNKTYPE, linkname="/etc/passwd"), None)],
        "chardev": [d, ok, (_info(f"{root}/null", type=tarfile.CHRTYPE), None)],
        "blockdev": [d, ok, (_info(f"{root}/sda", type=tarfile.BLKTYPE), None)],
        "fifo": [d, ok, (_info(f"{root}/pipe", type=tarfile.FIFOTYPE), None)],
        "setuid": [d, (_info(f"{root}/run.sh", size=3, mode=0o4755), b"id\n")],
        "setgid": [d, (_info(f"{root}/run.sh", size=3, mode=0o2755), b"id\n")],
        "duplicate": [d, ok, (_info(f"{root}/ok.txt", size=4), b"pwn\n")],
        "two-roots": [d, ok, (_info("other/ok.txt", size=3), b"ok\n")],
        # Claims 64 GiB: refused from the header, before a byte of it is read.
        "member-too-big": [d, ok, (_info(f"{root}/huge.bin", size=64 << 30), None)],
    }
    if kind in specials:
        return tgz(tmp / f"{kind}.tgz", raw_tar(specials[kind], end=kind != "member-too-big"))
    if kind == "total-too-big":
        # Each member is under the per-member limit; together they are over the bundle limit.
        blob = b"x" * (300 << 10)
        entries = [d] + [(_info(f"{root}/part{i}.bin", size=len(blob)), blob) for i in range(4)]
        return tgz(tmp / f"{kind}.tgz", raw_tar(entries))
    if kind == "gzip-bomb":
        # Honest, tiny tar headers; then 128 MiB of zeros that no header accounts for.
        head = raw_tar([d, ok])
        comp = zlib.compressobj(9, zlib.DEFLATED, 31)
        parts = [comp.compress(head)]
        zeros = b"\0" * (16 << 20)
        for _ in range(8):
            parts.append(comp.compress(zeros))
        parts.append(comp.flush())
        path = tmp / f"{kind}.tgz"
        path.write_bytes(b"".join(parts))
        return path
    raise ValueError(kind)


HOSTILE_KINDS = {
    # kind -> what the refusal must say
    "absolute": "absolute path",
    "dotdot": "'..' in the path escapes the bundle root",
    "symlink": "symbolic link",
    "hardlink": "hard link",
    "chardev": "character device",
    "blockdev": "block device",
    "fifo": "FIFO",
    "setuid": "setuid bit",
    "setgid": "setgid bit",
    "duplicate": "duplicate member name",
    "two-roots": "outside the single bundle root",
    "member-too-big": "over the per-member limit",
    "total-too-big": "add up to more than the bundle limit",
    "gzip-bomb": "compression bomb",
}


def reseal(src: Path, dst: Path, edit) -> Path:
    """A forgery done properly: edit({rel: bytes}) -> {rel: bytes}, then the manifest's sizes,
    sha256s and content_sha256 and SHA256SUMS recomputed, so every checksum agrees again."""
    import hashlib
    import json

    def doit(files):
        files = edit(files)
        manifest = json.loads(files["manifest.json"])
        entries = []
        for rel in sorted(files):
            if rel in ("manifest.json", "SHA256SUMS"):
                continue
            role = next((f["role"] for f in manifest["files"] if f["path"] == rel), "other")
            entries.append({"path": rel, "size": len(files[rel]), "sha256": hashlib.sha256(files[rel]).hexdigest(),
                            "role": role})
        manifest["files"] = entries
        manifest["content_sha256"] = hashlib.sha256("".join(
            f"{f['sha256']}  {f['path']}\n" for f in entries if f["role"] != "readme").encode()).hexdigest()
        files["manifest.json"] = (json.dumps(manifest, indent=1, sort_keys=True, ensure_ascii=False) + "\n").encode()
        sums = sorted([(f["path"], f["sha256"]) for f in entries]
                      + [("manifest.json", hashlib.sha256(files["manifest.json"]).hexdigest())])
        files["SHA256SUMS"] = "".join(f"{h}  {p}\n" for p, h in sums).encode()
        return files

    return repack(src, dst, doit)


def edit_json(files: dict, rel: str, change) -> dict:
    import json

    doc = json.loads(files[rel])
    change(doc)
    files[rel] = (json.dumps(doc, indent=1, sort_keys=True) + "\n").encode()
    return files
