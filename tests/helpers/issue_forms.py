"""A checker of GitHub issue bodies against triton-lang/triton's issue forms, from the fields the
forms declare (tests/data/triton_issue_templates.json: labels, order, required, read from the
templates at the commits it names). GitHub renders a submitted form as `### <label>` then the
value, one per field, in the form's order."""

from __future__ import annotations

import json
import re
from pathlib import Path

TEMPLATES = json.loads((Path(__file__).resolve().parents[1] / "data" / "triton_issue_templates.json").read_text())
_MARK = "<!-- Made by `reprokit report`"


def bodies(text: str) -> list[str]:
    """The issue bodies a report file holds, each starting with its own comment."""
    assert text.startswith(_MARK), text[:200]
    return [_MARK + part.rstrip("\n-").rstrip() + "\n" for part in text.split(_MARK)[1:]]


def template_of(body: str) -> str:
    m = re.search(r"the (\w+\.yml) template", body.split("\n", 2)[0])
    assert m, body.split("\n", 1)[0]
    return m.group(1)


def _fields(body: str) -> list[tuple[str, str]]:
    """(heading, text under it) for each `### ` heading outside fenced blocks."""
    out, fence, current = [], None, None
    for line in body.splitlines():
        m = re.match(r"^(`{3,})", line)
        if m:
            fence = None if fence and line.startswith(fence) and line.strip() == fence else (fence or m.group(1))
        if fence is None and line.startswith("### "):
            current = [line[4:].strip(), []]
            out.append(current)
        elif current is not None:
            current[1].append(line)
    return [(h, "\n".join(lines).strip()) for h, lines in out]


def problems(body: str) -> list[str]:
    """What keeps `body` from being a valid submission of the template it names (empty: valid)."""
    name = template_of(body)
    form = TEMPLATES["templates"].get(name)
    if form is None:
        return [f"names {name}, which is not one of {sorted(TEMPLATES['templates'])}"]
    want = [f["label"] for f in form["fields"] if f["type"] == "textarea"]
    got = _fields(body)
    out = []
    if [h for h, _ in got] != want:
        out.append(f"{name}: fields {[h for h, _ in got]} are not the form's {want}")
    values = dict(got)
    for f in form["fields"]:
        if f.get("required") and not values.get(f["label"], "").strip():
            out.append(f"{name}: required field {f['label']!r} is empty")
        for shape in f.get("placeholder", []):
            key = shape.split(":")[0] + ":"
            if not re.search(rf"^{re.escape(key)} \S", values.get(f["label"], ""), re.M):
                out.append(f"{name}: {f['label']!r} has no '{key} ...' line")
    return out
