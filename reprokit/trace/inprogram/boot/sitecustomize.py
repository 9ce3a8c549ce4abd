"""Started by `reprokit trace` in the traced program (this folder first on PYTHONPATH): install the
recorder the moment the program imports triton, and chain to any sitecustomize this one hides."""

import importlib.abc
import importlib.util
import os
import sys


class _AfterTriton(importlib.abc.MetaPathFinder):
    """Finds `triton` through the finders after it, and has its module run the recorder's install
    once triton's own __init__ has finished (so its classes exist, and nothing is imported early).

    It stays in sys.meta_path until that install: a program often asks
    `importlib.util.find_spec("triton")` first, only to learn whether Triton is there (torch
    does, before Inductor imports it), and throws the spec away; the real import finds it anew."""

    done = False
    busy = False  # our own lookup of the spec below: the finders after us answer it

    def find_spec(self, name, path=None, target=None):
        if name != "triton" or self.done or self.busy or "triton" in sys.modules:
            return None
        self.busy = True
        try:
            spec = importlib.util.find_spec("triton")
        finally:
            self.busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module
        finder = self

        def exec_module(module):
            run(module)
            finder.done = True
            # inside the user's program at start-up: the recorder loads only when tracing is on.
            from reprokit.trace.inprogram import recorder
            recorder.install()

        spec.loader.exec_module = exec_module
        return spec


def _chain() -> None:
    """Run the sitecustomize that this file shadows, if the environment has one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        path = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("_reprokit_chained_sitecustomize", path)
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return


if os.environ.get("REPROKIT_TRACE_DIR"):
    if "triton" in sys.modules:  # imported by something before us (a .pth file): install now
        from reprokit.trace.inprogram import recorder
        recorder.install()
    else:
        sys.meta_path.insert(0, _AfterTriton())
_chain()
