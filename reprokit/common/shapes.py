"""Tensor layout as both sides compute it: a traced argument's strides on the host (sweeps,
traced descriptors), the stand-in and seeded tensors in the stack."""

from __future__ import annotations

from typing import Iterable


def contiguous_strides(shape: Iterable[int]) -> tuple[int, ...]:
    # inlined into reproducers as written here (reprolaunch): a bare `list` keeps their bytes
    strides: list = []  # type: ignore[type-arg]
    acc = 1
    for n in reversed(list(shape)):
        strides.insert(0, acc)
        acc *= max(int(n), 1)
    return tuple(strides)
