#!/usr/bin/env bash
# The suite's GPU run timed as a user types it, cold (an empty reprokit cache: no SASS cached)
# and then warm twice, with each bundle kept under $OUT: its logs/harness.log says when each case ended,
# and results.json where each case's time went (gpu_wait_s and gpu_s; an Inductor case's
# inductor.phase_s). From the checkout's root on a GPU host with the wheelhouse in wheels/:
#     bash scripts/gpu/suite-timeline.sh wheels "$OUT"
set -u
. scripts/gpu/install.sh
WHEELS=${1:-wheels}
OUT=${2:?the folder to write into}
PY=$(command -v python3)
install_host "$WHEELS" "$PY" "$OUT/install.log"
export REPROKIT_CACHE=$(mktemp -d)/cache
for run in cold warm warm-2; do
    t0=$(date +%s.%N)
    .reprokit/host-local/bin/reprokit run --gpu h100 --executor local --out "$OUT/$run" --json >"$OUT/$run.json" \
        2>"$OUT/$run.err"
    rc=$?
    t1=$(date +%s.%N)
    echo "$run: exit $rc, $(python3 -c "print(round($t1 - $t0, 2))") s"
done
