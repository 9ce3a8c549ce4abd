"""`reprokit check`'s judge: every problem in a project's reprokit.toml at once, one line each as
`file:line: what`, before any case compiles; and, for a project with none, its cases normalised
into declared calls (explicit strides and align: docs/user-cases.md).

Kernel files are read with `ast`, never imported: a kernel that imports torch, or asks the
driver at module level, is judged on a machine with neither. What the file states is what is
checked: the function (or @jit/@autotune/@heuristics object) exists, the call gives every
parameter without a default that no autotune config or heuristic supplies, and names none
the kernel does not take.
"""

from __future__ import annotations

import ast
import math
import os
import re
import stat
from dataclasses import dataclass, field
from pathlib import Path

from reprokit.config import gpu_keys
from reprokit.suite import CASE_ID
from reprokit.userspec.project import PROJECT_KEYS, TOP_KEYS, Lines, Project

# Tensor dtypes by torch's names (the harness's stand-ins know exactly these), and the aliases
# torch also answers to, normalised to the name.
TENSOR_DTYPES = ("bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64", "uint64", "float16",
                 "bfloat16", "float32", "float64", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz",
                 "float8_e5m2fnuz")
DTYPE_ALIASES = {"half": "float16", "float": "float32", "double": "float64", "long": "int64", "int": "int32",
                 "short": "int16"}
# `{ dtype = NAME }` constexprs: triton.language's dtype objects by name.
TL_DTYPES = ("int1", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float8e5",
             "float8e5b16", "float8e4nv", "float8e4b8", "float8e4b15", "float16", "bfloat16", "float32", "float64")
ALIGNS = (1, 2, 4, 8, 16)
# Launch options a case may set beside its arguments (Triton's compile and launch options).
OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "enable_fp_fusion", "launch_cooperative_grid",
           "launch_pdl", "debug")
_BOOL_OPTIONS = ("enable_fp_fusion", "launch_cooperative_grid", "launch_pdl", "debug")
CASE_KEYS = ("id", "kernel", "args", "grid", "configs", "expect", "description", "timeout_s", *OPTIONS)
EXPECT = re.compile(r"^(?:tma|no-tma|sass:[A-Z][A-Z0-9_.]*|regs<=[0-9]+|smem<=[0-9]+)$")
MAX_DIMS = 8
# What a project's kernels may hold: they travel in every bundle.
MAX_KERNEL_FILES, MAX_KERNEL_BYTES = 500, 20 * 10**6
# One project file (a kernel, a helper module, a Dockerfile): a source, never data.
MAX_FILE_BYTES = 4 * 10**6


@dataclass(frozen=True)
class KernelDef:
    """What a kernel file says about one kernel object, read with ast."""

    line: int
    params: tuple = ()
    required: frozenset = frozenset()   # parameters without a default
    exact: bool = True                  # False when the object is made in a way ast cannot follow
    autotuned: bool = False
    tuned: frozenset | None = frozenset()   # parameters the autotune configs set (None: unknown)
    config_count: int | None = None
    heuristics: frozenset = frozenset()
    defaults: dict = field(default_factory=dict)   # parameter -> its default, where a literal
    configs: tuple | None = None   # per autotune config, its literal kwargs and options (None: not readable)


@dataclass
class Findings:
    """The problems found, in file order, and the cases normalised (only meaningful without problems)."""

    project: Project
    problems: list = field(default_factory=list)   # (path shown, line, message)
    cases: list = field(default_factory=list)      # normalised case dicts (see normalise_case)
    sources: dict = field(default_factory=dict)    # bundle name -> source file (every kernel file copied)
    kernels: dict = field(default_factory=dict)    # case id -> KernelDef of its kernel (cases without problems)

    def add(self, line: int, message: str, where: str | None = None) -> None:
        self.problems.append((where or self.project.shown, line, message))

    def ordered(self) -> list:
        """The problems in file and line order (in the order found within a line)."""
        order = sorted(range(len(self.problems)), key=lambda i: (self.problems[i][0], self.problems[i][1], i))
        return [self.problems[i] for i in order]

    def lines(self) -> list[str]:
        """One `file:line: what` per problem, in file and line order."""
        return [f"{w}:{n}: {m}" for w, n, m in self.ordered()]


def examine(project: Project) -> Findings:
    """Every problem of the project's reprokit.toml and its kernels, and its cases normalised."""
    rep = Findings(project)
    lines = project.lines()
    raw = project.raw
    for key in raw:
        if key not in TOP_KEYS:
            rep.add(_top_line(lines, key), f"unknown table or key {key!r} (a reprokit.toml has "
                                           f"{', '.join(TOP_KEYS)})")
    meta = raw.get("project", {})
    if not isinstance(meta, dict):
        rep.add(1, "project must be a table: [project]")
        meta = {}
    for key in meta:
        if key not in PROJECT_KEYS:
            rep.add(lines.key("project", key), f"[project] has no key {key!r} (known: {', '.join(PROJECT_KEYS)})")
    if "timeout_s" in meta and not _positive_number(meta["timeout_s"]):
        rep.add(lines.key("project", "timeout_s"), f"timeout_s must be a number of seconds above 0, not {meta['timeout_s']!r}")
    cases = raw.get("case", [])
    if not isinstance(cases, list) or not all(isinstance(c, dict) for c in cases):
        rep.add(1, "cases are [[case]] tables")
        cases = []
    if not cases:
        rep.add(lines.table("project") if "project" in raw else 1,
                "no [[case]] declared: a project names at least one kernel call (reprokit init --example shows one)")
    entries = _kernel_entries(project, meta, lines, rep)
    defs: dict = {}
    seen: dict = {}
    for i, case in enumerate(cases):
        _check_case(project, i, case, lines, rep, entries, defs, seen)
    _check_stacks_and_gpus(project, lines, rep)
    return rep


def _check_stacks_and_gpus(project: Project, lines: Lines, rep: Findings) -> None:
    """The project's own [stacks.NAME] and [gpus.NAME], as load_config will read them."""
    stacks, gpus = project.raw.get("stacks", {}), project.raw.get("gpus", {})
    for what, tables in (("stacks", stacks), ("gpus", gpus)):
        if not isinstance(tables, dict) or not all(isinstance(t, dict) for t in tables.values()):
            rep.add(_top_line(lines, what), f"{what} entries are tables: [{what}.NAME]")
            return
    for name, t in stacks.items():
        at = lines.table(f"stacks.{name}")
        if not isinstance(t.get("triton"), str):
            rep.add(at, f"stack {name!r} has no 'triton' pin (a version, e.g. \"3.6.0\")")
        why = isinstance(t.get("dockerfile"), str) and os.path.lexists(project.root / t["dockerfile"]) \
            and file_problem(project, project.root / t["dockerfile"], f"stack {name!r}: dockerfile {t['dockerfile']!r}")
        if why:
            rep.add(lines.key(f"stacks.{name}", "dockerfile"), why)
        elif "dockerfile" in t and not (isinstance(t["dockerfile"], str) and (project.root / t["dockerfile"]).is_file()):
            rep.add(lines.key(f"stacks.{name}", "dockerfile"), f"stack {name!r}: dockerfile {t['dockerfile']!r} "
                                                                f"does not exist (relative to {project.root})")
    for name, g in gpus.items():
        at = lines.table(f"gpus.{name}")
        missing = sorted(gpu_keys() - set(g))
        if missing:
            rep.add(at, f"GPU profile {name!r} lacks {', '.join(missing)}")
        for key in ("capability", "sm_count", "smem_per_block"):
            if key in g and not (isinstance(g[key], int) and not isinstance(g[key], bool) and g[key] > 0):
                rep.add(lines.key(f"gpus.{name}", key), f"GPU profile {name!r}: {key} must be a whole number above 0")
        for key in ("mem_bandwidth_gbs", "fp16_tflops"):
            if key in g and not _positive_number(g[key]):
                rep.add(lines.key(f"gpus.{name}", key), f"GPU profile {name!r}: {key} must be a number above 0")


def _top_line(lines: Lines, key: str) -> int:
    n = next((n for n, name, _ in lines.headers if name.split(".")[0] == key), None)
    if n is None:
        pat = re.compile(rf"^\s*{re.escape(key)}\s*=")
        n = next((i for i, row in enumerate(lines.rows, 1) if pat.match(row)), 1)
    return n


def _positive_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0


# --- kernels: which files travel, under which names ---------------------------------------------

def inside(project: Project, path: Path) -> Path | None:
    """`path` with every symlink resolved, when that lies inside the project's folder; else None.
    Only the project's own files may travel: an absolute path, a `../` or a link out of the folder
    would pack whatever the user can read (a credentials file, /etc/passwd) into a bundle."""
    root = project.root.resolve()
    try:
        real = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return None
    return real if real == root or real.is_relative_to(root) else None


def file_problem(project: Project, path: Path, what: str) -> str | None:
    """Why `path` may not travel as a project file (None when it may): it must resolve inside the
    project, be a regular file, and stay under MAX_FILE_BYTES."""
    real = inside(project, path)
    if real is None:
        return f"{what} resolves outside the project folder {project.root} (a bundle carries only the project's own files)"
    try:
        st = real.stat()
    except OSError as e:
        return f"{what} cannot be read: {e.strerror or e}"
    if not stat.S_ISREG(st.st_mode):
        return f"{what} is not a regular file"
    if st.st_nlink > 1:
        # A hard link cannot be told from the file it shares its data with, which may sit
        # anywhere on this file system (a credentials file): only a file of one name travels.
        return f"{what} is a hard link ({st.st_nlink} names share its data, which may lie outside the project): copy it"
    if st.st_size > MAX_FILE_BYTES:
        return f"{what} is {st.st_size / 1e6:.1f} MB, over the {MAX_FILE_BYTES // 10**6} MB a project file may have"
    return None


def _folder_files(folder: Path) -> tuple[list[Path], list[Path]]:
    """(every entry of a kernels folder that is not a folder, symlinks included (judged, not
    followed into); its linked folders, never walked), hidden files, caches and bytecode left out."""
    out, links = [], []
    for top, dirs, names in os.walk(folder, followlinks=False):
        rel = Path(top).relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            dirs[:] = []
            continue
        kept = sorted(d for d in dirs if not d.startswith(".") and d != "__pycache__")
        links += [Path(top) / d for d in kept if (Path(top) / d).is_symlink()]
        dirs[:] = [d for d in kept if not (Path(top) / d).is_symlink()]
        out += [Path(top) / n for n in names if not n.startswith(".") and not n.endswith(".pyc")]
    return sorted(out), sorted(links)


def _kernel_entries(project: Project, meta: dict, lines: Lines, rep: Findings) -> list:
    """[(path, is folder)] of [project] kernels (folders or files relative to reprokit.toml);
    fills rep.sources with every file they hold, by the name it gets in the bundle's kernels/."""
    raw = meta.get("kernels")
    at = lines.key("project", "kernels") if raw is not None else 1
    if raw is None:
        # Unsaid: the folders of the cases' kernel files (those inside the project: a case whose
        # kernel lies outside is told so by its own line).
        folders = set()
        for c in project.cases:
            ref = c.get("kernel") if isinstance(c, dict) else None
            if isinstance(ref, str) and ":" in ref:
                p = (project.root / ref.rsplit(":", 1)[0]).parent
                real = inside(project, p)
                if real is not None and real.is_dir():
                    folders.add(real)
        entries = [(p, True) for p in sorted(folders)]
    elif not isinstance(raw, list) or not all(isinstance(k, str) and k for k in raw):
        rep.add(at, "kernels must be a list of folders or files, e.g. [\"kernels/\"]")
        return []
    else:
        entries = []
        for k in raw:
            p = (project.root / k)
            if not os.path.lexists(p):
                rep.add(at, f"kernels names {k!r}, which does not exist (relative to {project.root})")
            elif inside(project, p) is None:
                rep.add(at, f"kernels names {k!r}, which resolves outside the project folder {project.root} "
                            "(a bundle carries only the project's own files)")
            elif p.is_dir():
                entries.append((p.resolve(), True))
            else:
                why = file_problem(project, p, f"kernels names {k!r}, which")
                if why:
                    rep.add(at, why)
                else:
                    entries.append((p.resolve(), False))
    for path, is_dir in entries:
        files, links = ([path], []) if not is_dir else _folder_files(path)
        for link in links:  # never followed; one that points out of the project is said so
            if inside(project, link) is None:
                rep.add(at, f"kernels folder link {link.relative_to(path).as_posix()!r} resolves outside the project "
                            f"folder {project.root} (its files do not travel)")
        good = []   # (the file as listed, the file it resolves to)
        for f in files:
            name = f.name if not is_dir else f.relative_to(path).as_posix()
            why = file_problem(project, f, f"kernels file {name!r}") if is_dir else None
            if why:
                rep.add(at, why)
            else:
                good.append((f, f.resolve()))
        size = sum(real.stat().st_size for _, real in good)
        if len(good) > MAX_KERNEL_FILES or size > MAX_KERNEL_BYTES:
            # Every file travels in every bundle: a folder that holds a venv or data is a mistake.
            rep.add(at, f"kernels folder {path} holds {len(good)} files, {size / 1e6:.1f} MB (at most {MAX_KERNEL_FILES} "
                        f"files, {MAX_KERNEL_BYTES // 10**6} MB travel in a bundle): name the kernels' own folder")
            continue
        for f, real in good:
            name = f.name if not is_dir else f.relative_to(path).as_posix()
            other = rep.sources.get(name)
            if other is not None and other != real:
                rep.add(at, f"two kernel files would be {name!r} in the bundle: {other} and {real}")
            rep.sources.setdefault(name, real)
    return entries


def _bundle_name(entries: list, file: Path) -> str | None:
    for path, is_dir in entries:
        if not is_dir and file == path:
            return file.name
        if is_dir and path in file.parents:
            return file.relative_to(path).as_posix()
    return None


# --- one case -------------------------------------------------------------------------------------

def _check_case(project, i, case, lines, rep, entries, defs, seen) -> None:
    start = lines.case(i)
    cid = case.get("id")
    label = f"case {cid!r}" if isinstance(cid, str) else f"case #{i + 1}"
    ok = True

    def bad(key, message, table=None):
        nonlocal ok
        ok = False
        rep.add(lines.case_key(i, key, table) if key else start, f"{label}: {message}")

    for key in case:
        if key not in CASE_KEYS:
            bad(key, f"unknown key {key!r} (a case has {', '.join(CASE_KEYS)})")
    if not isinstance(cid, str) or not CASE_ID.match(cid):
        bad("id" if "id" in case else None, f"id {cid!r} must be lower-case letters, digits, '_', '.' or '-', "
                                           "starting with a letter or digit" if cid is not None else "has no id")
    elif cid in seen:
        bad("id", f"duplicate id (also the case at line {seen[cid]})")
    else:
        seen[cid] = start
    kdef, ref = None, case.get("kernel")
    file = function = None
    if not isinstance(ref, str) or ":" not in ref or not ref.rsplit(":", 1)[1].isidentifier():
        bad("kernel" if "kernel" in case else None,
            f"kernel {ref!r} must be 'path/file.py:function'" if ref is not None else "names no kernel "
            "('path/file.py:function')")
    else:
        rel, function = ref.rsplit(":", 1)
        file = (project.root / rel)
        outside = os.path.lexists(file) and file_problem(project, file, f"kernel file {rel}")
        if outside:
            bad("kernel", outside)
        elif not file.is_file():
            bad("kernel", f"kernel file {rel} does not exist (relative to {project.root})")
        elif file.suffix != ".py" or file.resolve().suffix != ".py":
            bad("kernel", f"kernel file {rel} is not a Python file")
        else:
            file = file.resolve()
            if _bundle_name(entries, file) is None:
                bad("kernel", f"kernel file {rel} is not under [project] kernels, so it would not travel in the bundle")
            key = (file, function)
            if key not in defs:
                defs[key] = read_kernel(file, function)
            kdef = defs[key]
            if isinstance(kdef, tuple):   # (file shown, line, message): the file itself is broken
                ok = False
                rep.add(kdef[1], f"{label}: {kdef[2]}", where=kdef[0])
                kdef = None
            elif kdef is None:
                bad("kernel", f"{rel} defines no function or kernel object {function!r}")
    args = case.get("args", {})
    if not isinstance(args, dict):
        bad("args", "args must be a table of parameter = value ([case.args])")
        args = {}
    norm_args = {}
    for name, value in args.items():
        v, why = normalise_value(value)
        if why:
            bad(name, f"argument {name}: {why}", table="args")
        else:
            norm_args[name] = v
    if kdef is not None and kdef.exact:
        for name in args:
            if name not in kdef.params:
                bad(name, f"argument {name}: {function} has no parameter {name!r} "
                          f"(its parameters: {', '.join(kdef.params) or 'none'})", table="args")
            elif name in (kdef.tuned or ()):
                bad(name, f"argument {name}: the autotuner's configs set it; leave it out", table="args")
        if kdef.tuned is not None:
            missing = [p for p in kdef.params if p in kdef.required and p not in args
                       and p not in kdef.tuned and p not in kdef.heuristics]
            if missing:
                bad("args" if "args" in case else None,
                    f"no value for {', '.join(missing)} ({function} has no default for "
                    f"{'it' if len(missing) == 1 else 'them'})")
    grid = case.get("grid", [1])
    if not (isinstance(grid, list) and 1 <= len(grid) <= 3
            and all(isinstance(g, int) and not isinstance(g, bool) and g >= 1 for g in grid)):
        bad("grid", f"grid {grid!r} must be 1 to 3 whole numbers, each 1 or more")
    options = {}
    for key in OPTIONS:
        if key not in case:
            continue
        v = case[key]
        if key in _BOOL_OPTIONS:
            if not isinstance(v, bool):
                bad(key, f"{key} must be true or false, not {v!r}")
        elif not isinstance(v, int) or isinstance(v, bool) or v < (0 if key == "maxnreg" else 1) \
                or (key == "num_warps" and v & (v - 1)):
            bad(key, f"{key} {v!r} must be a whole number" + (", a power of two" if key == "num_warps" else "")
                + (" (0 or more)" if key == "maxnreg" else " (1 or more)"))
        options[key] = v
    configs = case.get("configs", "all")
    if "configs" in case:
        if kdef is not None and not kdef.autotuned and kdef.exact:
            bad("configs", f"configs is for @triton.autotune kernels, and {function} is not autotuned")
        elif configs != "all" and not (isinstance(configs, list) and configs and all(
                isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in configs)):
            bad("configs", f"configs {configs!r} must be \"all\" or a list of config indices (0, 1, ...)")
        elif isinstance(configs, list) and len(set(configs)) != len(configs):
            bad("configs", "configs names a config twice")
        elif isinstance(configs, list) and kdef is not None and kdef.config_count is not None \
                and max(configs) >= kdef.config_count:
            bad("configs", f"configs {configs} goes past the autotuner's {kdef.config_count} configs "
                           f"(indices 0-{kdef.config_count - 1})")
    expect = case.get("expect")
    if expect is not None and not (isinstance(expect, str) and EXPECT.match(expect)):
        bad("expect", f"expect {expect!r} is not one of \"tma\", \"no-tma\", \"sass:OPCODE\", \"regs<=N\", "
                      "\"smem<=N\"")
    for key in ("description",):
        if key in case and not isinstance(case[key], str):
            bad(key, f"{key} must be a string")
    if "timeout_s" in case and not _positive_number(case["timeout_s"]):
        bad("timeout_s", f"timeout_s must be a number of seconds above 0, not {case['timeout_s']!r}")
    if ok and file is not None:
        if kdef is not None:
            rep.kernels[cid] = kdef
        rep.cases.append({
            "id": cid, "file": _bundle_name(entries, file), "function": function, "source": ref,
            "call": {"args": norm_args, "grid": list(grid), "options": options},
            "configs": configs, "expect": expect, "description": case.get("description"),
            "timeout_s": case.get("timeout_s"), "autotuned": bool(kdef and kdef.autotuned),
        })


# --- argument values ------------------------------------------------------------------------------

def normalise_value(v, depth: int = 0):
    """(the value as a plan writes it, None) or (None, why it is not one): tensors get explicit
    strides (contiguous when unsaid) and align (16 when unsaid), dtypes their canonical name."""
    if isinstance(v, bool) or isinstance(v, (int, str)):
        return v, None
    if isinstance(v, float):
        return (v, None) if math.isfinite(v) else (None, f"{v} is not a finite number")
    if isinstance(v, list):
        if depth > 2:
            return None, "tuples nested more than three deep"
        out = []
        for x in v:
            y, why = normalise_value(x, depth + 1)
            if why:
                return None, why
            out.append(y)
        return out, None
    if not isinstance(v, dict):
        return None, f"{v!r} ({type(v).__name__}) is not a value a call can take"
    keys = set(v)
    if keys == {"none"}:
        return ({"none": True}, None) if v["none"] is True else (None, "{ none = true } is how None is written")
    if keys == {"dtype"}:
        name = v["dtype"]
        if name not in TL_DTYPES:
            return None, f"dtype {name!r} is not a triton.language dtype ({', '.join(TL_DTYPES)})"
        return {"dtype": name}, None
    if "tensor" in keys:
        return _tensor(v)
    if "descriptor" in keys:
        extra = keys - {"descriptor", "block", "shape", "strides", "padding"}
        if extra:
            return None, f"a descriptor takes descriptor, block, shape, strides, padding; not {', '.join(sorted(extra))}"
        base = v["descriptor"]
        if not isinstance(base, dict) or "tensor" not in base:
            return None, "descriptor must be a tensor: { descriptor = { tensor = [...], dtype = ... }, block = [...] }"
        t, why = _tensor(base)
        if why:
            return None, f"its tensor: {why}"
        block = v.get("block")
        if not isinstance(block, list) or not _ints(block, 1) or len(block) != len(t["tensor"]):
            return None, f"block {block!r} must be {len(t['tensor'])} whole numbers of 1 or more, one per dimension"
        desc: dict = {"descriptor": t, "block": list(block)}
        for key in ("shape", "strides"):
            if key in v:
                if not _ints(v[key], 0) or len(v[key]) != len(t["tensor"]):
                    return None, f"{key} {v[key]!r} must be {len(t['tensor'])} whole numbers, one per dimension"
                desc[key] = list(v[key])
        if "padding" in v:
            if v["padding"] not in ("zero", "nan"):
                return None, f"padding {v['padding']!r} must be \"zero\" or \"nan\""
            desc["padding"] = v["padding"]
        return desc, None
    return None, ("a table argument is { tensor = [...], dtype = ... }, { descriptor = {...}, block = [...] }, "
                  "{ dtype = ... } or { none = true }, not " + "{ " + ", ".join(sorted(keys)) + " }")


def _ints(v, least: int) -> bool:
    return isinstance(v, list) and all(isinstance(x, int) and not isinstance(x, bool) and x >= least for x in v)


def _tensor(v: dict):
    extra = set(v) - {"tensor", "dtype", "strides", "align"}
    if extra:
        return None, f"a tensor takes tensor, dtype, strides, align; not {', '.join(sorted(extra))}"
    shape = v["tensor"]
    if not _ints(shape, 0) or len(shape) > MAX_DIMS:
        return None, f"tensor {shape!r} must be a shape: up to {MAX_DIMS} whole numbers, 0 or more"
    dtype = DTYPE_ALIASES.get(v.get("dtype", "float32"), v.get("dtype", "float32"))
    if dtype not in TENSOR_DTYPES:
        return None, f"dtype {v.get('dtype')!r} is not a tensor dtype ({', '.join(TENSOR_DTYPES)})"
    strides = v.get("strides")
    if strides is None:
        strides, step = [], 1
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
    elif not _ints(strides, 0) or len(strides) != len(shape):
        return None, f"strides {strides!r} must be {len(shape)} whole numbers, one per dimension"
    align = v.get("align", 16)
    if align not in ALIGNS or isinstance(align, bool):
        return None, f"align {align!r} must be one of {', '.join(map(str, ALIGNS))} (bytes the data pointer is a multiple of)"
    return {"tensor": list(shape), "dtype": dtype, "strides": list(strides), "align": align}, None


# --- the kernel file, read with ast ----------------------------------------------------------------

def read_kernel(path: Path, name: str):
    """KernelDef of `name` in the file; None when the file has no such object; or (file, line,
    why) when the file cannot be read or parsed."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        return (str(path), 1, f"cannot read the kernel file: {getattr(e, 'strerror', None) or e}")
    try:
        return _read_kernel(path, text, name)
    except SyntaxError as e:
        return (str(path), e.lineno or 1, f"the kernel file does not parse: {e.msg}")
    except (RecursionError, MemoryError):
        # Python's parser (or a walk of its tree) gives up on expressions nested or chained this deep.
        return (str(path), 1, "the kernel file nests an expression too deeply for Python to read it")


def _read_kernel(path: Path, text: str, name: str):
    tree = ast.parse(text, filename=str(path))
    top: dict[str, ast.stmt] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            top[node.name] = node
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    top[t.id] = node
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            top[node.target.id] = node
    found = top.get(name)
    if found is None:
        return None
    if isinstance(found, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return _from_def(found, found.decorator_list, top)
    # `kernel = triton.autotune(...)(triton.jit(fn))` and the like: follow the innermost name
    value = getattr(found, "value", None)
    wrappers = []
    while isinstance(value, ast.Call) and value.args:
        wrappers.append(value.func)
        value = value.args[0]
    inner = top.get(value.id) if isinstance(value, ast.Name) else None
    if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef)) and wrappers:
        return _from_def(inner, wrappers + list(inner.decorator_list), top, line=found.lineno)
    return KernelDef(line=found.lineno, exact=False)


def _from_def(fn, decorators, top, line: int | None = None) -> KernelDef:
    a = fn.args
    params = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    positional = [*a.posonlyargs, *a.args]
    with_default = {p.arg for p in positional[len(positional) - len(a.defaults):]} if a.defaults else set()
    with_default |= {p.arg for p, d in zip(a.kwonlyargs, a.kw_defaults) if d is not None}
    exact = a.vararg is None and a.kwarg is None
    defaults = {}
    for p, d in [*zip(positional[len(positional) - len(a.defaults):], a.defaults), *zip(a.kwonlyargs, a.kw_defaults)]:
        if d is not None:
            try:
                defaults[p.arg] = ast.literal_eval(d)
            except ValueError:
                continue  # computed: the sweep that needs it is told to give it
    autotuned, count, configs = False, None, None
    tuned: frozenset | None = frozenset()
    heur: set = set()
    for d in decorators:
        call = d if isinstance(d, ast.Call) else None
        which = _dotted(call.func if call else d)
        if which.endswith("autotune") and call is not None:
            autotuned = True
            tuned, count, configs = _autotune_configs(call, top)
        elif which.endswith("heuristics") and call is not None and call.args and isinstance(call.args[0], ast.Dict):
            heur |= {k.value for k in call.args[0].keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif which.endswith("heuristics"):
            heur |= set(params)   # a heuristics table ast cannot read: any parameter may come from it
    return KernelDef(line=line or fn.lineno, params=tuple(params), required=frozenset(set(params) - with_default),
                     exact=exact, autotuned=autotuned, tuned=tuned, config_count=count, heuristics=frozenset(heur),
                     defaults=defaults, configs=configs)


def _dotted(node) -> str:
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Call):
        return _dotted(node.func)
    return ""


def _autotune_configs(call: ast.Call, top: dict):
    """(parameters the configs set, how many configs, each config's literal kwargs and options)
    of @triton.autotune(configs=...): a list, a name bound to one, or a call of a function of the
    file that returns one (as Triton's tutorials write it); (None, None, None) when the list is
    computed otherwise (a comprehension): then ast cannot say."""
    node = next((k.value for k in call.keywords if k.arg == "configs"), call.args[0] if call.args else None)
    if isinstance(node, ast.Name) and isinstance(top.get(node.id), ast.Assign):
        node = top[node.id].value
    if isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Name) \
            and isinstance(top.get(node.func.id), ast.FunctionDef):
        body = top[node.func.id].body
        if len(body) == 1 or (len(body) == 2 and isinstance(body[0], ast.Expr)):  # a docstring, then the return
            if isinstance(body[-1], ast.Return):
                node = body[-1].value
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None, None, None
    keys = set()
    configs: list | None = []
    for cfg in node.elts:
        if not (isinstance(cfg, ast.Call) and _dotted(cfg.func).endswith("Config")):
            return None, None, None
        kw = cfg.args[0] if cfg.args else next((k.value for k in cfg.keywords if k.arg == "kwargs"), None)
        if not isinstance(kw, ast.Dict) or not all(isinstance(k, ast.Constant) for k in kw.keys):
            return None, len(node.elts), None
        keys |= {k.value for k in kw.keys if isinstance(k, ast.Constant)}
        if configs is not None:
            try:
                values = ast.literal_eval(kw)
                # Triton's Config defaults: 4 warps, 3 stages, 1 CTA
                options = {"num_warps": 4, "num_stages": 3, "num_ctas": 1}
                options.update({k.arg: ast.literal_eval(k.value) for k in cfg.keywords
                                if k.arg in ("num_warps", "num_stages", "num_ctas", "maxnreg")})
                configs.append({**values, **options})
            except ValueError:
                configs = None
    return frozenset(keys), len(node.elts), None if configs is None else tuple(configs)
