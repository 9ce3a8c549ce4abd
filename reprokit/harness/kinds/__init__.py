"""The kinds of case the harness runs, one module each (harness/case.py dispatches on a case's
`kind`); what they share (the call contract, the oracle, compat probes, stand-ins, the toolbox)
stays in harness/:

- triton_case: a kernel file's @jit function compiled ahead of time (the control suite's cases,
  and the compile every other Triton kind ends in); launch: such a case run on the GPU;
- callcase: a declared or traced call, specialised by the release's own JIT; callgpu: that
  call launched on the GPU with its recorded or seeded tensors;
- generated: a kernel a traced program compiled itself with triton.compile (Inductor's);
- inductor: the suite's torch.compile case, Inductor's kernels compiled in the stack;
- cudacpp: CUDA C++ ground truth, built with nvcc.
"""
