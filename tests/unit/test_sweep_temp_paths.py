"""A sweep masks the temporary paths of the runs that made its work folder, by the roots those runs
recorded, not by a guess at /tmp: the same point gives the same words whatever TMPDIR was."""

from __future__ import annotations

from reprokit.sweep.condense import TempPaths

PTXAS = "{r}/tmpab_12cd3.ptx -o {r}/tmpab_12cd3.ptx.o"
ERROR = "error: {r}/reprokit-cases-k2j4_x9q/tensor_descriptor.base/kernel.ptx: line 7"


def test_every_recorded_root_masks_to_the_same_words():
    roots = ("/tmp", "/var/tmp/job-17", "/scratch/u/reprokit-sweep.reprokit-4242-0badf00d.tmp")
    temp = TempPaths(roots)
    for r in roots:
        assert temp.mask(PTXAS.format(r=r)) == "<tmp>.ptx -o <tmp>.ptx.o"
        assert temp.mask(ERROR.format(r=r)) == "error: <scratch>/tensor_descriptor.base/kernel.ptx: line 7"
        assert temp.mask(f"cd {r} && ls {r}/other") == "cd <tmpdir> && ls <tmpdir>/other"


def test_a_root_inside_another_is_masked_whole_and_lookalikes_are_left():
    temp = TempPaths(("/tmp", "/tmp/tmpdir-of-ci"))   # the longer root wins where both match
    assert temp.mask("/tmp/tmpdir-of-ci/tmpzz9.ptx") == "<tmp>.ptx"
    # Not under a root: a path that merely starts with the same letters, and /tmp's name in prose.
    assert temp.mask("/tmpfoo/tmpzz9.ptx and /tmp.old") == "/tmpfoo/tmpzz9.ptx and /tmp.old"
    # What a run did not use is not masked: another temp folder stays as it was.
    assert TempPaths(("/var/tmp/job-17",)).mask("/tmp/tmpzz9.ptx") == "/tmp/tmpzz9.ptx"


def test_no_roots_and_non_strings_pass_through():
    assert TempPaths().mask("/tmp/tmpzz9.ptx") == "/tmp/tmpzz9.ptx"
    assert TempPaths(("/tmp", "/", "")).mask(None) is None
    assert TempPaths(("/", "")).mask("/tmp/x") == "/tmp/x"
