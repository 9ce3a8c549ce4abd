"""Standalone per-case reproducers: one small Python file per case that needs only Triton.

`reproducer_source(case, plan, kernel_source)` returns the file's text: the kernel module as the
bundle carries it, verbatim, then the ahead-of-time compile of the case (and of the P0 that gates
it, if any), the TMA oracle's patterns inlined, and the verdict. No reprokit import, no GPU:
`pip install triton==X && python reproducer.py`. The script probes the installed Triton for the
ASTSource form it takes (as the harness's `compat` does) and for the APIs the case requires, so
the same file answers on every release from 3.0 to the newest: `unsupported` where the API is gone.

Each compile runs in a child process of the script, so a compiler that aborts (SIGABRT) or
hangs is reported as such instead of taking the script down. Only a child that dies *inside*
`triton.compile` is `crashed`: an exception of the script's own (building the ASTSource, an
import, anything outside the compile) is `script_error`, printed with its traceback, exit 2, and
never counted as a reproduction. `--expect recorded` (the default) exits 0 when the verdict equals
the recorded one (or none was recorded) and 1 when it differs; `--expect none` only says what
happens on this release (exit 0). `--json` prints the evidence as one JSON object. `--launch`
then runs the case on a GPU (or under TRITON_INTERPRET=1) and checks its output, with the GPU
run's own code inlined (reprokit.harness.reprolaunch). A declared call (kind "call") gets a
script when its record holds the JIT's specialisation; it has no minimal one.

Pure stdlib and free of Triton at import: the harness writes one per case into the capture
(cases/<id>/reproducer.py), and the host makes them for any older bundle from its plan.json and
kernels/. The compile is compile-only for the plan's GPU profile, whatever the plan's mode.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import pprint
import re

from reprokit.common import oracle
from reprokit.harness import astsource, minimal, reprolaunch, toolbox
from reprokit.harness.kinds import callcase
from reprokit.harness.reprolaunch import inline as _inline

FILE_NAME = "reproducer.py"
ARTIFACT = "reproducer_py"  # results.json artifact key ("reproducer" is the MLIR one)

# How ASTSource takes a kernel's signature, by release (astsource.make_source probes the same):
# "index": 3.0-3.1, index-keyed, constants= and AttrsDescriptor(divisible_by_16=...);
# "hints": 3.2, name-keyed runtime arguments, constants= and AttrsDescriptor.from_hints;
# "constexprs": 3.3+, name-keyed with "constexpr" entries, constexprs= and path-keyed attrs.
FORMS = ("index", "hints", "constexprs")
# What a recorded result keeps in the script, to compare against.
_RECORDED_KEYS = ("status", "verdict", "tma")


# The oracle's release check (a rejection names the releases it holds for) and the harness's
# reading of a compiler exception, inlined.
_VERSION_IN = "_CLAUSE = re.compile(%r)\n\n\n" % oracle._CLAUSE.pattern + _inline(oracle._vtuple, oracle.version_in, toolbox.one_line)

# The ASTSource builder the harness itself calls, carried verbatim under the script's own name.
_MAKE_SOURCE = inspect.getsource(astsource.make_source).replace("def make_source(", "def _make_source(", 1).rstrip("\n")


def form_for_version(version: str | None) -> str:
    """The ASTSource form of a Triton release, for a bundle made before the harness recorded it
    (inside a stack, `compat.astsource_form()` probes the installed Triton instead)."""
    m = re.match(r"(\d+)\.(\d+)", version or "")
    if not m:
        return "constexprs"
    mm = (int(m.group(1)), int(m.group(2)))
    return "index" if mm < (3, 2) else "hints" if mm == (3, 2) else "constexprs"


def reproducer_source(case: dict, plan: dict, kernel_source: str, *, result: dict | None = None,
                      form: str | None = None, triton_version: str | None = None) -> str:
    """The standalone reproducer of one case of `plan`, as text.

    case: the plan's case entry (plan["cases"][i]); plan: the bundle's plan.json;
    kernel_source: the text of kernels/<case["kernel"]["file"]>, as the bundle carries it;
    result: the case's record in results.json, when there is one (its status, verdict and TMA
    counts become what the script compares against); form: ignored (the script probes the
    release it runs on; minimal_source writes one form); triton_version: the release that made
    the record, else the plan's stack's. A gated case (a P2) also compiles
    its gate, which must come from the same kernel file, so its verdict can be judged the same way.
    Deterministic: the same arguments give the same text (bundles stay byte-reproducible).
    """
    if case.get("language", "triton") != "triton":
        raise ValueError(f"case {case['id']} is a {case['language']} case, not a Triton kernel")
    if case.get("kind") == "call":
        case = _call_view(case, result)
    version = triton_version or (plan.get("stack") or {}).get("triton")
    steps = []
    gate_id = case.get("gated_by")
    if gate_id:
        gate = next((c for c in plan["cases"] if c["id"] == gate_id), None)
        if gate is None or gate["kernel"]["file"] != case["kernel"]["file"]:
            raise ValueError(f"case {case['id']}: its gate {gate_id} is not in the plan or not in "
                             f"{case['kernel']['file']}")
        steps.append(gate)
    steps.append(case)
    profile = plan["profile"]
    recorded = {k: result[k] for k in _RECORDED_KEYS if result and k in result} or None
    sources = "\n\n\n".join(_source_function(i, c, kernel_source) for i, c in enumerate(steps))
    spec = {
        "gpu": profile["key"], "capability": profile["capability"],
        "smem_per_block": profile["smem_per_block"], "timeout_s": toolbox.case_timeout(case, plan),
        "steps": [{"id": c["id"], "num_warps": c["num_warps"],
                   "num_stages": c["num_stages"], "requires": list(c.get("requires", [])),
                   "expect": c.get("expect", "tma"), "gated_by": c.get("gated_by"),
                   "reject": _rejections(c)} for c in steps],
        "recorded": recorded,
    }
    launch = reprolaunch.launch_spec(case, plan, result)
    header = _HEADER.format(
        id=case["id"], description=(case.get("description") or "").replace('"""', "'''"),
        triton=version or "(unknown)", gpu=profile["key"], arch=profile.get("arch", f"sm_{profile['capability']}"),
        warps=case["num_warps"], stages=case["num_stages"], expect=case.get("expect", "tma") or "nothing in particular",
        recorded=(recorded or {}).get("verdict", "(none)"), file=case["kernel"]["file"],
        pip=f"triton=={version}" if version else "triton",
        gate=f" after its gate {gate_id}" if gate_id else "")
    body = _BODY.replace("@SPEC@", _spec_literal(spec)).replace("@MOVE@", _literal(oracle._MOVE)) \
        .replace("@SETUP@", _literal(oracle._SETUP)).replace("@COMMENT@", _literal(oracle._COMMENT)) \
        .replace("@VERSION_IN@", _VERSION_IN).replace("@SOURCES@", sources).replace("@MAKE_SOURCE@", _MAKE_SOURCE) \
        .replace("@LAUNCH@", "_LAUNCH = " + reprolaunch.literal(launch) + "\n\n\n" + reprolaunch.script(reprolaunch.launch_kind(launch)))
    return header + kernel_source.rstrip("\n") + "\n\n\n" + body


def _call_view(case: dict, result: dict | None) -> dict:
    """A declared call (kind "call") as a suite case: the signature, constexprs, divisibility and
    options its record's `call` holds, as the release's JIT derived them (3.0-3.2's arguments
    equal to 1 among the constexprs). ValueError without that record."""
    spec = (result or {}).get("call")
    if not spec:
        raise ValueError(f"case {case['id']}: a declared call's reproducer is made from its record's "
                         "specialisation (`call`), and there is none")
    opts = spec.get("options") or {}
    file, function = callcase.kernel_ref(case)
    return {**case, "kernel": {"file": file, "function": function}, "signature": dict(spec["signature"]),
            "constexprs": dict(spec["constexprs"]), "divisible_by_16": list(spec.get("divisibility") or []),
            "num_warps": opts.get("num_warps") or case.get("num_warps") or 4,
            "num_stages": opts.get("num_stages") or case.get("num_stages") or 3}


def _rejections(case: dict):
    """The case's expected rejections, each with the releases it names (the script checks them
    against the Triton it runs on), or None for a plan from before rejections were named."""
    rules = case.get("reject")
    if rules is None:
        return None
    return [{k: r[k] for k in ("triton", "pass", "message") if r.get(k)} for r in rules]


class Reproducers:
    """The standalone reproducers of a plan's Triton cases, each made from its record.

    `read(name)` gives the text of kernels/<name> (from a folder, or from a bundle), read once,
    when a case first needs it. `text(case_id, rec)` is None for a case that is not a Triton
    kernel (CUDA C++ and torch.compile cases carry their own sources) and raises ValueError or
    SyntaxError for one whose kernel source has no plain definition of its function (or does not
    parse). The harness writes one per case of a capture; a sweep, one per point its bundle
    keeps, when it packs; a report makes one for a bundle from before reproducers existed."""

    def __init__(self, plan: dict, read, form: str | None = None, triton_version: str | None = None):
        self.plan, self.read, self.form, self.version = plan, read, form, triton_version
        # Declared calls (kind "call") get one when their record holds the JIT's derivation.
        self.cases = {c["id"]: c for c in plan["cases"] if c.get("language", "triton") == "triton"}
        self.sources: dict = {}

    @classmethod
    def from_dir(cls, plan: dict, kernels_dir: str, **kw) -> "Reproducers":
        def read(name: str) -> str:
            with open(os.path.join(kernels_dir, name), errors="replace") as f:
                return f.read()

        return cls(plan, read, **kw)

    def text(self, case_id: str, rec: dict | None = None) -> str | None:
        """The reproducer of case `case_id`, judged against its record `rec` when it has one."""
        case = self.cases.get(case_id)
        if case is None or (case.get("kind") == "call" and not (rec or {}).get("call")):
            return None  # a call refused or unsupported before the JIT derived it: nothing to compile
        if case.get("kind") == "generated":
            return None  # its module imports Inductor's runtime: the bundle's case (harness.kinds.generated) is its reproducer
        name = callcase.kernel_ref(case)[0] if case.get("kind") == "call" else case["kernel"]["file"]
        if name not in self.sources:
            self.sources[name] = self.read(name)
        return reproducer_source(case, self.plan, self.sources[name], result=rec, form=self.form,
                                 triton_version=self.version)

    def minimal(self, case_id: str) -> str | None:
        """The case's minimal script (minimal.py): its kernel and compile only, in the form of
        the release that made the record; None for a declared call (its specialisation is the
        JIT's: the full reproducer carries it)."""
        case = self.cases.get(case_id)
        if case is None or case.get("kind") in ("call", "generated"):
            return None
        name = case["kernel"]["file"]
        if name not in self.sources:
            self.sources[name] = self.read(name)
        version = self.version or (self.plan.get("stack") or {}).get("triton")
        return minimal.minimal_source(case, self.plan, self.sources[name], form=self.form or form_for_version(version))


def write_all(plan: dict, kernels_dir: str, out_dir: str, results: list, form: str | None = None,
              triton_version: str | None = None) -> list:
    """Write cases/<id>/reproducer.py for every judged case (`results`: the records that go
    into results.json), and name it in the record's artifacts. A case whose kernel source has
    no plain definition of its function (or does not parse) gets none: returns [(id, why)]."""
    scripts, skipped = Reproducers.from_dir(plan, kernels_dir, form=form, triton_version=triton_version), []
    for rec in results:
        try:
            text = scripts.text(rec["id"], rec)
        except (ValueError, SyntaxError) as e:
            skipped.append((rec["id"], f"{type(e).__name__}: {e}"))
            continue
        if text is None:
            continue
        os.makedirs(os.path.join(out_dir, "cases", rec["id"]), exist_ok=True)
        for artifact, file_name, body in ((ARTIFACT, FILE_NAME, text),
                                          (minimal.ARTIFACT, minimal.FILE_NAME, scripts.minimal(rec["id"]))):
            if body is None:
                continue
            rel = f"cases/{rec['id']}/{file_name}"
            with open(os.path.join(out_dir, rel), "w") as f:
                f.write(body)
            rec.setdefault("artifacts", {})[artifact] = rel
    return skipped


def _source_function(i: int, case: dict, kernel_source: str) -> str:
    """The compile of one step: its signature, constexprs and hints as data, handed to the
    script's `_make_source`, which writes them in the form the installed release takes."""
    fn = case["kernel"]["function"]
    names = _arg_names(kernel_source, fn)
    sig, consts, div = case["signature"], case.get("constexprs", {}), case.get("divisible_by_16", [])
    unknown = [a for a in [*sig, *consts, *div] if a not in names]
    missing = [a for a in names if a not in sig and a not in consts]
    if unknown or missing:
        raise ValueError(f"case {case['id']}: {fn}({', '.join(names)}) does not match its plan entry "
                         f"({'no argument ' + ', '.join(unknown) if unknown else 'no type for ' + ', '.join(missing)})")
    return "\n".join([f"def _source_{i}():",
                      f'    """{case["id"]}: {fn}, {case["num_warps"]} warps, {case["num_stages"]} stages."""',
                      f"    return _make_source({fn}, {_literal({a: sig[a] for a in names if a in sig})},",
                      f"                        constexprs={_literal({a: consts[a] for a in names if a in consts})},",
                      f"                        divisible_by_16={_literal([a for a in names if a in div])})"])


def _arg_names(kernel_source: str, fn: str) -> list:
    """The kernel's parameters in order, read from its source (no Triton needed on the host)."""
    names = _signatures(kernel_source).get(fn)
    if names is None:
        raise ValueError(f"the kernel source defines no function {fn!r}")
    return list(names)


@functools.lru_cache(maxsize=16)
def _signatures(kernel_source: str) -> dict:
    """Every function's parameters in one parse of the source: a sweep writes a reproducer for
    each of its thousands of points, all from one or two kernel files."""
    out: dict[str, tuple[str, ...]] = {}
    for node in ast.walk(ast.parse(kernel_source)):
        if isinstance(node, ast.FunctionDef):
            a = node.args
            out.setdefault(node.name, tuple(p.arg for p in [*a.posonlyargs, *a.args, *a.kwonlyargs]))
    return out


def _spec_literal(spec: dict) -> str:
    """The spec with one line per step, keys sorted: short enough to embed in a report."""
    top = {k: v for k, v in sorted(spec.items()) if k != "steps"}
    steps = ",\n".join(f"    {dict(sorted(s.items()))!r}" for s in spec["steps"])
    return "{" + "".join(f"{k!r}: {_literal(v)}, " for k, v in top.items()) + "'steps': [\n" + steps + ",\n]}"


def _literal(value) -> str:
    """A Python literal of JSON-like data, the same text on every run (dict keys sorted)."""
    return pprint.pformat(value, width=120, sort_dicts=True)


_HEADER = '''"""Standalone reproducer of {id}: {description}

Triton {triton}, compiled ahead of time for {gpu} ({arch}) with {warps} warps and {stages}
stages{gate}; expected {expect}, recorded verdict {recorded}. No GPU and no reprokit needed:

    pip install {pip} && python reproducer.py [--json] [--expect recorded|none]
    pip install {pip} torch && python reproducer.py --launch [--seed N] [--size MxN]  # on a GPU

It probes the installed Triton, so it runs on any release: `--expect none` only says what happens
there. It prints the TMA ops found per IR level (SASS from the wheel's cuobjdump) and the verdict,
and exits 0 when that is the recorded verdict, 1 when it differs, 2 when the script itself failed
(script_error: never a finding about the compiler). `--launch` then runs the kernel on a GPU (or
on the CPU under TRITON_INTERPRET=1) with seeded inputs and checks its output against torch; a
wrong output or a failed launch exits 1. Below: kernels/{file} as the bundle has it.
"""

import sys as _sys


def _script_fault(kind, value, tb):
    """An exception outside the compiler is this script's fault, not a reproduction: exit 2. But
    a kernel module that imports a part of Triton this release lacks (a declared call's
    `from triton.tools.tensor_descriptor import ...` before 3.4) is `unsupported`, as the
    harness says it."""
    import traceback
    missing = getattr(value, "name", None) or ""
    if issubclass(kind, ImportError) and missing.startswith("triton.") and "_SPEC" not in globals():
        import json
        import os
        import triton
        why = "triton %s lacks %s, which the kernel module imports" % (triton.__version__, missing)
        asked = _sys.argv[_sys.argv.index("--expect") + 1:][:1] if "--expect" in _sys.argv else ["recorded"]
        same = None if asked != ["recorded"] or {recorded!r} == "(none)" else {recorded!r} == "unsupported"
        if "--json" in _sys.argv:
            print(json.dumps({{"triton": triton.__version__, "verdict": "unsupported", "reason": why,
                              "reproduced": same}}, sort_keys=True))
        else:
            print("verdict: unsupported (%s)" % why)
            if same is False:
                print("recorded verdict: %s -> DIFFERS" % {recorded!r})
        _sys.stdout.flush()
        os._exit(1 if same is False else 0)
    traceback.print_exception(kind, value, tb)
    print("verdict: script_error (%s: %s, outside the compiler and the launch; this says nothing about Triton)"
          % (kind.__name__, value))
    _sys.stdout.flush()
    _sys.stderr.flush()
    import os
    os._exit(2)


_sys.excepthook = _script_fault

'''

_BODY = r'''# ---- the compile, the TMA evidence and the verdict ------------------------------------------

import json, os, re, shutil, signal, subprocess, sys, tempfile, time  # noqa: E401

_SPEC = @SPEC@

# TMA data movement and set-up ops per IR level: the oracle's own patterns.
_MOVE = @MOVE@
_SETUP = @SETUP@
_COMMENT = @COMMENT@
_LEVELS = ("ttir", "ttgir", "llir", "ptx", "sass")


@VERSION_IN@

@SOURCES@


@LAUNCH@


def _scan(level, text):
    def is_op(pos):
        if pos > 0 and (text[pos - 1].isalnum() or text[pos - 1] in "_."):
            return False
        mark = _COMMENT[level]
        return mark is None or text.find(mark, text.rfind("\n", 0, pos) + 1, pos) < 0

    ops, moves = {}, 0
    for kind, table in (("move", _MOVE), ("setup", _SETUP)):
        for pattern in table[level]:
            for m in re.finditer(pattern, text):
                if is_op(m.start()):
                    op = m.group(0).replace("triton_nvidia_gpu.", "ttng.")
                    ops[op] = ops.get(op, 0) + 1
                    moves += kind == "move"
    return moves, dict(sorted(ops.items()))


@MAKE_SOURCE@


def _write_result(out, doc):
    with open(os.path.join(out, "result.json"), "w") as f:
        json.dump(doc, f)


def _compile_child(index, out):
    """In the child process: compile one step, write its IR, its metadata and any error. What
    fails before triton.compile is called is the script's fault (script_error), not the compiler's;
    the `compiling` file marks the moment the compiler takes over."""
    step = _SPEC["steps"][index]
    try:
        import triton
        try:
            from triton.backends.compiler import GPUTarget
        except ImportError:
            from triton.compiler.compiler import GPUTarget
        src = globals()["_source_%d" % index]()
        target = GPUTarget("cuda", _SPEC["capability"], 32)
        options = {"num_warps": step["num_warps"], "num_stages": step["num_stages"]}
    except BaseException as e:
        import traceback
        _write_result(out, {"status": "script_error", "error": "%s: %s" % (type(e).__name__, e),
                            "traceback": traceback.format_exc()})
        return
    open(os.path.join(out, "compiling"), "w").close()
    t0 = time.perf_counter()
    try:
        compiled = triton.compile(src, target=target, options=options)
    except Exception as e:  # the compiler's refusal is the result
        removed = None
        chain = e
        while chain is not None:  # a name this release keeps but no longer implements (3.9's make_block_ptr)
            if isinstance(chain, NotImplementedError):
                removed = str(chain).strip() or "not implemented in this release"
                break
            chain = chain.__cause__ or chain.__context__
        error = one_line(e)
        doc = {"status": "unsupported" if removed else "compile_error", "error": removed or error,
               "exception": type(e).__name__}
    else:
        for key in ("ttir", "ttgir", "llir", "ptx", "cubin"):
            data = compiled.asm.get(key)
            if data is not None:
                with open(os.path.join(out, "kernel." + key), "wb" if isinstance(data, bytes) else "w") as f:
                    f.write(data)
        doc = {"status": "ok", "shared": int(getattr(compiled.metadata, "shared", 0) or 0)}
    doc["compile_s"] = round(time.perf_counter() - t0, 3)
    _write_result(out, doc)


def _disassemble(cubin):
    import triton

    bin_dir = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
    for tool, args in (("cuobjdump", ["-sass"]), ("nvdisasm", ["-c"])):
        path = os.environ.get("TRITON_%s_PATH" % tool.upper()) or os.path.join(bin_dir, tool)
        if not os.access(path, os.X_OK):
            path = shutil.which(tool)
        if path:
            p = subprocess.run([path] + args + [cubin], capture_output=True, text=True, errors="replace")
            if p.returncode == 0 and p.stdout.strip():
                return p.stdout
    return None


def _judge(step, res, gate):
    expect, status = step["expect"], res["status"]
    if status == "script_error":
        return "script_error", res["error"]
    if status in ("unsupported", "timeout"):
        return status, res["error"]
    if status == "crash":
        return "crashed", res["error"]
    if status == "compile_error":
        if expect != "no-tma":
            return "error", res["error"]
        mine = step["reject"]  # the case's expected rejections, each for the releases it names
        if mine is None:  # a plan from before rejections were named
            return "rejected", "compiler refused the broken invariant: " + res["error"]
        for r in mine:
            if not version_in(_triton_version(), r.get("triton", "")):
                continue
            if (not r.get("pass") or res.get("failing_pass") == r["pass"]) and re.search(r["message"], res["error"]):
                return "rejected", "compiler refused the broken invariant as expected: " + res["error"]
        return "error", "compile error, but not the rejection this case expects: " + res["error"]
    counts = res["tma"]
    level = next((lv for lv in ("sass", "ptx", "ttgir") if lv in counts), None)
    if level is None:
        return "error", "no IR level to judge"
    if gate is not None and gate["verdict"] != "tma" and expect == "tma":
        return "inconclusive", "%s showed no TMA (%s), so this stress case cannot be judged" % (gate["id"], gate["verdict"])
    emitted = counts[level] > 0
    where = ", ".join("%s=%d" % (lv, counts[lv]) for lv in _LEVELS if lv in counts)
    return ("tma" if emitted else "no-tma"), "%s at %s (%s); %s" % (
        "TMA" if emitted else "no TMA", level, where, "expected " + expect if expect else "no expectation")


def _run_step(index, scratch):
    import triton.language as tl

    step = _SPEC["steps"][index]
    res = {"id": step["id"]}
    for req in step["requires"]:  # `tl.NAME` or `module:dotted.name`, alternatives joined by `|`
        if not any(hasattr(tl, alt[3:]) if alt.startswith("tl.") else _importable(alt[7:]) for alt in req.split("|")):
            res.update(status="unsupported", error="triton %s lacks %s" % (_triton_version(), req.replace("|", " and ")))
            return res
    out = os.path.join(scratch, str(index))
    os.makedirs(out)
    env = dict(os.environ, TRITON_CACHE_DIR=os.path.join(out, "cache"), TRITON_ALWAYS_COMPILE="1")
    env.pop("TRITON_INTERPRET", None)  # the compile is the real one, even when --launch interprets
    try:
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--compile", str(index), out],
                            env=env, capture_output=True, text=True, errors="replace", timeout=_SPEC["timeout_s"])
    except subprocess.TimeoutExpired:
        res.update(status="timeout", error="no result after %g s" % _SPEC["timeout_s"])
        return res
    res["stderr_tail"] = "\n".join(p.stderr.rstrip().splitlines()[-20:])
    if not os.path.exists(os.path.join(out, "result.json")):
        how = ("killed by %s" % signal.Signals(-p.returncode).name) if p.returncode < 0 else "exited with code %d" % p.returncode
        if not os.path.exists(os.path.join(out, "compiling")):
            res.update(status="script_error", error="the script's compile process %s before the compiler ran" % how)
            return res
        m = re.search(r"(UNREACHABLE executed.*|Assertion `.*failed\.?|LLVM ERROR: .*|Segmentation fault.*)", p.stderr)
        res.update(status="crash", error="%s (%s)" % (m.group(1).strip(), how) if m else "compiler process " + how)
        return res
    with open(os.path.join(out, "result.json")) as f:
        res.update(json.load(f))
    if res["status"] == "compile_error":  # MLIR prints its diagnostic; the exception only says a pass failed
        m = re.search(r"Pipeline failed while executing \[?`(\w+)`", p.stderr)
        res["failing_pass"] = m.group(1) if m else None
        diag = next((m.group(1).strip() for m in re.finditer(r"\berror: (.*)", p.stderr)
                     if "Failures have been detected" not in m.group(1)), None)
        if diag and diag not in res["error"]:
            res["error"] = diag
    if res["status"] != "ok":
        return res
    texts = {}
    for level in ("ttir", "ttgir", "llir", "ptx"):
        path = os.path.join(out, "kernel." + level)
        if os.path.exists(path):
            with open(path, errors="replace") as f:
                texts[level] = f.read()
    cubin = os.path.join(out, "kernel.cubin")
    if os.path.exists(cubin):
        sass = _disassemble(cubin)
        if sass is not None:
            texts["sass"] = sass
    res["tma"], res["tma_ops"] = {}, {}
    for level in _LEVELS:
        if level in texts:
            res["tma"][level], res["tma_ops"][level] = _scan(level, texts[level])
    return res


def _importable(module):
    try:
        return bool(__import__(module))
    except ImportError:
        return False


def _triton_version():
    return sys.modules["triton"].__version__


def main(argv):
    if argv[:1] == ["--compile"]:
        _compile_child(int(argv[1]), argv[2])
        return 0
    as_json = "--json" in argv
    expect = "recorded"
    if "--expect" in argv:
        i = argv.index("--expect")
        expect = argv[i + 1] if i + 1 < len(argv) else ""
    if expect not in ("recorded", "none"):
        print("reproducer: --expect takes recorded (does it still reproduce?) or none (what happens here?)",
              file=sys.stderr)
        return 2
    launch = _launch_options(argv)
    if isinstance(launch, str):
        print("reproducer: " + launch, file=sys.stderr)
        return 2
    scratch = tempfile.mkdtemp(prefix="reproducer-")
    try:
        done = {}
        for index, step in enumerate(_SPEC["steps"]):
            res = _run_step(index, scratch)
            gate = done.get(step["gated_by"]) if step["gated_by"] else None
            res["verdict"], res["reason"] = _judge(step, res, gate)
            done[step["id"]] = res
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    case = done[_SPEC["steps"][-1]["id"]]
    recorded = _SPEC["recorded"] if expect == "recorded" else None
    faulty = [r for r in done.values() if r["verdict"] == "script_error"]
    reproduced = None if not recorded or faulty else case["verdict"] == recorded["verdict"]
    doc = {"triton": _triton_version(), "gpu": _SPEC["gpu"], "capability": _SPEC["capability"],
           "steps": list(done.values()), "case": case["id"], "verdict": case["verdict"],
           "expect": expect, "recorded": recorded, "reproduced": reproduced}
    if launch is not None and not faulty:
        if case["status"] == "ok":
            doc["launch"] = _launch(*launch)
        else:
            doc["launch"] = {"status": "not_launched", "reason": "the compile gave %s here" % case["verdict"]}
    if as_json:
        print(json.dumps(doc, indent=1, sort_keys=True))
    else:
        print("triton %s, compile-only for %s (capability %d)" % (doc["triton"], _SPEC["gpu"], _SPEC["capability"]))
        for res in done.values():
            print("%s: %s%s" % (res["id"], res["status"], ", shared %d B (%s allows %d)" % (
                res["shared"], _SPEC["gpu"], _SPEC["smem_per_block"]) if "shared" in res else ""))
            for level in _LEVELS:
                if level in res.get("tma", {}):
                    ops = " ".join("%s=%d" % kv for kv in res["tma_ops"][level].items())
                    print("  %-5s %3d  %s" % (level, res["tma"][level], ops))
            if res["status"] in ("compile_error", "crash") and res.get("stderr_tail"):
                print("  compiler output (last lines):")
                print("\n".join("    " + ln for ln in res["stderr_tail"].splitlines()[-12:]))
            if res["status"] == "script_error":
                print(res.get("traceback") or res.get("stderr_tail") or "", file=sys.stderr)
            print("  verdict: %s (%s)" % (res["verdict"], res["reason"]))
        if faulty:
            print("script_error: the script failed outside the compiler; this says nothing about Triton %s"
                  % doc["triton"])
        elif recorded:
            print("recorded verdict: %s -> %s" % (recorded["verdict"], "reproduced" if reproduced else "DIFFERS"))
        if "launch" in doc:
            print("\n".join(_launch_lines(doc["launch"])))
    if faulty:
        return 2
    if "launch" in doc and doc["launch"]["status"] not in ("ok", "not_launched"):
        return 1
    return 0 if reproduced is not False else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
'''
