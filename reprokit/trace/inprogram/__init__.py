"""What runs inside the traced program (the trace's other half, program.py and plan.py, runs on
the host): `boot/` first on PYTHONPATH, whose sitecustomize waits for `import triton`;
`recorder` wraps the launch path of whichever Triton the program runs with; `listen` hears
Triton's compile listener and Inductor's launches; `extract` writes each kernel's source with
the names it uses; `standin` gives the interpreter a driver where a CPU has none; `tmafill`
follows 3.0-3.3's host-filled descriptors; `writeonly` finds outputs a kernel only writes.
None of it imports the host side of reprokit: only the standard library, that Triton, and the
harness modules the capture uses too (so that both sides normalise alike)."""

# Set on every Triton or Inductor function the recorder and the listener wrap (JITFunction.run,
# Autotuner.run, CachingAutotuner.run, ...): a second install leaves a wrapped one be.
WRAPPED = "_reprokit_wrapped"
