"""What a reduction has already compiled: one observation per (stack, candidate digest), kept in
a JSON-lines file that grows one flushed line per compile, so a killed reduce resumes from it.

The search is deterministic (candidates in a fixed order, the first that holds in each batch
wins), so a rerun over the same cache walks the same path and compiles only what the killed run
had not reached. A torn last line (the kill came mid-write) is skipped.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from reprokit.errors import FileSystemError

FILE = "cache.jsonl"
STATES = "candidates.jsonl"  # each compiled candidate's kernel and case, once: what the bench recompiles bare


def key(stack: str, triton: str, profile: str, mode: str, observes: str, digest: str) -> str:
    """What one observation depends on: the stack and its Triton, the GPU profile and mode, what
    the predicate reads (a metric needs its value kept), and the candidate."""
    return hashlib.sha256("\0".join((stack, triton, profile, mode, observes, digest)).encode()).hexdigest()


class Cache:
    def __init__(self, folder: Path):
        self.path = Path(folder) / FILE
        self.entries: dict[str, dict] = {}
        try:
            Path(folder).mkdir(parents=True, exist_ok=True)
            if self.path.exists():
                for line in self.path.read_text().splitlines():
                    try:
                        doc = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # the line a kill cut short
                    if isinstance(doc, dict) and isinstance(doc.get("key"), str) and isinstance(doc.get("obs"), dict):
                        self.entries[doc["key"]] = doc["obs"]
            torn = self.path.exists() and self.path.stat().st_size > 0 and not self.path.read_bytes().endswith(b"\n")
            self._f = self.path.open("a")
            if torn:
                self._f.write("\n")  # end the torn line, so the next entry starts a line of its own
            self._states = (Path(folder) / STATES).open("a")
        except OSError as e:
            raise FileSystemError.of(self.path, e, "cannot use the reduction's cache") from None
        self.loaded = len(self.entries)

    def get(self, k: str) -> dict | None:
        return self.entries.get(k)

    def put(self, k: str, obs: dict) -> None:
        self.entries[k] = obs
        self._f.write(json.dumps({"key": k, "obs": obs}, sort_keys=True) + "\n")
        self._f.flush()

    def put_state(self, digest: str, source: str, case: str) -> None:
        self._states.write(json.dumps({"digest": digest, "source": source, "case": case}, sort_keys=True) + "\n")
        self._states.flush()

    def close(self) -> None:
        self._f.close()
        self._states.close()
