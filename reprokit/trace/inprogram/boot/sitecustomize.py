"""Started by `reprokit trace` in the traced program (this folder first on PYTHONPATH): install the
recorder the moment the program imports triton, and chain to any sitecustomize this one hides."""

import importlib.util
import os
import sys


def _chain() -> None:
    """Run the sitecustomize that this file shadows, if the environment has one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if not entry or os.path.abspath(entry) == here:
            continue
        path = os.path.join(entry, "sitecustomize.py")
        if os.path.isfile(path):
            spec = importlib.util.spec_from_file_location("_reprokit_chained_sitecustomize", path)
            if spec is None or spec.loader is None:
                return
            mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(mod)
            return


def _package() -> None:
    """reprokit's own package, loaded from its folder (REPROKIT_TRACE_PACKAGE), never through a
    sys.path entry: the folder above it (a checkout's kernels/, tests/, scripts/; an install's
    site-packages, with the host's own jsonschema, rich, packaging) would shadow what the
    program imports."""
    folder = os.environ.get("REPROKIT_TRACE_PACKAGE")
    if not folder or "reprokit" in sys.modules:
        return
    spec = importlib.util.spec_from_file_location("reprokit", os.path.join(folder, "__init__.py"),
                                                  submodule_search_locations=[folder])
    if spec is None or spec.loader is None:
        return
    mod = importlib.util.module_from_spec(spec)
    sys.modules["reprokit"] = mod
    spec.loader.exec_module(mod)


def _install(module=None) -> None:
    # inside the user's program at start-up: the recorder loads only when tracing is on.
    from reprokit.trace.inprogram import recorder

    recorder.install()


if os.environ.get("REPROKIT_TRACE_DIR"):
    _package()
    if "triton" in sys.modules:  # imported by something before us (a .pth file): install now
        _install()
    else:
        # The recorder installs once triton's own __init__ has finished (trace/inprogram/afterimport.py).
        from reprokit.trace.inprogram.afterimport import AfterImport

        sys.meta_path.insert(0, AfterImport("triton", _install))
_chain()
