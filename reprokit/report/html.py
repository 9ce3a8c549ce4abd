"""The html report: one self-contained page (inline CSS, plots as base64 PNG, no script, no
link to anything) with the environment of each bundle, the verdict grid, plots of what differs
across the stacks and the interesting cases with their evidence. Deterministic like the markdown.
"""

from __future__ import annotations

import base64
from html import escape

from reprokit.compare.normalise import LEVELS
from reprokit.report.markdown import env_lines
from reprokit.report.model import Report, tma_text
from reprokit.report.plots import plots

# The generator meta that marks a report reprokit wrote (reprokit.report.is_report looks for it).
GENERATOR = "reprokit report"

_CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1280px;
 padding:0 16px;color:#1f2328;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;border-bottom:1px solid #d0d7de;padding-bottom:4px;margin-top:28px}
h3{font-size:15px;margin:20px 0 6px}code,pre{font:12px/1.4 ui-monospace,SFMono-Regular,Menlo,monospace}
pre{background:#f6f8fa;border:1px solid #d0d7de;border-radius:6px;padding:8px 10px;overflow-x:auto}
table{border-collapse:collapse;margin:8px 0}th,td{border:1px solid #d0d7de;padding:3px 7px;text-align:left;
 vertical-align:top}th{background:#f6f8fa}td.case{font-family:ui-monospace,monospace;font-size:12px;white-space:nowrap}
td.v{white-space:nowrap}td.v small{color:#57606a;display:block}
.tma{background:#dafbe1}.no-tma{background:#fff8c5}.rejected{background:#ddf4ff}.crashed,.error,.timeout{background:#ffebe9}
.unsupported{background:#f6f8fa;color:#6e7781}.inconclusive{background:#fbefff}.absent{background:#fff;color:#cf222e}
.moved{outline:2px solid #bf8700;outline-offset:-2px;font-weight:600}.notmet .verdict::after{content:" \\2717";color:#cf222e}
.legend{color:#57606a;font-size:12px}figure{margin:12px 0}figure img{max-width:100%;border:1px solid #d0d7de}
figcaption{color:#57606a;font-size:12px}details{margin:6px 0}summary{cursor:pointer;color:#0969da}
.sha{font-family:ui-monospace,monospace;font-size:11px;word-break:break-all}table.env{table-layout:fixed;width:100%}
table.env th:first-child{width:9em}
"""


def _cell(cell, baseline: bool) -> str:
    if not cell.present:
        kind = "absent moved" if cell.moved else "unsupported"
        return f'<td class="v {kind}">{"absent" if cell.moved else "-"}</td>'
    cls = [cell.verdict or "error"]
    if not baseline and cell.change in ("verdict", "metric"):
        cls.append("moved")
    if cell.met is False:
        cls.append("notmet")
    extra = []
    if cell.tma:
        extra.append(f"TMA {tma_text(cell)}")
    res = [f"smem {cell.shared_bytes}" if cell.shared_bytes is not None else "",
           f"regs {cell.registers}" if cell.registers is not None else ""]
    if any(res):
        extra.append(" ".join(x for x in res if x) + (" (no launch)" if cell.fits is False else ""))
    if cell.time_s is not None:
        extra.append(f"{cell.time_s * 1e6:.1f} us" + (f" x{cell.time_ratio:.2f}" if cell.time_ratio else ""))
    title = f' title="{escape(cell.error)}"' if cell.error else ""
    verdict = escape(cell.verdict or "?") + (f" ({escape(cell.status)})" if cell.verdict == "error" else "")
    return (f'<td class="v {" ".join(cls)}"{title}><span class="verdict">{verdict}</span>'
            + "".join(f"<small>{escape(e)}</small>" for e in extra) + "</td>")


def _grid(r: Report) -> list[str]:
    out = ['<table class="grid" id="grid"><thead><tr><th>case</th><th>expect</th>'
           + "".join(f"<th>{escape(f.label)}</th>" for f in r.facts) + "</tr></thead><tbody>"]
    for row in r.grid.rows:
        expect = next((c.expect for c in row.cells if c.present and c.expect), "-")
        out.append(f'<tr data-case="{escape(row.case)}"><td class="case">{escape(row.case)}</td>'
                   f"<td>{escape(expect)}</td>"
                   + "".join(_cell(c, i == 0) for i, c in enumerate(row.cells)) + "</tr>")
    out.append("</tbody></table>")
    out.append(f'<p class="legend">Cells: verdict; TMA data-movement ops per level ({"/".join(LEVELS)}); shared '
               "memory (bytes) and registers. Outlined: moved against the first column; &#x2717;: expectation "
               "not met; (no launch): more shared memory per block than the GPU has.</p>")
    return out


def _env_table(r: Report) -> list[str]:
    rows = [("Triton", "triton"), ("stack", "stack"), ("mode", "mode"), ("GPU", "gpu"), ("driver", "driver"),
            ("CUDA (driver)", "cuda"), ("ptxas that ran", "ptxas"), ("torch", "torch"), ("Python", "python"),
            ("OS", "os"), ("bundle", "file"), ("sha256", "sha256")]
    out = ['<table class="env"><thead><tr><th></th>'
           + "".join(f"<th>{escape(f.label)}</th>" for f in r.facts) + "</tr></thead><tbody>"]
    for name, attr in rows:
        cls = ' class="sha"' if attr == "sha256" else ""
        out.append(f"<tr><th>{name}</th>" + "".join(
            f"<td{cls}>{escape(str(getattr(f, attr)) if getattr(f, attr) is not None else '-')}</td>"
            for f in r.facts) + "</tr>")
    out.append("</tbody></table>")
    return out


def _pre(text: str) -> str:
    return f"<pre>{escape(text)}</pre>"


def _details(summary: str, inner: str) -> str:
    return f"<details><summary>{escape(summary)}</summary>{inner}</details>"


def _finding(r: Report, fnd) -> list[str]:
    plan = r.plan_case(fnd.case)
    out = [f'<section class="finding" id="case-{escape(fnd.case)}"><h3><code>{escape(fnd.case)}</code>: '
           f"{escape(', '.join(fnd.kinds))}</h3>"]
    if plan.get("description"):
        out.append(f"<p>{escape(plan['description'])}. Expected: <code>{escape(plan.get('expect', '?'))}</code>.</p>")
    out.append("<ul>")
    for i, (f, cell) in enumerate(zip(r.facts, fnd.row.cells)):
        rec = r.record(i, fnd.case)
        if not cell.present:
            out.append(f"<li>{escape(f.label)}: not in this bundle</li>")
            continue
        met = {True: "met", False: "not met"}.get(cell.met, "not judged")
        out.append(f"<li>{escape(f.label)}: {escape(cell.status or '?')}, verdict <code>{escape(cell.verdict or '?')}"
                   f"</code> ({met}): {escape(rec.reason if rec else '')}</li>")
    out.append("</ul>")
    for i, f in enumerate(r.facts):
        rec = r.record(i, fnd.case)
        if rec and rec.status in ("crash", "timeout", "compile_error"):
            bits = [f"signal {rec.signal}" if rec.signal else "",
                    f"failing pass {rec.failing_pass}" if rec.failing_pass else ""]
            out.append(f"<p>{escape(f.label)}: {escape(rec.status)}"
                       + "".join(f"; {escape(b)}" for b in bits if b) + "</p>")
            tail = (rec.stderr_tail or rec.error or "").strip()
            if tail:
                out.append(_details(f"compiler output, last lines ({f.label})", _pre(tail[-3000:])))
            mlir = r.reproducer_mlir(i, fnd.case)
            if mlir is not None:
                out.append(_details(f"MLIR reproducer ({f.label}, {rec.artifacts['reproducer']})", _pre(mlir)))
        if i == r.focus(fnd):
            repro = r.standalone(i, fnd.case)
            if repro is not None:
                out.append(_details(f"minimal reproducer ({f.label}): pip install triton=={f.triton} && python "
                                    f"minimal.py (the full one: {repro.path})", _pre(repro.minimal or repro.text)))
        exs = r.excerpts(i, fnd.case)
        if exs:
            out.append(_details(f"IR excerpts ({f.label}): {', '.join(e.level for e in exs)}",
                                _pre("\n\n".join(e.text() for e in exs))))
    out.append("</section>")
    return out


def render(r: Report) -> str:
    labels = [f.label for f in r.facts]
    limits = {v for b in r.bundles if (v := (b.manifest.get("profile") or {}).get("smem_per_block")) is not None}
    figs = plots(r.grid, labels, min(limits) if len(limits) == 1 else None)
    title = f"reprokit report: Triton {', '.join(dict.fromkeys(f.triton for f in r.facts))} on {r.profile}"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">',
           f'<meta name="generator" content="{GENERATOR}">',
           f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
           f"<h1>{escape(title)}</h1>",
           f'<p class="legend">{len(r.grid.rows)} cases of the <code>{escape(r.bundles[0].plan.get("suite", "?"))}'
           f"</code> suite, {len(r.facts)} bundle{'s' if len(r.facts) != 1 else ''}; the first is the baseline.</p>",
           "<h2>Environment</h2>", _pre("\n".join(env_lines(r)))]
    out += _env_table(r)
    out.append("<h2>Cases worth a look</h2>")
    if r.findings:
        out.append("<ul>" + "".join(
            f'<li><a href="#case-{escape(f.case)}"><code>{escape(f.case)}</code></a>: {escape(", ".join(f.kinds))}</li>'
            for f in r.findings) + "</ul>")
    else:
        out.append("<p>None: no crash, every expectation met, no verdict or metric moved.</p>")
    if r.api:
        out.append("<p>API families that come and go:</p><ul>" + "".join(
            f"<li><code>{escape(a.family)}</code>: compiles with {escape(', '.join(a.supported))}; unsupported with "
            + escape("; ".join(f"{lab} ({why})" for lab, why in a.unsupported)) + "</li>" for a in r.api) + "</ul>")
    out.append("<h2>Verdicts</h2>")
    out += _grid(r)
    out.append("<h2>What differs across the stacks</h2>")
    if not figs:
        out.append("<p>Nothing to plot: TMA counts, shared memory, registers and times are the same in every "
                   "column.</p>")
    for p in figs:
        data = base64.b64encode(p.png).decode("ascii")
        out.append(f'<figure id="plot-{p.key}"><img src="data:image/png;base64,{data}" alt="{escape(p.alt)}">'
                   f"<figcaption>{escape(p.title)}</figcaption></figure>")
    if r.findings:
        out.append("<h2>Evidence</h2>")
        for fnd in r.findings:
            out += _finding(r, fnd)
    out.append('<p class="legend">Made by <code>reprokit report</code>; check a bundle with '
               "<code>sha256sum</code> against the table above, then <code>reprokit verify</code>.</p>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"
