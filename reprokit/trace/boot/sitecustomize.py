"""Started by `reprokit trace` in the traced program (this folder first on PYTHONPATH): install the
recorder the moment the program imports triton, and chain to any sitecustomize this one hides."""

import importlib.abc
import importlib.util
import os
import sys


class _AfterTriton(importlib.abc.MetaPathFinder):
    """Finds `triton` through the finders after it, and has its module run the recorder's install
    once triton's own __init__ has finished (so its classes exist, and nothing is imported early)."""

    def find_spec(self, name, path=None, target=None):
        if name != "triton":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("triton")
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            # inside the user's program at start-up: the recorder loads only when tracing is on.
            from reprokit.trace import recorder

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
        from reprokit.trace import recorder

        recorder.install()
    else:
        sys.meta_path.insert(0, _AfterTriton())
_chain()
