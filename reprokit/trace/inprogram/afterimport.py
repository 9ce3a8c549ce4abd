"""Inside the traced program: run something once a named module has been executed, the way
both the boot (after `triton`) and the compile listener (after Inductor's triton_heuristics)
need it. Standard library only: the boot loads it at the program's start-up."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from collections.abc import Callable


class AfterImport(importlib.abc.MetaPathFinder):
    """Finds `name` through the finders after it and calls `then(module)` once the module's own
    code has run (so its classes exist, and nothing is imported early).

    It stays in sys.meta_path until then, and answers None once done: removing itself from the
    list the import system is walking would make that import skip the finder after it. Until the
    module has run, every lookup gets a spec that wraps: a program often asks
    `importlib.util.find_spec(name)` first, only to learn whether it is there (torch does, for
    triton), and throws the spec away; the real import finds it anew. `meanwhile()`, asked at
    every other import while not done, ends the watch when it returns True (it did the work
    another way)."""

    def __init__(self, name: str, then: Callable[[object], None],
                 meanwhile: Callable[[], bool] | None = None) -> None:
        self.name, self.then, self.meanwhile = name, then, meanwhile
        self.done = False
        self.busy = False  # our own lookup of the spec below: the finders after us answer it

    def find_spec(self, fullname, path=None, target=None):
        if self.done or self.busy:
            return None
        if fullname != self.name:
            if self.meanwhile is not None and self.meanwhile():
                self.done = True
            return None
        if fullname in sys.modules:  # being imported again while half made: not ours to load
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            self.done = True
            self.then(module)

        spec.loader.exec_module = exec_module
        return spec
