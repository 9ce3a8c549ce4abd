"""Run a program with tritonparse's structured logging on (its defaults, launch tracing on), as a
user who also traces with tritonparse would, and print how many compilations and launches it logged:
`reprokit trace -- python with_tritonparse.py [--aot] FOLDER PROGRAM.py ARGS` shows both tools at once.
--aot: the program compiles ahead of time (as Inductor does, and as tests/data/trace's
generated_kernels.py does under the interpreter on a CPU host): the interpreter is turned off
before tritonparse imports Triton, as that program does before its own import; else Triton's
language is built interpreted and its Gluon, imported by the first compile, refuses it."""

import glob
import json
import os
import runpy
import sys


def count(folder: str) -> dict:
    """Events by type in tritonparse's raw logs (NDJSON, one event a line)."""
    out: dict = {}
    for path in glob.glob(os.path.join(folder, "**", "*.ndjson"), recursive=True):
        with open(path, errors="replace") as f:
            for line in f:
                try:
                    ev = json.loads(line).get("event_type", "?")
                except json.JSONDecodeError:
                    continue
                out[ev] = out.get(ev, 0) + 1
    return out


def main() -> None:
    if sys.argv[1] == "--aot":
        os.environ["TRITON_INTERPRET"] = "0"
        del sys.argv[1]
    import tritonparse.structured_logging as sl  # after the interpreter is decided: it imports Triton

    folder, program = sys.argv[1], sys.argv[2]
    sl.init(folder, enable_trace_launch=True)
    sys.argv = sys.argv[2:]
    try:
        runpy.run_path(program, run_name="__main__")
    except SystemExit as e:
        code = e.code
    else:
        code = 0
    sys.stdout.flush()
    print("tritonparse events: " + json.dumps(count(folder), sort_keys=True), file=sys.stderr)
    sys.exit(code)


if __name__ == "__main__":
    main()
