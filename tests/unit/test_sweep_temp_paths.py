"""A sweep masks the temporary paths and HOMEs of the runs that made its work folder, by what
those runs recorded, not by a guess at /tmp: the same point gives the same words whatever TMPDIR
and HOME were."""

from __future__ import annotations

from reprokit.sweep.condense import RunPaths

PTXAS = "{r}/tmpab_12cd3.ptx -o {r}/tmpab_12cd3.ptx.o"
ERROR = "error: {r}/reprokit-cases-k2j4_x9q/tensor_descriptor.base/kernel.ptx: line 7"


def test_every_recorded_root_masks_to_the_same_words():
    roots = ("/tmp", "/var/tmp/job-17", "/scratch/u/reprokit-sweep.reprokit-4242-0badf00d.tmp")
    paths = RunPaths(roots)
    for r in roots:
        assert paths.mask(PTXAS.format(r=r)) == "<tmp>.ptx -o <tmp>.ptx.o"
        assert paths.mask(ERROR.format(r=r)) == "error: <scratch>/tensor_descriptor.base/kernel.ptx: line 7"
        assert paths.mask(f"cd {r} && ls {r}/other") == "cd <tmpdir> && ls <tmpdir>/other"


def test_a_root_inside_another_is_masked_whole_and_lookalikes_are_left():
    paths = RunPaths(("/tmp", "/tmp/tmpdir-of-ci"))   # the longer root wins where both match
    assert paths.mask("/tmp/tmpdir-of-ci/tmpzz9.ptx") == "<tmp>.ptx"
    # Not under a root: a path that merely starts with the same letters, one that ends with the
    # root's name, and /tmp's name in prose.
    assert paths.mask("/tmpfoo/tmpzz9.ptx /var/tmp/tmpzz9.ptx /tmp.old") == \
        "/tmpfoo/tmpzz9.ptx /var/tmp/tmpzz9.ptx /tmp.old"
    # What a run did not use is not masked: another temp folder stays as it was.
    assert RunPaths(("/var/tmp/job-17",)).mask("/tmp/tmpzz9.ptx") == "/tmp/tmpzz9.ptx"


def test_a_home_under_a_temp_root_stays_whole():
    paths = RunPaths(temp_roots=("/tmp",), homes=("/tmp/x/home/",))
    assert paths.mask("/tmp/x/home/.triton/cache and /tmp/tmpzz9.ptx") == "<home>/.triton/cache and <tmp>.ptx"
    doc = {"knobs": {"cache": {"home_dir": "/tmp/x/home/", "dir": "/tmp/x/home/.triton/cache"}}, "n": 3}
    assert paths.mask_json(doc) == {"knobs": {"cache": {"home_dir": "<home>/", "dir": "<home>/.triton/cache"}},
                                    "n": 3}


def test_no_roots_and_non_strings_pass_through():
    assert RunPaths().mask("/tmp/tmpzz9.ptx") == "/tmp/tmpzz9.ptx"
    assert RunPaths(("/tmp", "/", "")).mask(None) is None
    assert RunPaths(("/", "", "relative")).mask("/tmp/x relative/x") == "/tmp/x relative/x"


def test_a_cache_under_home_is_the_cache_and_a_venv_path_is_the_same_under_any_home():
    ptxas = "/root/.cache/reprokit/venvs/triton-3.5-cu130-4d35bc29cc18/bin/ptxas"
    under_root = RunPaths(homes=("/root",), caches=("/root/.cache/reprokit",))
    elsewhere = RunPaths(homes=("/tmp/x/home",), caches=("/root/.cache/reprokit",))
    assert under_root.mask(ptxas) == elsewhere.mask(ptxas) == "<cache>/venvs/triton-3.5-cu130-4d35bc29cc18/bin/ptxas"
    assert under_root.mask("/root/.triton/cache") == "<home>/.triton/cache"
