"""Counts that generated test suites report at the end of a session (how many doc examples ran,
how many bad arguments were tried), so that CI's log shows what a green run covered."""

from __future__ import annotations

_COUNTS: dict[str, str] = {}


def record(name: str, text: str) -> None:
    _COUNTS[name] = text


def lines() -> list[str]:
    return [f"{name}: {_COUNTS[name]}" for name in sorted(_COUNTS)]
