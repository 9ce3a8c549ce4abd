"""Which pointers a kernel only writes (reprokit/trace/inprogram/writeonly.py): those a trace keeps as
zeros among a launch's inputs instead of the uninitialised memory `torch.empty` handed the kernel.
A wrong "write-only" would throw the user's input away, so every doubtful use counts as a read."""

from __future__ import annotations

import pytest

from reprokit.trace.inprogram.writeonly import write_only


def copy(x_ptr, out_ptr, n, BLOCK):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)  # noqa: F821 - read with ast, never run
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)  # noqa: F821


def through_names(x_ptr, out_ptr, n, BLOCK):
    p = out_ptr + tl.arange(0, BLOCK)  # noqa: F821
    q = p + 1
    tl.store(pointer=q, value=tl.load(x_ptr))  # noqa: F821


def read_modify_write(x_ptr, acc_ptr, n):
    old = tl.load(acc_ptr)  # noqa: F821
    tl.store(acc_ptr, old + tl.load(x_ptr))  # noqa: F821


def atomics_and_helpers(a_ptr, b_ptr, c_ptr, d_ptr):
    tl.atomic_add(a_ptr, 1)  # noqa: F821
    helper(b_ptr)  # noqa: F821
    desc = tl.make_tensor_descriptor(c_ptr, [16], [1], [16])  # noqa: F821
    desc.store([0], 1)
    if d_ptr is not None:
        tl.store(d_ptr, 1)  # noqa: F821


def stored_as_a_value(x_ptr, out_ptr):
    tl.store(out_ptr, x_ptr)  # noqa: F821 - a pointer stored as data: its bytes are read


def typed_value(x_ptr, out_ptr, BLOCK):
    # unsloth's _rms_sum_dw_partials: the stored value cast to the output's element type
    offs = tl.arange(0, BLOCK)  # noqa: F821
    tl.store(out_ptr + offs, tl.load(x_ptr + offs).to(out_ptr.dtype.element_ty))  # noqa: F821


def typed_through_a_name(x_ptr, out_ptr):
    dt = out_ptr.dtype.element_ty
    tl.store(out_ptr, tl.load(x_ptr).to(dt))  # noqa: F821


def typed_and_read(x_ptr, out_ptr):
    v = tl.load(out_ptr).to(out_ptr.type.element_ty)  # noqa: F821
    tl.store(out_ptr, v + tl.load(x_ptr))  # noqa: F821


@pytest.mark.parametrize("fn, expected", [
    (copy, {"out_ptr"}),
    (through_names, {"out_ptr"}),
    (read_modify_write, set()),
    (atomics_and_helpers, set()),
    (stored_as_a_value, {"out_ptr"}),
    (typed_value, {"out_ptr"}),          # asking a pointer's type touches no memory
    (typed_through_a_name, {"out_ptr"}),
    (typed_and_read, set()),
])
def test_only_pointers_that_end_in_a_store_are_write_only(fn, expected):
    assert write_only(fn) == frozenset(expected)


def test_a_function_without_source_is_never_write_only():
    assert write_only(len) == frozenset()
    assert write_only(eval("lambda out_ptr: tl.store(out_ptr, 1)")) == frozenset()  # no file to read
