"""docs/cli.md is the command line as the parser has it: regenerated, it is byte for byte the
checked-in file, and it holds every verb with its usage, every argument and an example."""

from __future__ import annotations

import subprocess
import sys

from reprokit import clidoc, clitree


def test_docs_cli_md_is_current():
    text = clidoc.render()
    assert clidoc.DOC.read_text() == text, "docs/cli.md is not current: run python -m reprokit.clidoc --write"


def test_every_verb_and_argument_is_in_the_reference():
    text = clidoc.render()
    for verb in clitree.verbs():
        section = text.split(f"\n## reprokit {verb.name}\n", 1)[1].split("\n## ", 1)[0]
        assert clidoc.usage(verb) in section
        for opt in verb.options:
            assert clidoc._flags(opt) in section, (verb.name, opt.name)
        assert clidoc.examples(verb), f"{verb.name}: no 'example:' in its epilog"
        for ex in clidoc.examples(verb):
            assert ex.startswith(f"reprokit {verb.name}") and f"```text\n{ex}\n```" in section, ex


def test_check_says_when_the_file_is_stale(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(clidoc, "DOC", tmp_path / "cli.md")
    (tmp_path / "cli.md").write_text(clidoc.render().replace("## reprokit run\n", "## reprokit ran\n"))
    assert clidoc.main(["--check"]) == 1 and "not current" in capsys.readouterr().err
    assert clidoc.main(["--write"]) == 0 and clidoc.main(["--check"]) == 0


def test_the_reference_does_not_depend_on_the_terminal(tmp_path):
    env = {"COLUMNS": "33", "PATH": "/usr/bin:/bin", "PYTHONHASHSEED": "7"}
    out = subprocess.run([sys.executable, "-m", "reprokit.clidoc"], capture_output=True, text=True, env=env,
                         cwd=clidoc.DOC.parents[1], check=True).stdout
    assert out == clidoc.DOC.read_text()
