"""Scrubbing the bytes that go into a bundle: secret values always, host identity in share mode.

What counts as secret is decided by reprokit.common.redact (shared with the in-stack snapshot).
Here we turn it into needles: the values of secret-looking variables, taken from the host's
environment and from env.json, are cut out of every file, whatever its name or type. Secret
*shapes* (private keys, URL passwords, token formats) are searched in the files where text from
outside the compiler lands (logs, JSON, summaries, kernel sources, reproducers); compiler output
(IR, SASS, cubin) is derived from those sources and only gets the exact-value pass, which keeps
packing fast. Text loses the secret to MARKER; a binary file keeps its length, the secret being
overwritten by filler of the same size, so offsets inside a cubin stay valid.
"""

from __future__ import annotations

import getpass
import json
import os
import pwd
import re
import socket
from dataclasses import dataclass, field
from typing import Mapping

from reprokit.common.redact import MARKER, SECRET_VALUE_PATTERNS, is_secret_name, looks_secret_value

SHARE_CLASSES = ("hostname", "user", "home", "gpu-uuid", "gpu-serial")
_PLACEHOLDER = {"hostname": "<host>", "user": "<user>", "home": "<home>", "gpu-uuid": "<gpu-uuid>",
                "gpu-serial": "<gpu-serial>"}
# Values shorter than this, or plain words, are too likely to occur by chance in IR to be cut
# out of every file; they are still redacted in env.json.
_MIN_SECRET_LEN = 8
_MIN_IDENTITY_LEN = 3
# ... and reprokit's own: a stack image's user (HOME=/home/stack) and a container's USER.
_GENERIC_USERS = frozenset({"root", "nobody", "user", "admin", "ubuntu", "runner", "debian", "stack", "reprokit"})
_GENERIC_HOSTS = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
_WORD_BEFORE = rb"(?<![A-Za-z0-9_-])"
_WORD_AFTER = rb"(?![A-Za-z0-9_-])"
_PATH_AFTER = rb"(?![A-Za-z0-9._-])"
# A /home/<name> or /Users/<name> that starts a path: not the tail of /tmp/x/home/cache, which
# would take "cache" for a user and cut /tmp/x/home in two.
_HOME_RE = re.compile(rb"(?<![A-Za-z0-9._/-])(?:/home|/Users)/[A-Za-z0-9._-]+" + _PATH_AFTER)
# Fields of env.json that hold the HOME the stack ran with (Triton 3.4+ reports its own).
_HOME_FIELDS = frozenset({"HOME", "home_dir"})
_UUID_RE = re.compile(rb"\b(?:GPU|MIG)-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
# (literal that every match contains, compiled pattern): the literal test is a fast substring
# search, so the regex runs only where it can hit.
_SECRET_SHAPES = tuple((hint.encode(), re.compile(p.encode(), re.DOTALL)) for hint, p in SECRET_VALUE_PATTERNS)
_ESCAPES = (lambda s: s, lambda s: json.dumps(s)[1:-1], lambda s: repr(s)[1:-1])


def _worth_scrubbing(value: str) -> bool:
    if len(value) < _MIN_SECRET_LEN or value == MARKER:
        return False
    classes = sum((any(c.islower() for c in value), any(c.isupper() for c in value),
                   any(c.isdigit() for c in value), any(not c.isalnum() for c in value)))
    return classes >= 2 or len(value) >= 16


def secret_values(*environments: dict) -> dict[str, set[str]]:
    """value -> names, for every secret-looking variable of the environments worth scrubbing."""
    out: dict[str, set[str]] = {}
    for env in environments:
        for name, value in env.items():
            if isinstance(value, str) and _worth_scrubbing(value) and (
                    is_secret_name(name) or looks_secret_value(value)):
                out.setdefault(value, set()).add(name)
    return out


def _needle_forms(value: str) -> set[bytes]:
    """The value as it may appear in a file: raw, JSON- and repr-escaped, and line by line."""
    value = value.strip()
    forms = {esc(value) for esc in _ESCAPES}
    forms |= {line.strip() for line in value.splitlines() if len(line.strip()) >= 16}
    return {f.encode("utf-8", "surrogateescape") for f in forms if len(f) >= _MIN_SECRET_LEN}


@dataclass(frozen=True)
class HostFacts:
    """Who and where: what share mode replaces. Gathered from the host and from env.json."""

    hostnames: frozenset = frozenset()
    users: frozenset = frozenset()
    homes: frozenset = frozenset()
    gpu_uuids: frozenset = frozenset()
    gpu_serials: frozenset = frozenset()

    @classmethod
    def gather(cls, env_doc: dict | None, environ: Mapping[str, str] | None = None, also: tuple = ()) -> HostFacts:
        """`also`: more documents whose GPU uuid/serial fields name this host's GPUs (results.json
        holds NVML snapshots taken around each benchmark)."""
        environ = environ or {}
        env_doc = env_doc or {}
        hosts = {socket.gethostname(), (env_doc.get("os") or {}).get("hostname")}
        users = {environ.get("USER"), environ.get("LOGNAME")}
        try:
            users.add(getpass.getuser())
        except (KeyError, OSError):  # no passwd entry for this uid (containers)
            pass
        # HOME as given, the password database's home for this user (what `~` means when HOME
        # was set elsewhere), and the HOME fields of env.json.
        homes = {environ.get("HOME"), _passwd_home()} | recorded_homes(env_doc)
        # Paths inside the stack (/home/<user>/...) name the user the stack ran as.
        for m in _HOME_RE.finditer(json.dumps(env_doc).encode()):
            homes.add(m.group(0).decode())
        users |= {h.rstrip("/").rsplit("/", 1)[-1] for h in homes if h and h.startswith(("/home/", "/Users/"))}
        uuids: set[str] = set()
        serials: set[str] = set()
        _collect_gpu_ids(env_doc.get("gpu"), uuids, serials)
        for doc in also:
            _collect_gpu_ids(doc, uuids, serials)
        return cls(
            hostnames=frozenset(h for h in hosts | {h.split(".")[0] for h in hosts if h} if h),
            users=frozenset(u for u in users if u),
            homes=frozenset(h.rstrip("/") for h in homes if h and h.rstrip("/")),
            gpu_uuids=frozenset(str(u) for u in uuids if u),
            gpu_serials=frozenset(str(s) for s in serials if s),
        )


def _passwd_home() -> str | None:
    """This user's home in the password database: what `~` means where HOME is set elsewhere
    (a CI job's HOME=/tmp/x/home still runs from /root/.cache, /home/alice/.local...)."""
    try:
        return pwd.getpwuid(os.getuid()).pw_dir
    except (KeyError, OSError):  # no passwd entry for this uid (containers)
        return None


def recorded_homes(env_doc) -> set:
    """The HOMEs env.json records for the stack (an env_vars HOME, Triton 3.4+'s home_dir)."""
    out: set = set()
    _collect_fields(env_doc, _HOME_FIELDS, out)
    return out


def _collect_fields(node, names: frozenset, into: set) -> None:
    """Absolute-path string values of keys called `names`, anywhere in a JSON document."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k in names and isinstance(v, str) and v.startswith("/"):
                into.add(v)
            else:
                _collect_fields(v, names, into)
    elif isinstance(node, list):
        for v in node:
            _collect_fields(v, names, into)


def _collect_gpu_ids(node, uuids: set, serials: set) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if isinstance(v, (str, int)) and not isinstance(v, bool) and k.lower() in ("uuid", "gpu_uuid"):
                uuids.add(v)
            elif isinstance(v, (str, int)) and not isinstance(v, bool) and k.lower() in ("serial", "gpu_serial"):
                serials.add(v)
            else:
                _collect_gpu_ids(v, uuids, serials)
    elif isinstance(node, list):
        for v in node:
            _collect_gpu_ids(v, uuids, serials)


@dataclass(frozen=True)
class Outcome:
    """What scrubbing did to one file: variables whose values went, secret shapes, identity classes."""

    variables: frozenset = frozenset()
    shapes: bool = False
    classes: frozenset = frozenset()

    @property
    def secret(self) -> bool:
        return bool(self.variables) or self.shapes

    def __or__(self, other: Outcome) -> Outcome:
        return Outcome(self.variables | other.variables, self.shapes or other.shapes, self.classes | other.classes)


def _filler(placeholder: bytes, n: int) -> bytes:
    return (placeholder + b"_" * n)[:n] if n >= len(placeholder) else b"_" * n


def _replace(data: bytes, needle: bytes, placeholder: bytes, binary: bool) -> bytes:
    return data.replace(needle, _filler(placeholder, len(needle)) if binary else placeholder)


def _sub(rx: re.Pattern, data: bytes, placeholder: bytes, binary: bool) -> bytes:
    if binary:
        return rx.sub(lambda m: _filler(placeholder, len(m.group(0))), data)
    return rx.sub(lambda m: placeholder, data)


@dataclass(frozen=True)
class Scrubber:
    secrets: tuple = ()                 # (needle bytes, variable names), longest needle first
    share: bool = False
    identities: tuple = ()              # (class, compiled regex, literal hints), in order
    # JSON string values that ARE an identity, whatever their length (a host called `vm` is too
    # short to cut out of running text, but env.json's os.hostname still names it).
    exact: tuple = ()                   # (value, class)
    # ... and those that are also words of the bundle's code and IR (a user called `triton`):
    # exact only in env.json, the host's own record (scrub_json(env=True)).
    exact_env: tuple = ()               # (value, class)
    _marker: bytes = field(default=MARKER.encode(), repr=False)

    @classmethod
    def for_capture(cls, env_doc: dict | None, *, share: bool, environ: Mapping[str, str] | None = None,
                    facts: HostFacts | None = None, keep: frozenset = frozenset(), also: tuple = (),
                    extra: Mapping[str, str] | None = None, words: frozenset = frozenset()) -> Scrubber:
        """Needles from the host environment and env.json; in share mode, rules for host identity.

        `keep`: words that are never treated as host or user names (profile keys, stack names,
        case ids), so that a host called `h100` does not blank the profile out of the results.
        `extra`: more secret values, by what they were (a traced command's `--api-key`).
        `words`: host and user names that are also words of the code (content_words): cut only
        where they name the host or user (`user@host`, env.json's values), never as words, which
        would rewrite `import triton` or `@llvm.nvvm`.
        """
        environ = dict(environ or {})
        needles: dict[bytes, set[str]] = {}
        for value, names in secret_values(environ, (env_doc or {}).get("env_vars") or {}).items():
            for form in _needle_forms(value):
                needles.setdefault(form, set()).update(names)
        for value, what in (extra or {}).items():
            if _worth_scrubbing(value):
                for form in _needle_forms(value):
                    needles.setdefault(form, set()).add(what)
        identities: tuple = ()
        exact: tuple = ()
        if share:
            facts = facts or HostFacts.gather(env_doc, environ, also)
            identities = _identity_rules(facts, keep, words)
            exact = tuple(sorted({(h, "hostname") for h in facts.hostnames if h not in keep}
                                 | {(u, "user") for u in facts.users if u not in keep and u not in _GENERIC_USERS}))
        ordered = sorted(needles, key=lambda n: (-len(n), n))
        return cls(tuple((n, frozenset(needles[n])) for n in ordered), share, identities,
                   tuple(e for e in exact if e[0] not in words), tuple(e for e in exact if e[0] in words))

    def scrub(self, data: bytes, *, binary: bool, shapes: bool) -> tuple[bytes, Outcome]:
        """Scrubbed bytes, and what was found. `shapes`: also search secret shapes (see module doc)."""
        names: set[str] = set()
        for needle, owners in self.secrets:
            if needle in data:
                data = _replace(data, needle, self._marker, binary)
                names |= owners
        shaped = False
        if shapes:
            for hint, rx in _SECRET_SHAPES:
                if hint in data:
                    new = _sub(rx, data, self._marker, binary)
                    shaped = shaped or new != data
                    data = new
        classes = set()
        for cls_name, rx, hints in self.identities:
            if not hints or any(h in data for h in hints):
                new = _sub(rx, data, _PLACEHOLDER[cls_name].encode(), binary)
                if new != data:
                    classes.add(cls_name)
                    data = new
        return data, Outcome(frozenset(names), shaped, frozenset(classes))

    def scrub_json(self, doc, *, env: bool = False):
        """(scrubbed copy, Outcome) of a parsed JSON document: every string value, keys kept.
        `env`: the document is env.json, the host's record, where a name is cut even when it is
        also a word of the code (exact_env)."""
        if isinstance(doc, str):
            for value, cls_name in (*self.exact, *self.exact_env) if env else self.exact:
                if doc == value:
                    return _PLACEHOLDER[cls_name], Outcome(classes=frozenset({cls_name}))
            raw = doc.encode("utf-8", "surrogatepass")
            new, outcome = self.scrub(raw, binary=False, shapes=True)
            return (new.decode("utf-8", "surrogatepass") if new != raw else doc), outcome
        if isinstance(doc, list):
            items = [self.scrub_json(v, env=env) for v in doc]
            return [p[0] for p in items], _merge(p[1] for p in items)
        if isinstance(doc, dict):
            pairs = {k: self.scrub_json(v, env=env) for k, v in doc.items()}
            return {k: p[0] for k, p in pairs.items()}, _merge(p[1] for p in pairs.values())
        return doc, Outcome()


def _merge(outcomes) -> Outcome:
    out = Outcome()
    for o in outcomes:
        out = out | o
    return out


def _longest_first(values) -> list:
    """A total order for replacement rules: longest first (a longer value may contain a shorter
    one), then by value, so that equal lengths never fall back on set order (the hash seed)."""
    return sorted(values, key=lambda v: (-len(v), v))


def content_words(facts: HostFacts, texts, vocabulary: frozenset = frozenset()) -> frozenset:
    """The host and user names of `facts` that are also words of the code: one of `vocabulary`
    (the words reprokit's own templates write: `triton`, `torch`, `cuda`), or standing as a word
    in one of `texts` (the bundle's IR, as bytes: `i32`, `nvvm`, `f16`). Cut as words, they
    would rewrite the code and IR (Scrubber.for_capture's `words`). A name that stands only in the
    user's own text (a kernel's comment "# by amy") is the user's, and is cut as before."""
    names = {n for n in facts.hostnames | facts.users if n and len(n) >= _MIN_IDENTITY_LEN}
    found = {n for n in names if n in vocabulary}
    for data in texts:
        if found == names:
            break
        for name in names - found:
            raw = name.encode()
            # a word apart from paths: /home/kowalski/src in an IR location names the user
            if raw in data and re.search(rb"(?<![A-Za-z0-9_/-])" + re.escape(raw) + rb"(?![A-Za-z0-9_/-])", data):
                found.add(name)
    return frozenset(found)


def _identity_rules(facts: HostFacts, keep: frozenset, words: frozenset = frozenset()) -> tuple:
    """(class, regex, hints) rules in the order they must run: longest, most specific first.

    A rule runs on data holding one of its hints (all data when there are none). Every known
    home goes into one alternation, longest first: matched left to right in one pass, two homes
    that overlap in a text (/tmp/x/home and /home/...) can never leave a piece of either behind,
    whatever order they would have had as separate rules.
    """
    rules = []
    homes = [h.encode() for h in _longest_first(facts.homes) if len(h) > 1]
    if homes:
        rules.append(("home", re.compile(b"(?:" + b"|".join(map(re.escape, homes)) + b")" + _PATH_AFTER),
                      tuple(homes)))
    rules.append(("home", _HOME_RE, ()))
    rules.append(("gpu-uuid", _UUID_RE, ()))
    for uuid in _longest_first(facts.gpu_uuids):
        if len(uuid) >= _MIN_IDENTITY_LEN:
            rules.append(("gpu-uuid", re.compile(re.escape(uuid.encode())), (uuid.encode(),)))
    for serial in _longest_first(facts.gpu_serials):
        if len(serial) >= _MIN_IDENTITY_LEN and not serial.startswith("<"):
            rules.append(("gpu-serial", re.compile(_WORD_BEFORE + re.escape(serial.encode()) + _WORD_AFTER),
                          (serial.encode(),)))
    for cls_name, names, generic in (("hostname", facts.hostnames, _GENERIC_HOSTS),
                                     ("user", facts.users, _GENERIC_USERS)):
        for name in _longest_first(names):
            if len(name) >= _MIN_IDENTITY_LEN and name.lower() not in generic and name not in keep:
                raw = re.escape(name.encode())
                # a word of the code: only where it names someone, in user@host (never `@triton.jit`)
                at = (rb"(?<=[A-Za-z0-9_.-]@)" + raw + _WORD_AFTER if cls_name == "hostname"
                      else _WORD_BEFORE + raw + rb"(?=@[A-Za-z0-9<])")  # <host>: its host already cut
                rx = at if name in words else _WORD_BEFORE + raw + _WORD_AFTER
                rules.append((cls_name, re.compile(rx), (name.encode(),)))
    return tuple(rules)
