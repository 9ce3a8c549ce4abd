"""The spine: one host path from a plan to a bundle, which every verb that runs a stack takes.

    execute.stage(workdir, plan, kernels, kind)          a work folder ready for the harness
    execute.execute(plan, stack, executor, workdir, options) -> Capture
                                                         the harness run: scratch folder, clock
                                                         reset, results parsed once (records)
    capture.capture(stack, executor, out_dir, options)   a capture folder, written aside and put in
                                                         place atomically; a failure kept as .failed
    stacks.run_stacks(stacks, executor, options, bundle, listener)
                                                         capture and bundle each stack (run, replay,
                                                         bisect, the fleet task, trace)
    publish.publish(capture_dir, origin, options)        the one door to the bundle writer
    replay.replay(...), bisect.bisect(...)               the verbs that run stacks, then judge them
                                                         with reprokit.compare

Below the verbs everything is typed: options (reprokit.options) in, records (reprokit.records)
and outcomes out, and progress told through one Listener (reprokit.options), never an argparse
Namespace, a callback per layer or an injected runner. A test stands a scripted Executor in for
a stack (tests/helpers/scripted_executor.py).

A new verb that makes a bundle (trace: a traced program's specialisations are a plan like any
other) builds a plan and calls run_stacks, or capture then publish when it adds files of its own
to the capture folder first; it never calls the harness or the bundle writer itself. A sweep
keeps a resumable work folder of its own (reprokit.sweep.run) and calls execute, then publish.
"""
