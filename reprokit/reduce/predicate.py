"""What a reduction keeps true: a predicate over one candidate's records on one or more stacks.

    crash            the same failure: status, signal, failing pass and the error's text (paths,
                     addresses and source positions left out), not just any crash
    verdict          the verdict on each named stack stays what the original gave (tma on one
                     release and no-tma on another)
    metric:NAME      NAME (regs, smem, spills, tma:LEVEL, op:NAME@LEVEL) differs between the two
                     stacks by at least the threshold, the same way round as on the original
    wrong            on a GPU: the second stack's output is wrong where the first's (the reference) is
                     not; on one stack, the harness finds it wrong (a traced call against its recorded
                     outputs), the same outputs off with the same bytes as the original's
    slower           on a GPU: the second stack's kernel time is at least (1 + threshold) x the first's;
                     on one stack, x the time the bundle recorded for the case (its reference run),
                     each as a ratio to the same run's baseline where both runs timed one

The predicate sees one *observation* per stack: the few facts of a case record it judges (a JSON
object, so the cache can keep it). Its target comes from the original's observations; a predicate
that does not hold on the original stops the reduction before it starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from reprokit.compare.metric import Metric, parse_metric
from reprokit.errors import UsageError
from reprokit.records import CaseRecord

KINDS = ("crash", "verdict", "metric", "wrong", "slower")
FAILED = ("crash", "compile_error", "timeout")
SIGNATURE = ("status", "signal", "exception", "failing_pass", "error")  # what "the same failure" compares

_PATH = re.compile(r"(?:/[^\s/:'\"()]+)+/([^\s/:'\"()]+)")
_HEX = re.compile(r"0x[0-9a-fA-F]+")
_TAG = re.compile(r"(?:__r[0-9a-f]{12}|__reduced|\.r[0-9a-f]{12})\b")  # a candidate's own file and case names
_POS = re.compile(r"\b(?:at |line )?\d+:\d+\b|\bline \d+\b")


def error_text(text: str | None) -> str:
    """An error line as a signature compares it: paths cut to their file name, addresses and
    positions in the candidate's source left out (they move as the source shrinks)."""
    t = _TAG.sub("", text or "")
    t = _PATH.sub(r"\1", t)
    t = _HEX.sub("0x?", t)
    t = _POS.sub("?", t)
    return re.sub(r"\s+", " ", t).strip()


def observe(rec: CaseRecord | None, metric: Metric | None, read_ir: Callable[[str], str | None] | None) -> dict:
    """The facts of one record that the predicates judge; a missing record is a harness fault."""
    if rec is None:
        return {"status": "harness_error", "verdict": "error", "error": "no record"}
    obs: dict[str, Any] = {"status": rec.status, "verdict": rec.verdict, "signal": rec.signal,
                           "failing_pass": rec.failing_pass, "error": error_text(rec.error),
                           "exception": rec.raw.get("exception")}
    if metric is not None:
        obs["value"] = metric.value(rec, read_ir)
    gpu = dict(rec.gpu or {})
    if gpu:
        obs["gpu_status"] = gpu.get("status")
        bench = gpu.get("bench") or []
        kernel = (bench[0].get("kernel") or {}) if bench and isinstance(bench[0], dict) else {}
        obs["median_ms"] = kernel.get("median_ms")
        base = (bench[0].get("baseline") or {}) if bench and isinstance(bench[0], dict) else {}
        obs["baseline_ms"] = base.get("median_ms")
        outputs = {k: v for k, v in sorted((gpu.get("outputs") or {}).items()) if isinstance(v, dict)}
        obs["outputs"] = {k: v.get("sha256") for k, v in outputs.items()}
        # the outputs off the recorded ones, with the bytes they hold: what "wrong the same way" keeps
        obs["wrong_outputs"] = {k: v.get("sha256") for k, v in outputs.items()
                                if (v.get("reference") or {}).get("match") == "differs"}
    return obs


@dataclass(frozen=True)
class Predicate:
    kind: str
    stacks: tuple[str, ...]          # stack names, in the order the predicate reads them
    metric: Metric | None = None
    threshold: float = 0.0
    target: Mapping[str, Any] = field(default_factory=dict)  # learnt from the original
    reference: Mapping[str, Any] | None = None  # one-stack slower: the bundle's recorded run

    @property
    def spec(self) -> str:
        return f"metric:{self.metric.label}" if self.kind == "metric" and self.metric else self.kind

    @property
    def needs_gpu(self) -> bool:
        return self.kind in ("wrong", "slower")

    def describe(self) -> str:
        t = self.target
        if self.kind == "crash":
            return (f"the same failure on {self.stacks[0]}: {t.get('status')} "
                    f"{'in ' + t['failing_pass'] + ' ' if t.get('failing_pass') else ''}({t.get('error')})")
        if self.kind == "verdict":
            return ", ".join(f"{v} on {s}" for s, v in zip(self.stacks, t.get("verdicts", ())))
        if self.kind == "metric" and self.metric:
            return (f"{self.metric.label} {t.get('before')} on {self.stacks[0]} -> {t.get('after')} on "
                    f"{self.stacks[1]}, moved by at least {self.threshold:g}")
        if self.kind == "wrong":
            if len(self.stacks) == 1:
                wrong = ", ".join(t.get("wrong_outputs") or {})
                return (f"a wrong output on {self.stacks[0]} (against the recorded outputs)"
                        + (f", {wrong} holding the original's very bytes" if wrong else ""))
            return f"a wrong output on {self.stacks[1]}, right on {self.stacks[0]}"
        if len(self.stacks) == 1:
            return f"{self.stacks[0]} at least {1 + self.threshold:g}x as slow as the bundle's recorded run"
        return f"{self.stacks[1]} at least {1 + self.threshold:g}x as slow as {self.stacks[0]}"

    def learn(self, original: list[dict]) -> Predicate | str:
        """This predicate with its target taken from the original's observations (one per
        stack), or why it does not hold on the original."""
        a = original[0]
        if self.kind == "crash":
            if a["status"] not in FAILED:
                return f"the original did not fail on {self.stacks[0]} ({a['status']}, {a['verdict']})"
            return _with(self, {k: a.get(k) for k in SIGNATURE})
        if self.kind == "verdict":
            verdicts = tuple(o["verdict"] for o in original)
            if len(verdicts) > 1 and len(set(verdicts)) == 1:
                return f"the original's verdict is {verdicts[0]} on every stack named"
            return _with(self, {"verdicts": verdicts})
        if self.kind == "wrong" and len(original) == 1:
            # Wrong the same way: the same outputs off the recorded ones, with the same bytes. Any
            # wrong output would do for a kernel that writes nothing (an empty body leaves its
            # output as the program's memory was): that is another failure, not the original's.
            if a.get("gpu_status") != "wrong":
                return f"the original's output is not wrong on {self.stacks[0]} ({a.get('gpu_status') or 'not launched'})"
            return _with(self, {"wrong_outputs": dict(a.get("wrong_outputs") or {})})
        if self.kind == "slower" and len(original) == 1:
            if self.reference is None:
                return "one-stack slower needs the bundle's recorded GPU run of the case"
            ratio = _ratio(dict(self.reference), a)
            if ratio is None or ratio < 1 + self.threshold:
                return f"the original is not {1 + self.threshold:g}x slower than the bundle's recorded run (x{ratio})"
            return _with(self, {"ratio": ratio})
        b = original[1]
        if self.kind == "metric":
            before, after = a.get("value"), b.get("value")
            if before is None or after is None:
                return f"the original has no {self.spec[7:]} on {self.stacks[0 if before is None else 1]}"
            if abs(after - before) < max(self.threshold, 1e-12):
                return f"the original's {self.spec[7:]} moved {before} -> {after}, less than {self.threshold:g}"
            return _with(self, {"before": before, "after": after, "sign": 1 if after > before else -1})
        if self.kind == "wrong":
            if not _wrong(a, b, reference=True) and _wrong(b, a):
                return _with(self, {})
            return f"the original's output is not wrong on {self.stacks[1]} alone"
        ratio = _ratio(a, b)
        if ratio is None or ratio < 1 + self.threshold:
            return f"the original is not {1 + self.threshold:g}x slower on {self.stacks[1]} (x{ratio})"
        return _with(self, {"ratio": ratio})

    def passes(self, index: int, obs: dict) -> bool:
        """Whether a candidate observed so on stack `index` may still hold: one that fails here
        is not compiled on the stacks after it."""
        t = self.target
        if self.kind == "crash":
            return all(obs.get(k) == t.get(k) for k in SIGNATURE)
        if self.kind == "verdict":
            return obs["verdict"] == t["verdicts"][index]
        if self.kind == "metric":
            return obs.get("value") is not None
        return obs["status"] == "ok" and bool(obs.get("gpu_status"))

    def holds(self, observed: list[dict]) -> bool:
        if not all(self.passes(i, o) for i, o in enumerate(observed)):
            return False
        if self.kind in ("crash", "verdict"):
            return True
        if self.kind == "wrong" and len(observed) == 1:
            same = not self.target.get("wrong_outputs") or \
                dict(observed[0].get("wrong_outputs") or {}) == dict(self.target["wrong_outputs"])
            return observed[0].get("gpu_status") == "wrong" and same
        if self.kind == "slower" and len(observed) == 1:
            ratio = _ratio(dict(self.reference or {}), observed[0])
            return ratio is not None and ratio >= 1 + self.threshold
        a, b = observed[0], observed[1]
        if self.kind == "metric":
            delta = (b["value"] - a["value"]) * self.target["sign"]
            return delta >= max(self.threshold, 1e-12)
        if self.kind == "wrong":
            return not _wrong(a, b, reference=True) and _wrong(b, a)
        ratio = _ratio(a, b)
        return ratio is not None and ratio >= 1 + self.threshold


def _with(p: Predicate, target: dict) -> Predicate:
    return Predicate(p.kind, p.stacks, p.metric, p.threshold, target, p.reference)


def _wrong(o: dict, other: dict, reference: bool = False) -> bool:
    """A wrong output: the harness said so, or (not for the reference) an output's digest
    differs from the reference stack's."""
    if o.get("gpu_status") == "wrong":
        return True
    if reference:
        return False
    mine, theirs = o.get("outputs") or {}, other.get("outputs") or {}
    return any(theirs.get(k) is not None and v != theirs.get(k) for k, v in mine.items())


def _ratio(a: dict, b: dict) -> float | None:
    """b's time over a's: as ratios to each run's own baseline where both timed one (what a
    board or clock change moves cancels out), else the kernel medians."""
    ta, tb = a.get("median_ms"), b.get("median_ms")
    if not (ta and tb):
        return None
    ba, bb = a.get("baseline_ms"), b.get("baseline_ms")
    if ba and bb:
        return round((tb / bb) / (ta / ba), 4)
    return round(tb / ta, 4)


def parse(spec: str | None, stacks: tuple[str, ...], threshold: float | None, default_kind: str) -> Predicate:
    """A Predicate from --predicate (None: the case's own failure, `default_kind`), the stacks
    it reads and --threshold; UsageError naming what is wrong."""
    text = (spec or default_kind).strip()
    kind, _, rest = text.partition(":")
    if kind not in KINDS or (kind == "metric") != bool(rest):
        raise UsageError(f"--predicate {text!r}: expected crash, verdict, metric:NAME, wrong or slower")
    metric = parse_metric(rest, None) if kind == "metric" else None
    if metric is not None and metric.kind == "verdict":
        raise UsageError("--predicate metric:verdict: use --predicate verdict")
    two = kind == "metric" or (kind in ("wrong", "slower") and len(stacks) != 1)
    if two and len(stacks) != 2:
        raise UsageError(f"--predicate {text}: name two stacks, the reference first (--stacks A,B)")
    if not two and kind == "crash" and len(stacks) != 1:
        raise UsageError("--predicate crash: name one stack (--stacks A), or leave --stacks out for the bundle's own")
    if threshold is not None and threshold < 0:
        raise UsageError(f"--threshold must be 0 or more, got {threshold:g}")
    default = {"metric": 1.0, "slower": 0.1}.get(kind, 0.0)
    return Predicate(kind, stacks, metric, default if threshold is None else float(threshold))
