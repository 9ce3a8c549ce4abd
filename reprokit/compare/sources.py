"""What a grid column is made from: one set of results and the IR behind it.

A `ResultSet` wraps a verified bundle (`from_bundle`, `open_result_set`) or a capture folder
(`from_capture`): its results.json cases, the facts a column header shows (stack, Triton, GPU
profile, mode, sha256, parent) and a reader for each case's IR files. Normalised IR is computed
once per (case, level) and kept.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from reprokit.bundle.reader import open_bundle
from reprokit.compare import boards
from reprokit.compare.normalise import LEVELS, normalise
from reprokit.errors import BundleInvalid, BundleUnusable, FileSystemError, UsageError
from reprokit.records import CaseRecord, Results, parse_results


@dataclass(frozen=True)
class ResultSet:
    key: str                         # unique among a grid's columns
    label: str                       # what a column header shows
    role: str                        # "recorded" | "replay" | "bundle" | "capture"
    results: Results                 # results.json, parsed
    plan: dict                       # plan.json
    manifest: dict = field(default_factory=dict)
    path: str | None = None
    sha256: str | None = None
    _read: Callable[[str], bytes | None] = field(default=lambda rel: None, repr=False, compare=False)
    _norm: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def cases(self) -> tuple[CaseRecord, ...]:
        return self.results.cases

    def case(self, case_id: str) -> CaseRecord | None:
        return self.results.case(case_id)

    @property
    def stack(self) -> dict:
        return dict(self.manifest.get("stack") or self.plan.get("stack") or {})

    @property
    def triton(self) -> str | None:
        return self.results.triton or self.stack.get("triton")

    @property
    def profile(self) -> str | None:
        return (self.plan.get("profile") or {}).get("key")

    @property
    def mode(self) -> str | None:
        return self.results.mode or self.plan.get("mode")

    @property
    def parent(self) -> str | None:
        return self.manifest.get("parent")

    @property
    def env(self) -> dict:
        """env.json ({} where the set has none)."""
        if "env.json" not in self._norm:
            data = self._read("env.json")
            try:
                env = json.loads(data) if data else {}
            except ValueError:
                env = {}
            self._norm["env.json"] = env if isinstance(env, dict) else {}
        return self._norm["env.json"]

    @property
    def board(self) -> str | None:
        """The board identity env.json records (reprokit.compare.boards), None where unknown."""
        return boards.board_identity(self.env)

    def bench_runs(self, case_id: str) -> list:
        """The case's benchmark runs with their raw samples (its bench.json: [{"size", "raw":
        {contender: {...}}}]); [] where it has none (compile-only, an older capture)."""
        k = (case_id, "bench.json")
        if k not in self._norm:
            case = self.case(case_id)
            rel = case.artifacts.get("bench") if case else None
            data = self._read(rel) if rel else None
            try:
                runs = json.loads(data).get("runs") if data else None
            except ValueError:
                runs = None
            self._norm[k] = runs if isinstance(runs, list) else []
        return self._norm[k]

    def normalised(self, case_id: str, level: str) -> str | None:
        k = (case_id, level)
        if k not in self._norm:
            case = self.case(case_id)
            rel = case.artifacts.get(level) if case else None
            data = self._read(rel) if rel else None
            self._norm[k] = None if data is None else _normalised(level, data)
        return self._norm[k]

    @classmethod
    def from_bundle(cls, bundle, *, role: str = "bundle", key: str | None = None,
                    label: str | None = None) -> ResultSet:
        """From a reprokit.bundle.Bundle opened with every member kept (the default)."""
        def read(rel: str) -> bytes | None:
            try:
                return bundle.read(rel)
            except KeyError:
                return None

        stack = (bundle.manifest.get("stack") or {}).get("name")
        return cls(key=key or bundle.root, label=label or _short(stack, bundle.records.triton), role=role,
                   results=bundle.records, plan=bundle.plan, manifest=bundle.manifest, path=str(bundle.path),
                   sha256=bundle.sha256, _read=read)

    @classmethod
    def from_capture(cls, folder: Path, *, role: str = "capture", key: str | None = None,
                     label: str | None = None) -> ResultSet:
        """From a capture folder (what `reprokit capture` leaves), read lazily from disk."""
        folder = Path(folder)
        try:
            results = json.loads((folder / "results.json").read_text())
            plan = json.loads((folder / "plan.json").read_text())
        except FileNotFoundError as e:
            raise UsageError(f"{folder}: not a capture folder ({Path(e.filename).name} is missing)") from None
        except IsADirectoryError as e:
            raise UsageError(f"{folder}: not a capture folder ({Path(e.filename).name} is a folder)") from None
        except OSError as e:  # no permission, an I/O error: the system's refusal, exit 5
            raise FileSystemError.of(folder, e, "cannot be read") from None
        except ValueError as e:
            raise UsageError(f"{folder}: not a capture folder ({e})") from None
        root = folder.resolve()

        def read(rel: str) -> bytes | None:
            p = (root / rel).resolve()
            if root not in p.parents or not p.is_file():
                return None
            return p.read_bytes()

        stack = (plan.get("stack") or {}).get("name")
        records = parse_results(results, UsageError, str(folder))
        return cls(key=key or folder.name, label=label or _short(stack, records.triton), role=role,
                   results=records, plan=plan, path=str(folder), _read=read)


_SEEN: dict = {}
_SEEN_MAX = 4096


def _normalised(level: str, data: bytes) -> str:
    """Normalised text, once per distinct file: a replay on its own stack mostly rebuilds the
    recorded bytes, and a grid's columns share many files."""

    key = (level, hashlib.sha256(data).digest())
    hit = _SEEN.get(key)
    if hit is None:
        if len(_SEEN) >= _SEEN_MAX:
            _SEEN.clear()
        hit = _SEEN[key] = normalise(level, data.decode("utf-8", "replace"))
    return hit


def _short(stack: str | None, triton: str | None) -> str:
    if stack and stack != "local":
        return stack.removeprefix("triton-")
    return f"{stack or 'local'} {triton}" if triton else (stack or "?")


def open_result_set(path: Path, *, role: str = "bundle", key: str | None = None,
                    label: str | None = None) -> ResultSet:
    """A bundle (.tgz, verified: BundleInvalid/BundleUnusable as the reader raises them) or a
    capture folder, as a ResultSet."""
    path = Path(path)
    if path.is_dir():
        return ResultSet.from_capture(path, role="capture" if role == "bundle" else role, key=key, label=label)
    return ResultSet.from_bundle(open_verified(path), role=role, key=key, label=label)


def open_verified(path: Path):
    """open_bundle(), where a bundle that fails verification is input this comparison cannot use
    (BundleUnusable, exit 2: exit 1 means "they differ" here), said in one line."""
    try:
        return open_bundle(Path(path))
    except BundleInvalid as e:
        more = f" (and {len(e.problems) - 1} more; `reprokit verify` lists them)" if len(e.problems) > 1 else ""
        raise BundleUnusable(f"{path}: fails verification, so it cannot be compared: {e.problems[0]}{more}") from None


__all__ = ["LEVELS", "ResultSet", "open_result_set"]
