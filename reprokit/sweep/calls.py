"""A sweep whose base is a project's declared case (reprokit.toml `[[sweep]]`, docs/user-cases.md):
each point is that case's call with the point's values put where they belong.

A group carries the base case as its plan case (`call["case"]`), what each swept name is
(`kinds`: an argument, a launch option, the grid, the autotune `config`, or a meta-parameter or
option of the autotuner's configs: `tuned`), and how a point's value reads back as the call's
JSON (`values`: a tensor, None or dtype value is a label in the grid, a number stays a number so
that product rules can compare it). One-at-a-time, a point carries only what moved from the
base (a point on the `config` axis is that config as declared); in a product, every axis's value.
On an autotuned kernel every point compiles one config (`autotune.config`), and what moves the
config's own values travels as `call.tune`, which the harness applies over the config before its
pre_hook (reprokit.harness.call.bind).
"""

from __future__ import annotations

import copy
import json

from reprokit.common.shapes import contiguous_strides


def encode(value):
    """A value as a grid's params hold it: numbers, bools and strings as they are; anything
    else (a tensor, None, a dtype, a grid or tuple) by its label."""
    if isinstance(value, (bool, int, float, str)):
        return value
    return label(value)


def label(value) -> str:
    """A short, readable label: `float16_64x1024` for a tensor, `none`, a dtype's name, `16x16`."""
    if isinstance(value, list):
        return "x".join(label(v) for v in value)
    if isinstance(value, dict):
        if value.get("none") is True:
            return "none"
        if set(value) == {"dtype"}:
            return str(value["dtype"])
        if "tensor" in value:
            out = f"{value.get('dtype', 'float32')}_{'x'.join(map(str, value['tensor'])) or 'scalar'}"
            if value.get("align", 16) != 16:
                out += f"_a{value['align']}"
            if value.get("strides") not in (None, list(contiguous_strides(value["tensor"]))):
                out += "_s" + "x".join(map(str, value["strides"]))
            return out
        if "descriptor" in value:
            return f"desc_{label(value['descriptor'])}_b{'x'.join(map(str, value.get('block', [])))}"
    return str(value).lower()


def point_case(point, group, sweep: str, timeout_s: float, sass: bool) -> dict:
    """The plan case of one point of a group whose base is a declared call."""
    info = group.call
    case = copy.deepcopy(info["case"])
    call = case["call"]
    call.setdefault("options", {})
    config = info.get("config")
    autotuned = config is not None
    tune: dict = {}
    for key, enc in point.params.items():
        if group.vary != "product" and group.base.get(key) == enc:
            continue  # the base call already says it
        kind = info["kinds"][key]
        value = info["values"].get(key, {}).get(json.dumps(enc), enc)
        if kind == "config":
            config = value
        elif kind == "grid":
            call["grid"] = list(value)
        elif kind == "tuned" or (kind == "option" and autotuned):
            tune[key] = value
        elif kind == "option":
            call["options"][key] = value
        else:
            call["args"][key] = value
    if autotuned:
        case["autotune"] = {"config": config, **({"count": info["count"]} if info.get("count") else {})}
        if tune:
            call["tune"] = dict(sorted(tune.items()))
    else:
        case["autotune"] = None  # settled: the harness neither expands it nor asks the file again
    case.pop("configs", None)
    moved = {**call["options"], **tune}
    for k in ("num_warps", "num_stages"):
        if k in moved:
            case[k] = int(moved[k])
    what = (f"moves {point.axis} to {point.label}" if point.axis else
            "the base point" if point.id.endswith(".base") else "grid point")
    case.update({
        "id": point.id, "description": f"{sweep}: {info['source']} {what}",
        "timeout_s": timeout_s, "sass": sass,
        "sweep": {"group": group.name, "axis": point.axis, "label": point.label, "name": point.name,
                  "params": dict(point.params)},
    })
    return case
