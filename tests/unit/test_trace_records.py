"""Merging the records of a traced program's processes (reprokit/trace/program.py): each
process numbers its own specialisations and autotuner calls; the merge numbers them anew, keeps
a specialisation two processes launched once, and sums launches."""

from __future__ import annotations

import json

from reprokit.trace import program
from reprokit.trace.program import merge, parse


def _spec(n, file, sig, call=None):
    return {"type": "spec", "n": n, "file": file, "kernel": file.split(".")[1], "spec": {"signature": sig},
            "call": {"args": {}}, "autotune": None if call is None else {"kernel": "k", "call": call}}


def test_processes_merge_into_one_numbering():
    parent = [{"type": "start", "since": 1, "triton": "3.6.0"},
              _spec(1, "m.k.py", {"x": "*fp32"}), {"type": "launched", "n": 1},
              _spec(2, "m.t.py", {"y": "i32"}, call=1), {"type": "autotune", "kernel": "t", "call": 1},
              {"type": "end", "launches": {"1": 3, "2": 1}}]
    child = [{"type": "start", "since": 2, "triton": "3.6.0"},
             _spec(1, "m.t.py", {"y": "i64"}, call=1), {"type": "autotune", "kernel": "t", "call": 1},
             _spec(2, "m.k.py", {"x": "*fp32"}), {"type": "launched", "n": 2},
             {"type": "tensors", "n": 2, "when": "inputs", "file": "0002.inputs.pt"},
             {"type": "end", "launches": {"1": 1, "2": 5}}]
    out = merge([parent, child])
    specs = [r for r in out if r["type"] == "spec"]
    assert [(s["n"], s["file"], s["spec"]["signature"]) for s in specs] == [
        (1, "m.k.py", {"x": "*fp32"}), (2, "m.t.py", {"y": "i32"}), (3, "m.t.py", {"y": "i64"})]
    assert [s["autotune"]["call"] for s in specs if s["autotune"]] == [1, 2]
    assert [r["call"] for r in out if r["type"] == "autotune"] == [1, 2]
    assert [r["n"] for r in out if r["type"] == "launched"] == [1, 1]  # the child's k is the parent's
    assert [r["n"] for r in out if r["type"] == "tensors"] == [1]
    assert [r for r in out if r["type"] == "start"] == [parent[0]]
    (end,) = [r for r in out if r["type"] == "end"]
    assert end["launches"] == {"1": 8, "2": 1, "3": 1}


def _process(trace_dir, name, records, kernels=(), tail=""):
    """A process's folder as recorder.py writes it: records.jsonl and its kernel files."""
    folder = trace_dir / name
    (folder / "kernels").mkdir(parents=True)
    (folder / "records.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records) + tail)
    for file, text in kernels:
        (folder / "kernels" / file).write_text(text)


def test_parse_puts_the_program_first_then_orders_by_what_was_recorded_and_survives_a_cut_line(tmp_path):
    root = [{"type": "start", "since": 30, "pid": 7, "triton": "3.6.0"}, _spec(1, "a.k.py", {"x": "*i8"})]
    first = [{"type": "start", "since": 20, "pid": 8, "triton": "3.6.0"}, _spec(1, "a.k.py", {"x": "*fp16"})]
    second = [{"type": "start", "since": 10, "pid": 9, "triton": "3.6.0"}, _spec(1, "a.k.py", {"x": "*fp32"})]
    # folder names and start times sort otherwise: the program (pid 7) comes first, then the
    # workers by what they recorded, whichever the scheduler started first
    _process(tmp_path, "p1-aa", second, [("a.k.py", "k")], tail='{"type": "sp')
    _process(tmp_path, "p2-aa", first, [("a.k.py", "k")])
    _process(tmp_path, "p9-aa", root, [("a.k.py", "k")])
    run = parse(tmp_path, 0, 1.0, "", root_pid=7)
    assert [s["spec"]["signature"]["x"] for s in run.specs] == ["*i8", "*fp16", "*fp32"]
    assert run.start["since"] == 30
    assert [p.name for p in (tmp_path / "kernels").iterdir()] == ["a.k.py"]


def test_parse_keeps_kernel_files_apart_by_their_text_and_tensors_by_the_merged_number(tmp_path):
    parent = [{"type": "start", "since": 1, "pid": 1}, _spec(1, "m.k.py", {"x": "*fp32"}),
              {"type": "tensors", "n": 1, "when": "inputs", "file": "0001.inputs.pt"}]
    # the child's m.k.py is another kernel of that name (another module m): it must not replace
    # the parent's; its own numbering starts at 1 again, and so does its tensor file
    child = [{"type": "start", "since": 2, "pid": 2}, _spec(1, "m.k.py", {"x": "*fp32"}),
             {"type": "tensors", "n": 1, "when": "inputs", "file": "0001.inputs.pt"}]
    _process(tmp_path, "p1-aa", parent, [("m.k.py", "parent's k"), ("m.py", "module")])
    _process(tmp_path, "p2-bb", child, [("m.k.py", "child's k"), ("m.py", "module")])
    for name, data in (("p1-aa", b"parent"), ("p2-bb", b"child")):
        (tmp_path / name / "tensors").mkdir()
        (tmp_path / name / "tensors" / "0001.inputs.pt").write_bytes(data)
    run = parse(tmp_path, 0, 1.0, "", root_pid=1)
    assert [(s["n"], s["file"]) for s in run.specs] == [(1, "m.k.py"), (2, "m.k-2.py")]
    kernels = tmp_path / "kernels"
    assert sorted(p.name for p in kernels.iterdir()) == ["m.k-2.py", "m.k.py", "m.py"]
    assert (kernels / "m.k.py").read_text() == "parent's k" and (kernels / "m.k-2.py").read_text() == "child's k"
    assert [r["file"] for r in run.records if r["type"] == "tensors"] == ["0001.inputs.pt", "0002.inputs.pt"]
    assert (tmp_path / "tensors" / "0002.inputs.pt").read_bytes() == b"child"


def test_torch_compiles_caches_are_off_in_a_traced_run_unless_the_user_chose(tmp_path):
    """A warm Inductor cache loads compiled kernels without compiling them: the traced program
    runs with torch's own switch for every compile cache on, unless its environment set it."""
    from reprokit.trace import program

    opts = program.TraceOptions(("python", "p.py"), {"capability": 90}, False)
    env = program.child_env(tmp_path, opts, {"PATH": "/bin"})
    assert env["TORCHINDUCTOR_FORCE_DISABLE_CACHES"] == "1"
    for key in program.INDUCTOR_CACHES:
        mine = program.child_env(tmp_path, opts, {"PATH": "/bin", key: "0"})
        assert mine[key] == "0" and not any(k in mine for k in program.INDUCTOR_CACHES if k != key)


def test_the_python_a_command_runs_is_found_on_its_own_path(tmp_path):
    """The capture's harness is prestarted in the Python the command names (argv[0] on the PATH
    the program gets, absolute, a venv's link left as it is); a launcher or a script gets none."""
    bin_dir = tmp_path / "venv" / "bin"
    bin_dir.mkdir(parents=True)
    for name in ("python3.12", "torchrun", "python-config"):
        (bin_dir / name).write_text("#!/bin/sh\n")
        (bin_dir / name).chmod(0o755)
    (bin_dir / "python").symlink_to(bin_dir / "python3.12")
    env = {"PATH": str(bin_dir)}
    assert program.interpreter(("python", "p.py"), env) == str(bin_dir / "python")  # not resolved
    assert program.interpreter(("python3.12", "p.py"), env) == str(bin_dir / "python3.12")
    assert program.interpreter((str(bin_dir / "python"), "p.py"), {}) == str(bin_dir / "python")
    assert program.interpreter(("torchrun", "p.py"), env) is None
    assert program.interpreter(("python-config",), env) is None
    assert program.interpreter(("python3.99", "p.py"), env) is None  # not on that PATH
    assert program.interpreter((), env) is None
