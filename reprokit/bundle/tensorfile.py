"""Judging the tensor files a trace kept (trace/tensors/NNNN.{inputs,outputs}.pt) without torch:
`verify` reads them on a machine that may have none, and must never run what a file says.

A file is what torch.save writes: a zip (every member's CRC must hold) of a pickle and one member
per storage. The pickle is read by an Unpickler that knows only torch's tensor rebuild functions,
its storage types and dtypes, and OrderedDict: any other global, and any opcode that builds other
objects, is a problem, never a call. Each tensor's dtype, shape and strides must be what the plan
recorded for that parameter, and its storage member must hold exactly the bytes they need.
"""

from __future__ import annotations

import io
import pickle
import pickletools
import re
import zipfile
from collections import OrderedDict
from dataclasses import dataclass

PREFIX = "trace/tensors/"
_NAME = re.compile(r"^trace/tensors/(\d{4})\.(inputs|outputs)\.pt$")

# torch's legacy storage classes (torch.save's `torch <X>Storage` globals) and the dtypes a
# tensor may have beside an UntypedStorage (`_rebuild_tensor_v3`): name -> bytes per element.
_STORAGES = {"DoubleStorage": ("float64", 8), "FloatStorage": ("float32", 4), "HalfStorage": ("float16", 2),
             "LongStorage": ("int64", 8), "IntStorage": ("int32", 4), "ShortStorage": ("int16", 2),
             "CharStorage": ("int8", 1), "ByteStorage": ("uint8", 1), "BoolStorage": ("bool", 1),
             "BFloat16Storage": ("bfloat16", 2), "UntypedStorage": ("uint8", 1)}
_DTYPES = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2, "int64": 8, "int32": 4, "int16": 2,
           "int8": 1, "uint8": 1, "uint16": 2, "uint32": 4, "uint64": 8, "bool": 1, "float8_e4m3fn": 1,
           "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1, "float8_e8m0fnu": 1}
# What torch.save's pickles are made of; anything else (INST, OBJ, NEWOBJ, BUILD, EXT...) is refused.
_OPCODES = frozenset({
    "PROTO", "FRAME", "STOP", "MARK", "EMPTY_DICT", "EMPTY_TUPLE", "EMPTY_LIST", "TUPLE", "TUPLE1", "TUPLE2",
    "TUPLE3", "SETITEM", "SETITEMS", "APPEND", "APPENDS", "BINPUT", "LONG_BINPUT", "MEMOIZE", "BINGET",
    "LONG_BINGET", "BINUNICODE", "SHORT_BINUNICODE", "BINUNICODE8", "BININT", "BININT1", "BININT2", "LONG1",
    "NEWTRUE", "NEWFALSE", "NONE", "BINFLOAT", "GLOBAL", "STACK_GLOBAL", "REDUCE", "BINPERSID"})


@dataclass(frozen=True)
class _Kind:
    dtype: str
    itemsize: int


@dataclass(frozen=True)
class _Storage:
    key: str
    kind: _Kind
    numel: int


@dataclass(frozen=True)
class Tensor:
    dtype: str
    shape: tuple
    strides: tuple
    offset: int
    storage: _Storage


class _Refused(Exception):
    pass


def _v2(storage, offset, size, stride, requires_grad=False, hooks=None, metadata=None):
    return _tensor(storage, offset, size, stride, storage.kind.dtype if isinstance(storage, _Storage) else None)


def _v3(storage, offset, size, stride, requires_grad=False, hooks=None, dtype=None, metadata=None):
    return _tensor(storage, offset, size, stride, dtype.dtype if isinstance(dtype, _Kind) else None)


def _ints(v) -> bool:
    return isinstance(v, tuple) and all(isinstance(x, int) and not isinstance(x, bool) for x in v)


def _tensor(storage, offset, size, stride, dtype):
    ints = _ints
    if not isinstance(storage, _Storage) or not isinstance(offset, int) or not ints(size) or not ints(stride) \
            or dtype is None or len(size) != len(stride):
        raise _Refused("a tensor record of the wrong shape")
    return Tensor(dtype, size, stride, offset, storage)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if (module, name) == ("torch._utils", "_rebuild_tensor_v2"):
            return _v2
        if (module, name) == ("torch._utils", "_rebuild_tensor_v3"):
            return _v3
        if (module, name) == ("collections", "OrderedDict"):
            return OrderedDict
        if module == "torch" and name in _STORAGES:
            return _Kind(*_STORAGES[name])
        if module == "torch" and name in _DTYPES:
            return _Kind(name, _DTYPES[name])
        raise _Refused(f"names {module}.{name}, which no tensor file needs")

    def persistent_load(self, pid):
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage" and isinstance(pid[1], _Kind)
                and isinstance(pid[2], str) and isinstance(pid[4], int)):
            raise _Refused("a storage reference of the wrong shape")
        return _Storage(pid[2], pid[1], pid[4])


def read(data: bytes) -> tuple[dict, dict]:
    """(parameter -> Tensor, storage key -> its member's size) of a tensor file; _Refused or
    zipfile's errors when it is not one."""
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        bad = z.testzip()
        if bad is not None:
            raise _Refused(f"member {bad} fails its CRC")
        pkl = [n for n in z.namelist() if n.endswith("/data.pkl")]
        if len(pkl) != 1:
            raise _Refused("no data.pkl (not a file torch.save wrote)")
        base = pkl[0][: -len("data.pkl")]
        raw = z.read(pkl[0])
        sizes = {n[len(base) + 5:]: z.getinfo(n).file_size for n in z.namelist() if n.startswith(base + "data/")}
    for op, _, _ in pickletools.genops(raw):
        if op.name not in _OPCODES:
            raise _Refused(f"its pickle uses {op.name}, which no tensor file needs")
    doc = _Unpickler(io.BytesIO(raw)).load()
    if not isinstance(doc, dict) or not all(isinstance(k, str) and isinstance(v, Tensor) for k, v in doc.items()):
        raise _Refused("its pickle is not a table of tensors by parameter name")
    return doc, sizes


def problems(members: dict, plan: dict | None) -> list[str]:
    """One line per problem of each trace/tensors/ member held in `members` (path -> bytes),
    judged against the plan's recorded calls (by the case whose trace.n is the file's number)."""
    calls = {}
    for c in (plan or {}).get("cases") or []:
        n = (c.get("trace") or {}).get("n") if isinstance(c, dict) else None
        if isinstance(n, int):
            calls[n] = ((c.get("call") or {}).get("args") or {})
    out = []
    for rel in sorted(r for r in members if r.startswith(PREFIX)):
        m = _NAME.match(rel)
        if m is None:
            out.append(f"{rel}: not a tensor file a trace writes (trace/tensors/NNNN.inputs.pt or .outputs.pt)")
            continue
        try:
            tensors, sizes = read(members[rel])
        except (_Refused, zipfile.BadZipFile, pickle.UnpicklingError, EOFError, ValueError, KeyError,
                TypeError, IndexError, RecursionError) as e:
            out.append(f"{rel}: damaged or not a tensor file: {e}")
            continue
        n = int(m.group(1))
        if plan is not None and n not in calls:
            out.append(f"{rel}: no traced case {n} in plan.json")
            continue
        for name, t in sorted(tensors.items()):
            out += [f"{rel}: {name}: {why}" for why in _judge(t, sizes, calls.get(n, {}).get(name))]
    return out


def _contiguous(shape: tuple) -> tuple:
    strides: list[int] = []
    step = 1
    for n in reversed(shape):
        strides.insert(0, step)
        step *= max(n, 1)
    return tuple(strides)


def _judge(t: Tensor, sizes: dict, recorded) -> list[str]:
    why = []
    need = t.storage.numel * t.storage.kind.itemsize
    have = sizes.get(t.storage.key)
    if have is None:
        why.append(f"its storage data/{t.storage.key} is missing")
    elif have != need:
        why.append(f"its storage data/{t.storage.key} holds {have} bytes, not the {need} it declares")
    elements = need // _DTYPES.get(t.dtype, 1)
    if all(s > 0 for s in t.shape) and t.offset + sum((s - 1) * st for s, st in zip(t.shape, t.strides)) >= elements:
        why.append("its shape and strides reach past its storage")
    if isinstance(recorded, dict) and "descriptor" in recorded:
        recorded = recorded["descriptor"]
    if isinstance(recorded, dict) and "tensor" in recorded:
        want = (recorded.get("dtype"), tuple(recorded.get("tensor") or ()), tuple(recorded.get("strides") or ()))
        got = (t.dtype, t.shape, t.strides)
        # torch's copy of a view that is not dense (a slice, an expanded tensor) is contiguous: the
        # recorded strides, or the contiguous ones, are what a sound file holds.
        if got != want and (t.dtype, t.shape, t.strides) != (want[0], want[1], _contiguous(want[1])):
            why.append(f"{t.dtype}{list(t.shape)} strides {list(t.strides)}, but the trace recorded "
                       f"{want[0]}{list(want[1])} strides {list(want[2])}")
    return why
