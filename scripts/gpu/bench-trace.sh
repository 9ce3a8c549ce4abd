#!/usr/bin/env bash
# On the H100: make bench-trace's side by side (plain, reprokit --tensors none and small,
# tritonparse with launch tracing), interleaved rounds, on a program (default: the Liger-Kernel
# ops of tests/data/trace/libs). $OUT gets bench.txt (every round and the medians) and
# bench-trace.json; install logs go to $OUT/install.log.
#
#   OUT=... WHEELHOUSE=.gpu/wheels [ROUNDS=5] scripts/gpu/bench-trace.sh [PROGRAM.py ARGS]
#
# Needs the wheelhouse of docs/offline.md with tritonparse 0.6.0, zstandard, orjson and
# liger-kernel 0.8.5 beside it (under extra/ or at its top).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
WHEELS=${WHEELHOUSE:-wheels}
PY=${PY:-python3}
. scripts/gpu/install.sh
install_host "$WHEELS" "$PY" "$OUT/install.log"
EXTRA=$PWD/.reprokit/bench-extra  # for the program's python only, kept out of its site-packages
install_beside "$PY" "$WHEELS" "$EXTRA" "$OUT/install.log" tritonparse==0.6.0 zstandard orjson liger-kernel==0.8.5
[ $# -gt 0 ] || set -- tests/data/trace/libs/liger_ops.py
PYTHONPATH="$EXTRA" .reprokit/host-local/bin/python benchmarks/bench_trace_side.py --python "$PY" \
    --rounds "${ROUNDS:-5}" --out /tmp/bench-trace -- "$@" >"$OUT/bench.txt" 2>&1
rc=$?
cp /tmp/bench-trace/bench-trace.json "$OUT/" 2>/dev/null
echo "bench: exit $rc" >>"$OUT/bench.txt"
tail -8 "$OUT/bench.txt"
