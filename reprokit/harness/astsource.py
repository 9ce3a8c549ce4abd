"""The ASTSource of a kernel in whichever form the installed Triton takes: one function, which the
harness calls (compat.make_source) and every standalone reproducer carries verbatim as its
`_make_source` (reprokit.harness.reproducer). So a script and the capture build the same source.

Free of Triton at import (its imports are the function's own), and written to run as it stands in
a script on Python 3.9: no annotations, no reprokit name. Its text is part of every reproducer's
bytes (bundle.templates digests them): an edit here makes the committed examples stale.
"""

from __future__ import annotations


def make_source(fn, signature, constexprs, divisible_by_16):
    """ASTSource for `fn` in the form the installed release takes (probed, as reprokit's harness
    does): 3.0-3.1 index-keyed with AttrsDescriptor(divisible_by_16=...), 3.2 name-keyed with
    AttrsDescriptor.from_hints, 3.3+ name-keyed with "constexpr" entries and path-keyed attrs."""
    import inspect
    from triton.compiler import ASTSource
    from triton.runtime.jit import JITFunction

    while not isinstance(fn, JITFunction) and hasattr(fn, "fn"):  # a declared call's @autotune, @heuristics
        fn = fn.fn
    if any(isinstance(v, dict) for v in constexprs.values()):  # a declared call's tl dtype, as its record writes it
        import triton.language as tl

        constexprs = {a: getattr(tl, v["dtype"]) if isinstance(v, dict) and "dtype" in v else v
                      for a, v in constexprs.items()}
    names = list(fn.arg_names)
    if "constexprs" in inspect.signature(ASTSource.__init__).parameters:
        sig = {a: ("constexpr" if a in constexprs else signature[a]) for a in names}
        attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in divisible_by_16}
        return ASTSource(fn, sig, constexprs=dict(constexprs), attrs=attrs)
    from triton.compiler import compiler
    attrs_cls = getattr(compiler, "AttrsDescriptor", None)
    hints = {names.index(a): 16 for a in divisible_by_16}
    if attrs_cls is not None and hasattr(attrs_cls, "from_hints"):
        sig = {a: signature[a] for a in names if a not in constexprs}
        return ASTSource(fn, sig, constants=dict(constexprs), attrs=attrs_cls.from_hints(hints))
    sig = {names.index(a): ("constexpr" if a in constexprs else signature[a]) for a in names}
    consts = {names.index(a): v for a, v in constexprs.items()}
    attrs = attrs_cls(divisible_by_16=set(hints)) if attrs_cls is not None else None
    return ASTSource(fn, sig, constants=consts, attrs=attrs)
