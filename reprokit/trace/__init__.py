"""`reprokit trace -- python script.py ARGS`: run a user's own program, record every distinct kernel
specialisation it compiled and launched, and capture them as declared "call" cases.

Two halves, two processes, two places:

- `inprogram/`, inside the user's program (started with `inprogram/boot/` first on PYTHONPATH,
  whose sitecustomize waits for `import triton`): `recorder` wraps the launch path of whichever
  Triton the program runs with, `listen` hears Triton's compile listener and Inductor's launches,
  `standin` gives the interpreter a driver where a CPU has none, `extract` writes each kernel's
  source with the @jit functions and module-level names it uses. None of it imports the host
  side of reprokit.
- here, on the host: `program` starts the program and reads what it recorded; `plan` turns the
  records into a plan of call cases and `generated` the compiles the program made itself into
  generated cases, which the capture runs like any other plan.
"""
