"""What the host and the in-stack harness both import: standard library only, Python >= 3.9 (the
harness runs in every stack, the host reads what it wrote by the same rules).

    files    write_json: a JSON document written whole or not at all
    oracle   the verdict: TMA counts per IR level, expectations, rejections (harness and verify)
    redact   secret names and values, cut from environments, argv and text (envsnap and bundles)
    rows     a case record as table cells (summary.tsv, the README, the CLI's tables)
    shapes   contiguous strides of a shape (traced arguments, stand-in and seeded tensors)

tests/unit/test_import_graph.py holds the boundary: these modules import only the standard
library and each other, and the harness imports nothing else of reprokit.
"""
