"""What counts as a secret: variable names, command-line option names and values that must never
leave the machine.

Used inside the stack by the harness (env.json is redacted where it is taken) and again on the
host by the bundle writer. Standard library only, Python >= 3.9 (reprokit.common), so that it
runs beside any Triton under test.
"""

from __future__ import annotations

import json
import re
from typing import Any, Iterable

MARKER = "<redacted>"

# Words that make a variable name secret when they appear as a whole word (split on _ - . and
# digits), or, for KEY/AUTH/PASS, as the end or start of a compound word (APIKEY, AUTHTOKEN).
_SECRET_WORDS = frozenset(
    {
        "TOKEN", "TOKENS", "SECRET", "SECRETS", "PASSWORD", "PASSWORDS", "PASSWD", "PASS",
        "PASSPHRASE", "CREDENTIAL", "CREDENTIALS", "CREDS", "COOKIE", "COOKIES", "KEY", "KEYS",
        "AUTH", "AUTHORIZATION", "PRIVATE", "DSN", "SESSIONID",
    }
)
_SECRET_SUBSTRINGS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "COOKIE")
_SECRET_SUFFIXES = ("KEY", "KEYS", "AUTH", "PASS")
_SECRET_PREFIXES = ("AUTH",)
# Names that contain a secret-looking word but hold nothing secret; PWD is the working folder.
_NOT_SECRET = frozenset({"PWD", "OLDPWD", "KEYTIMEOUT", "AUTHOR", "AUTHORS", "TOKENIZERS"})

# (hint, pattern): each pattern matches the secret span itself, so that it can be cut out of a
# longer text; the hint is a literal every match contains, for a fast test before the regex.
SECRET_VALUE_PATTERNS: tuple[tuple[str, str], ...] = (
    # PEM private keys (RSA, EC, OPENSSH, PGP, ...), whole block, or up to the end of the
    # base64 run when the END line is missing (a truncated log), escaped newlines included.
    ("PRIVATE KEY", r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----"
                    r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----|[A-Za-z0-9+/=\s\\]*)"),
    # user:password in a URL; the user and the host stay readable.
    ("://", r"(?<=://)[^/\s:@'\"]+:[^/\s@'\"]+(?=@)"),
    ("gh", r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
    ("github_pat_", r"\bgithub_pat_[A-Za-z0-9_]{30,}"),
    ("glpat-", r"\bglpat-[A-Za-z0-9_-]{20,}"),
    ("xox", r"\bxox[abeprs]-[A-Za-z0-9-]{10,}"),
    ("IA", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("hf_", r"\bhf_[A-Za-z0-9]{30,}"),
    ("sk-", r"\bsk-[A-Za-z0-9_-]{20,}"),
    ("AIza", r"\bAIza[0-9A-Za-z_-]{35}"),
    ("npm_", r"\bnpm_[A-Za-z0-9]{36}"),
    ("pypi-", r"\bpypi-AgE[A-Za-z0-9_-]{50,}"),
    ("eyJ", r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"),
    ("uthorization: ", r"(?<=[Aa]uthorization: )\S+(?: \S+)?"),
    ("AUTHORIZATION: ", r"(?<=AUTHORIZATION: )\S+(?: \S+)?"),
    ("Bearer ", r"\bBearer [A-Za-z0-9._~+/-]{16,}=*"),
)
_VALUE_RE = re.compile("|".join(f"(?:{p})" for _, p in SECRET_VALUE_PATTERNS), re.DOTALL)
_WORD_SPLIT = re.compile(r"[^A-Z]+")


def is_secret_name(name: str) -> bool:
    """True for variable names such as HF_TOKEN, AWS_SECRET_ACCESS_KEY, DB_PASS, APIKEY."""
    upper = name.upper()
    if upper in _NOT_SECRET:
        return False
    for word in _WORD_SPLIT.split(upper):
        if not word or word in _NOT_SECRET:
            continue
        if word in _SECRET_WORDS or any(s in word for s in _SECRET_SUBSTRINGS):
            return True
        if word.endswith(_SECRET_SUFFIXES) or word.startswith(_SECRET_PREFIXES):
            return True
    return False


def looks_secret_value(value: str) -> bool:
    """True when the value holds a private key, a URL with a password, or a known token shape."""
    return bool(value) and _VALUE_RE.search(value) is not None


def redact_env(env: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """A copy of `env` with secret values replaced by MARKER, and the sorted redacted names.

    Idempotent: a value that already is MARKER counts as redacted, so the list stays complete
    when the host applies this again to what the harness wrote.
    """
    out = {}
    names = []
    for name, value in env.items():
        text = value if isinstance(value, str) else str(value)
        if text == MARKER or is_secret_name(name) or looks_secret_value(text):
            out[name] = MARKER
            names.append(name)
        else:
            out[name] = value
    return out, sorted(names)


# Parts of a command-line option's name that say its value is secret (`--api-key`, `--db_password`,
# `--hf-token`). Plain KEY and AUTH parts do not (`--sort-key`, `--author`, `--auth-method`): an
# option is not a variable, and those name ordinary settings far more often than secrets.
_OPTION_WORDS = frozenset({"token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pwd",
                           "apikey", "apikeys", "credential", "credentials", "cookie", "cookies", "passphrase"})
_OPTION_PAIRS = frozenset({("api", "key"), ("api", "keys"), ("access", "key"), ("access", "keys"),
                           ("private", "key"), ("private", "keys")})
# Compound parts that end in a secret word: --authtoken, --hftoken, --dbpassword, --accesskey.
_OPTION_ENDINGS = ("token", "secret", "password", "passwd", "apikey", "credentials", "credential", "cookie",
                   "accesskey", "privatekey")
# Counts of tokens, not tokens: --max-tokens 256, --num_tokens, --max-new-tokens.
_TOKEN_COUNTS = frozenset({"max", "min", "num", "new", "n"})
# A NAME=value word of the command (`env GITHUB_TOKEN=... python p.py`): an environment assignment.
_ASSIGNMENT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=(.+)$", re.DOTALL)
_OPTION_SPLIT = re.compile(r"[-_.]+")


def is_secret_option(option: str) -> bool:
    """True for `--api-key`, `--token`, `--db-password`, `--access_key`; False for `--sort-key`."""
    parts = [p for p in _OPTION_SPLIT.split(option.lstrip("-").lower()) if p]
    if parts and parts[-1] == "tokens" and any(p in _TOKEN_COUNTS for p in parts[:-1]):
        return False
    if any(p in _OPTION_WORDS or p.endswith(_OPTION_ENDINGS) for p in parts):
        return True
    return any(pair in _OPTION_PAIRS for pair in zip(parts, parts[1:]))


def redact_argv(argv: Iterable[Any]) -> tuple[list[str], list[tuple[str, str]]]:
    """(argv with secret options' values replaced by MARKER, [(option, value cut)] in argv order).

    `--opt=value`, `--opt value` and their one-dash forms (`-password value`) count; a following
    word that is itself an option (`--token --verbose`) is not taken for the value. So does an
    environment assignment whose name says secret (`env HF_TOKEN=value python p.py`)."""
    out, cut = [], []
    take = None
    for word in argv:
        word = str(word)
        if take is not None:
            if word.startswith("--"):
                take = None
            else:
                out.append(MARKER)
                cut.append((take, word))
                take = None
                continue
        if word.startswith("-") and len(word) > 2 and "=" in word:
            name, value = word.split("=", 1)
            if is_secret_option(name) and value:
                out.append(f"{name}={MARKER}")
                cut.append((name, value))
                continue
        elif word.startswith("-") and len(word) > 2 and is_secret_option(word):
            take = word
        elif (m := _ASSIGNMENT.match(word)) and is_secret_name(m.group(1)) and m.group(2) != MARKER:
            out.append(f"{m.group(1)}={MARKER}")
            cut.append((m.group(1), m.group(2)))
            continue
        out.append(word)
    return out, cut


def cut_values(text: str, values: Iterable[str]) -> str:
    """`text` with each secret value replaced by MARKER: anywhere when it is long enough to be no
    word of its own, else only where it stands apart from letters and digits. The value as a
    program prints it inside a list or a JSON string (`print(sys.argv)`: backslashes and quotes
    escaped) counts too."""
    forms = {form for v in values if v for form in (v, repr(v)[1:-1], json.dumps(v)[1:-1])}
    for value in sorted(forms, key=lambda v: (-len(v), v)):
        if len(value) >= 8:
            text = text.replace(value, MARKER)
        elif value:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(value)}(?![A-Za-z0-9])", MARKER, text)
    return text
