"""The markdown report: ready issue bodies for triton-lang/triton, one per template its findings
need (bug_report.yml for a compiler that fails or gives wrong results, bad_codegen.yml for a
correct compile that misses what was expected of its code, performance.yml for a slowdown), each
filling its template's fields ("Describe the bug" or "Describe the issue", with the minimal
reproducer, observed against expected; then "Environment details", starting "Triton: ... GPU:
..."). Long parts sit in <details>. With --newest, each finding says whether the newest release
still shows it ("fixed in X.Y.Z"), and fixed ones stay out of the suggested title.

Deterministic: the same bundles in the same order give the same bytes (no clock, no paths but
bundle file names). Each body stays under 60000 characters (GitHub refuses 65536): the least
telling sections are shortened, step by step, and the files left out are listed with their path
in the bundle and their sha256.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from reprokit.compare.grid import moved_summary
from reprokit.compare.metric import Metric
from reprokit.compare.normalise import LEVELS
from reprokit.compare.transitions import transitions
from reprokit.report.findings import Finding, by_template
from reprokit.report.model import Report, tma_text

# GitHub refuses an issue body over 65536 characters; a body stays under 60000, leaving room to edit.
BODY_LIMIT = 60000
_DETAIL = ("full", "no-ir", "no-script", "short")   # how much of a finding's section a body keeps
_MAX_TAIL = 1500                        # characters of a crash's stderr tail shown


def _esc(text) -> str:
    """Compiler words as markdown text on one line: pipes escaped (table cells), and angle
    brackets, which GitHub would take for html tags and drop (`tensor<128x4xf16>`)."""
    return (str(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")
            .replace("\n", " ").strip())


def fence(text: str, lang: str = "") -> list[str]:
    """A fenced block longer than any backtick run inside `text`."""
    runs = [len(m) for m in re.findall(r"`+", text)]
    ticks = "`" * max(3, max(runs, default=0) + 1)
    return [ticks + lang, text.rstrip("\n"), ticks]


def details(summary: str, body: list[str]) -> list[str]:
    # GitHub renders markdown inside <details> only after a blank line.
    return ["<details>", f"<summary>{summary}</summary>", "", *body, "", "</details>", ""]


def cell_md(cell, *, baseline: bool) -> str:
    if not cell.present:
        return "**absent**" if cell.moved else "-"
    text = cell.verdict or "?"
    if cell.verdict == "error":   # the one verdict several statuses share
        text += f" ({cell.status})"
    if not baseline and cell.change in ("verdict", "metric"):
        text = f"**{text}**"
    counts = tma_text(cell)
    if counts:
        text += f" {counts}"
    if cell.time_s is not None:
        text += f" {cell.time_s * 1e6:.1f} us" + (f" x{cell.time_ratio:.2f}" if cell.time_ratio is not None else "")
    if cell.met is False:
        text += " ✗"
    if cell.fits is False:
        text += " (no launch)"
    return _esc(text)


def grid_lines(r: Report) -> list[str]:
    cols = [f.label for f in r.facts]
    lines = ["| case | expect | " + " | ".join(_esc(c) for c in cols) + " |",
             "|---|---|" + "---|" * len(cols)]
    for row in r.grid.rows:
        expect = next((c.expect for c in row.cells if c.present and c.expect), "-")
        lines.append(f"| `{row.case}` | {expect} | "
                     + " | ".join(cell_md(c, baseline=i == 0) for i, c in enumerate(row.cells)) + " |")
    lines += ["", f"Cells: verdict, then TMA data-movement ops per level ({'/'.join(LEVELS)}), then on a GPU the "
                  "median time per launch and its ratio to the first column; "
                  "**bold**: a verdict or metric moved against the first column; ✗: the expectation was not met; "
                  "(no launch): needs more shared memory per block than the GPU has.", ""]
    return lines


def _same(values: list) -> bool:
    return len(set(values)) == 1


def env_lines(r: Report) -> list[str]:
    """The 'Triton: ... GPU: ...' block, one value where every bundle agrees."""
    fs = r.facts

    def per(attr: str, fmt=lambda v: v) -> str:
        vals = [getattr(f, attr) for f in fs]
        if _same(vals):
            return fmt(vals[0]) if vals[0] is not None else "unknown"
        return "; ".join(f"{fmt(v) if v is not None else 'unknown'} ({f.label})" for v, f in zip(vals, fs))

    gpu = per("gpu")
    driver = per("driver")
    cuda = per("cuda")
    lines = [
        "Triton: " + ", ".join(dict.fromkeys(f.triton for f in fs)),
        f"GPU: {gpu}; profile {r.profile_key}",
        f"Driver: {driver}, CUDA {cuda} (NVML)" if any(f.driver for f in fs) else "Driver: none (compile-only, no GPU)",
        f"ptxas that ran: {per('ptxas')}",
        f"torch: {per('torch')}; Python: {per('python')}; OS: {per('os')}",
        f"Mode: {per('mode')}",
    ]
    return lines


def bundle_table(r: Report) -> list[str]:
    lines = ["| column | bundle | sha256 |", "|---|---|---|"]
    for f in r.facts:
        lines.append(f"| {_esc(f.label)} | `{_esc(f.file)}` | `{f.sha256}` |")
    return lines + ["", "Check one with `sha256sum FILE` against the table, then `reprokit verify FILE`; "
                        "`reprokit replay FILE` reruns its own plan and kernels.", ""]


def _observed(r: Report, case: str) -> list[str]:
    out = []
    row = r.grid.row(case)
    for f, cell in zip(r.facts, row.cells):
        if not cell.present:
            out.append(f"- {f.label}: not in this bundle")
            continue
        rec = r.record(r.facts.index(f), case)
        met = {True: "met", False: "**not met**"}.get(cell.met, "not judged")
        out.append(f"- {f.label}: {cell.status}, verdict `{cell.verdict}` ({met}): {_esc(rec.reason if rec else '')}")
        moved = moved_summary(cell, max_ops=6)
        if moved:
            out.append(f"  - moved against {_esc(r.facts[0].label)}: " + ", ".join(f"`{p}`" for p in moved.split(", ")))
    return out


def _crash_parts(r: Report, case: str) -> list[str]:
    out = []
    for i, f in enumerate(r.facts):
        rec = r.record(i, case)
        if not rec or rec.status not in ("crash", "timeout", "compile_error"):
            continue
        what = {"crash": "crashed", "timeout": "hung past its timeout", "compile_error": "rejected it"}[rec.status]
        facts = [f"The {f.label} compiler {what}"]
        if rec.signal:
            facts.append(f"signal {rec.signal}")
        if rec.failing_pass:
            facts.append(f"failing pass `{rec.failing_pass}`")
        out.append("; ".join(facts) + ".")
        out.append("")
        error = (rec.error or "").strip()
        tail = (rec.stderr_tail or "").strip()
        if len(tail) > _MAX_TAIL:
            tail = "..." + tail[-_MAX_TAIL:]
        if rec.status == "crash" and tail:
            out += fence(tail) + [""]       # an abort's last words are short and are the evidence
        else:
            out += fence(error or tail) + [""]
            if tail and tail != error:
                out += details(f"the compiler's stderr, last lines ({f.label})", fence(tail))
        mlir = r.reproducer_mlir(i, case)
        if mlir is not None:
            rel = rec.artifacts["reproducer"]
            out += details(f"MLIR reproducer of the failing pass ({f.label}, <code>{rel}</code>)",
                           [f"Run with `triton-opt --run-reproducer {rel.rsplit('/', 1)[-1]}` "
                            "(triton-opt comes with a source build of Triton).", "", *fence(mlir, "mlir")])
    return out


def _excerpt_parts(r: Report, case: str) -> list[str]:
    out = []
    shown: dict = {}
    for i, f in enumerate(r.facts):
        exs = r.excerpts(i, case)
        if not exs:
            continue
        text = "\n\n".join(e.text() for e in exs)
        if text in shown:
            out.append(f"IR of {f.label}: the same lines as {shown[text]}.")
            out.append("")
            continue
        shown[text] = f.label
        kinds = {e.kind for e in exs}
        what = "around its TMA ops" if kinds == {"tma"} else (
            "where TMA ops would be (its global loads and stores)" if "tma" not in kinds else "around TMA ops or loads")
        out += details(f"IR of {f.label}, {what}: {', '.join(e.level for e in exs)}", fence(text))
    return out


def finding_section(r: Report, fnd, detail: str) -> list[str]:
    plan = r.plan_case(fnd.case)
    lines = [f"#### `{fnd.case}`: {', '.join(fnd.kinds)}", ""]
    if plan.get("description"):
        lines += [f"{_esc(plan['description'])}. Expected: `{plan.get('expect', '?')}`.", ""]
    lines += _observed(r, fnd.case) + [""]
    if detail == "short":
        return lines + [f"Its IR, logs and any MLIR reproducer are in each bundle under `cases/{fnd.case}/`.", ""]
    lines += _crash_parts(r, fnd.case)
    if detail in ("full", "no-ir"):
        lines += _standalone_part(r, fnd)
    else:
        lines += [f"Its standalone reproducer is `cases/{fnd.case}/reproducer.py` in the bundles that carry one "
                  f"(`reprokit report` makes it for older ones).", ""]
    if detail == "full":
        lines += _excerpt_parts(r, fnd.case)
    return lines


def _standalone_part(r: Report, fnd) -> list[str]:
    i = r.focus(fnd)
    if i is None:
        return []
    repro = r.standalone(i, fnd.case)
    if repro is None:
        return []
    f = r.facts[i]
    origin = "the bundle carries it" if repro.source == "bundle" else "made from the bundle's plan and kernel source"
    return details(f"Minimal reproducer ({f.label}): needs only Triton, no GPU",
                   [f"`pip install triton=={f.triton} && python minimal.py`: the kernel and its compile, nothing "
                    "else. The full reproducer, which judges the verdict on any release from 3.0 "
                    f"(`python reproducer.py --expect none` there), is `{repro.path}` ({origin}).", "",
                    *fence(repro.minimal or repro.text, "python")])


def _summary(r: Report, found: list, template: str) -> list[str]:
    tritons = ", ".join(dict.fromkeys(f"{f.triton}" for f in r.facts))
    n = len(found)
    head = (f"reprokit ran the `{r.bundles[0].plan.get('suite', '?')}` suite ({len(r.grid.rows)} cases) with "
            f"Triton {tritons} for {r.profile}. "
            + (f"{n} case{'s' if n != 1 else ''} need{'s' if n == 1 else ''} a look as {_TEMPLATE_WORDS[template]}:"
               if n else "Nothing needs a look."))
    lines = [head, ""]
    for fnd in found:
        row = fnd.row
        where = [f.label for f, c in zip(r.facts, row.cells) if c.present and (
            ("crash" in fnd.kinds and c.status in ("crash", "timeout")) or
            ("not met" in fnd.kinds and c.met is False) or ("rejected" in fnd.kinds and c.verdict == "rejected"))]
        verdicts = " → ".join(f"{c.verdict}" if c.present else "absent" for c in row.cells)
        newest = _newest_words(r, fnd)
        lines.append(f"- `{fnd.case}` ({', '.join(fnd.kinds)}): {verdicts}"
                     + (f" ({', '.join(where)})" if where and len(r.facts) > 1 else "")
                     + (f"; {newest}" if newest else ""))
    others = [f for f in r.findings if f not in found]
    if others:
        lines += ["", "Filed apart, with their own templates: "
                  + "; ".join(f"`{f.case}` ({_TEMPLATE_WORDS[f.template]})" for f in others) + "."]
    if r.api:
        lines += ["", "API families that come and go (not bugs, listed for the record):", ""]
        for a in r.api:
            lines.append(f"- `{a.family}`: compiles with {', '.join(a.supported)}; unsupported with "
                         + "; ".join(f"{lab} ({_esc(why)})" for lab, why in a.unsupported))
    return lines + [""]


def _newest_words(r: Report, fnd) -> str:
    """With --newest: what the newest release does with the case, and "fixed in X" where the
    problem is gone there."""
    if r.newest is None:
        return ""
    cell = r.newest_cell(fnd.case)
    if cell is None or not cell.present:
        return f"newest release (Triton {r.newest.triton}): not in its bundle"
    state = f"{cell.status}, verdict `{cell.verdict}`"
    if r.fixed_in(fnd) is not None and cell.status == "unsupported":
        return f"**no longer reproducible in {r.newest.triton}**: its API is gone there ({_esc(cell.error or 'unsupported')})"
    if r.fixed_in(fnd) is not None:
        return f"**fixed in {r.newest.triton}** ({state})"
    return f"still there in the newest release, Triton {r.newest.triton} ({state})"


# Each template's fields (headings), and the words the body uses for it: the templates of
# triton-lang/triton's .github/ISSUE_TEMPLATE (bug_report.yml, bad_codegen.yml, performance.yml).
TEMPLATE_FILES = {"bug": "bug_report.yml", "bad_codegen": "bad_codegen.yml", "performance": "performance.yml"}
DESCRIBE = {"bug": "Describe the bug", "bad_codegen": "Describe the issue", "performance": "Describe the issue"}
_TEMPLATE_WORDS = {"bug": "a bug", "bad_codegen": "bad codegen", "performance": "a performance issue"}


def render(r: Report, *, limit: int = BODY_LIMIT) -> str:
    """One issue body per template the findings need (a bug, bad codegen, a performance issue),
    each shortened (least telling sections first) until it fits `limit`."""
    groups = by_template(r.findings) or [("bug", [])]
    bodies = [_fit(r, found, tpl, k, len(groups), limit) for k, (tpl, found) in enumerate(groups, start=1)]
    return "\n---\n\n".join(bodies)


def _fit(r: Report, found: list, template: str, k: int, n: int, limit: int) -> str:
    detail = ["full"] * len(found)
    sections: dict = {}

    def section(j: int, d: str) -> list[str]:
        if (j, d) not in sections:
            sections[(j, d)] = finding_section(r, found[j], d)
        return sections[(j, d)]

    while True:
        text = _assemble(r, found, template, k, n, detail, section)
        if len(text) <= limit:
            return text
        # Shorten the last finding that can still be shortened: least telling first.
        for j in range(len(detail) - 1, -1, -1):
            if detail[j] != "short":
                detail[j] = _DETAIL[_DETAIL.index(detail[j]) + 1]
                break
        else:
            return text   # only the grid and summaries are left; nothing more to take out


def title(r: Report, found: Sequence[Finding] | None = None) -> str:
    """A suggested issue title: the most telling finding that the newest release (when given) still
    shows, with the Triton releases it was seen on."""
    tritons = ", ".join(dict.fromkeys(f.triton for f in r.facts))
    found = r.findings if found is None else found
    open_ = [f for f in found if r.fixed_in(f) is None]
    if not open_:
        if found:  # each is fixed in the newest release: fixed_in names it
            return f"[{r.profile_key}] Triton {tritons}: no finding reproduces in {r.fixed_in(found[0])}"
        return f"[{r.profile_key}] Triton {tritons}: every expectation met, no verdict or metric moved"
    fnd = open_[0]
    kind = fnd.kinds[0]
    cells = [(f, c) for f, c in zip(r.facts, fnd.row.cells) if c.present]
    if kind == "crash":
        hit = [(f, c) for f, c in cells if c.status in ("crash", "timeout")]
        rec = r.record(r.facts.index(hit[0][0]), fnd.case)
        what = f"compiler {'hangs' if hit[0][1].status == 'timeout' else 'crashes'}" + (
            f" ({rec.signal})" if rec and rec.signal else "") + f" on {fnd.case}"
    elif kind == "not met":
        hit = [(f, c) for f, c in cells if c.met is False]
        what = f"{fnd.case} gives {hit[0][1].verdict}, expected {hit[0][1].expect}"
    elif kind == "rejected":
        hit = [(f, c) for f, c in cells if c.verdict == "rejected"]
        what = f"{fnd.case} rejected" + (f" in {hit[0][1].failing_pass}" if hit[0][1].failing_pass else "")
    elif kind == "metric":
        hit = [(f, c) for f, c in cells if c.metrics]
        what = f"{fnd.case}: " + ", ".join(m.text() for m in hit[-1][1].metrics) if hit else fnd.case
        hit = hit or cells
    else:
        hit = cells
        what = f"{fnd.case}: " + " -> ".join(c.verdict or "?" for _, c in cells)
    seen = ", ".join(dict.fromkeys(f.triton for f, _ in hit))
    more = f" (+{len(open_) - 1} more)" if len(open_) > 1 else ""
    return f"[{r.profile_key}] Triton {seen}: {what}{more}"


def _left_out(r: Report, fnd, detail: str) -> str:
    """What a shortened section no longer shows (only what it would have shown)."""
    if detail == "short":
        return "all but its verdicts"
    parts = []
    if any(r.excerpts(i, fnd.case) for i in range(len(r.facts))):
        parts.append("IR excerpts")
    if detail == "no-script" and (i := r.focus(fnd)) is not None and r.standalone(i, fnd.case):
        parts.append("minimal reproducer")
    return " and ".join(parts)


def _attached(r: Report, fnd) -> list[str]:
    """The files of a shortened finding, each by its path in a bundle and its sha256: what a
    reader fetches from the bundle instead."""
    i = r.focus(fnd)
    if i is None:
        return []
    files = [f for f in r.bundles[i].manifest.get("files", []) if f["path"].startswith(f"cases/{fnd.case}/")]
    return [f"  - `{r.facts[i].file}`: `{f['path']}` sha256 `{f['sha256']}`" for f in files]


def reduced_parts(r: Report) -> list[str]:
    """The kernel `reprokit reduce` left, from each bundle it made (its plan says "reduced")."""
    lines: list[str] = []
    for f, b in zip(r.facts, r.bundles):
        red = b.plan.get("reduced")
        if not isinstance(red, dict) or f"kernels/{red.get('file')}" not in b.data:
            continue
        a, z = red.get("from") or {}, red.get("to") or {}
        lines += [f"#### Reduced `{red.get('case')}` ({f.label})", "",
                  f"`reprokit reduce` shrank it from {a.get('lines')} lines / {a.get('nodes')} AST nodes to "
                  f"{z.get('lines')} / {z.get('nodes')} while this held: {_esc(red.get('holds', ''))}. "
                  f"The kernel (`kernels/{red['file']}` in the bundle):", "",
                  *fence(b.read_text(f"kernels/{red['file']}"), "python")]
    return lines


def _version_key(text: str) -> tuple:
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.+-]", text))


@dataclass(frozen=True)
class _Point:
    version: str
    value: object
    runs: bool


def release_parts(r: Report) -> list[str]:
    """With bundles of three or more releases (a `bisect --scan`): each case's transitions,
    release by release, in verdict, registers and shared memory."""
    versions = {f.triton for f in r.facts}
    if len(versions) < 3 or len(versions) != len(r.facts):
        return []
    order = sorted(range(len(r.facts)), key=lambda i: _version_key(r.facts[i].triton))
    lines: list[str] = []
    for row in r.grid.rows:
        said = []
        for metric in (Metric("verdict"), Metric("regs"), Metric("smem")):
            points = []
            for i in order:
                rec = r.record(i, row.case)
                if rec is not None:
                    points.append(_Point(r.facts[i].triton, metric.value(rec), rec.status != "unsupported"))
            # Starting or stopping to run is said once, with the verdicts.
            said += [t.text(metric) for t in transitions(points, metric)
                     if metric.kind == "verdict" or t.kind not in ("supported", "unsupported")]
        if said:
            lines.append(f"- `{row.case}`: " + "; ".join(dict.fromkeys(said)))
    if not lines:
        return []
    span = " ".join(r.facts[i].triton for i in order)
    return ["#### Across releases", "", f"Triton {span}, each captured:", "", *lines, ""]


def _assemble(r: Report, found: list, template: str, k: int, n: int, detail: list[str], section) -> str:
    which = f" Issue {k} of {n}:" if n > 1 else ""
    url = f"https://github.com/triton-lang/triton/issues/new?template={TEMPLATE_FILES[template]}"
    lines = ["<!-- Made by `reprokit report` from the bundles listed under Environment details." + which
             + f" Paste as the body of an issue with the {TEMPLATE_FILES[template]} template: {url}",
             f"     Suggested title: {title(r, found).replace('--', '- -')} -->",
             "", f"### {DESCRIBE[template]}", ""]
    lines += _summary(r, found, template)
    lines += reduced_parts(r) + release_parts(r)
    lines += ["#### Verdicts", ""] + grid_lines(r)
    for j, d in enumerate(detail):
        lines += section(j, d)
    cut = [(f, what) for f, d in zip(found, detail) if d != "full" and (what := _left_out(r, f, d))]
    if cut:
        lines += [f"_Shortened to fit under {BODY_LIMIT} characters; left out here, and attached in the bundles:_", ""]
        for f, what in cut:
            lines.append(f"- `{f.case}` ({what}):")
            lines += _attached(r, f)
        lines.append("")
    lines += ["### Environment details", ""] + fence("\n".join(env_lines(r))) + [""] + bundle_table(r)
    return "\n".join(lines).rstrip("\n") + "\n"
