#!/usr/bin/env bash
# The suite's GPU run of this checkout against another's (BASE: a folder holding that commit's
# reprokit/, Makefile, pyproject.toml, kernels/, ...: `git archive COMMIT ... | tar x -C BASE`),
# on one machine, interleaved: each cold (an empty reprokit cache), then warm twice, alternating
# which goes first. Prints each run's wall time as a user types it, and the ratios.
#     bash scripts/gpu/suite-ab.sh BASE wheels "$OUT"
set -u
. scripts/gpu/install.sh
BASE=$(cd "${1:?the base checkout}" && pwd)
WHEELS=$(cd "${2:-wheels}" && pwd)
OUT=${3:?the folder to write into}
PY=$(command -v python3)
NEW=$PWD
install_host "$WHEELS" "$PY" "$OUT/install-new.log"
(cd "$BASE" && install_host "$WHEELS" "$PY" "$OUT/install-base.log")
CACHES=$(mktemp -d)
run() {  # run NAME DIR: the suite's GPU run in DIR with DIR's reprokit, into $OUT/NAME
    local t0 t1
    t0=$(date +%s.%N)
    (cd "$2" && REPROKIT_CACHE="$CACHES/$(basename "$2")" .reprokit/host-local/bin/reprokit run --gpu h100 \
        --executor local --out "$OUT/$1" --json >"$OUT/$1.json" 2>"$OUT/$1.err")
    local rc=$?
    t1=$(date +%s.%N)
    echo "$1 $rc $(python3 -c "print(round($t1 - $t0, 2))")" | tee -a "$OUT/walls.txt"
}
run new-cold "$NEW"; run base-cold "$BASE"
run base-warm-1 "$BASE"; run new-warm-1 "$NEW"
run new-warm-2 "$NEW"; run base-warm-2 "$BASE"
python3 - "$OUT/walls.txt" <<'PY'
import sys
w = {name: float(s) for name, rc, s in (line.split() for line in open(sys.argv[1]))}
print(f"cold: new {w['new-cold']:.1f} s, base {w['base-cold']:.1f} s, new/base {w['new-cold'] / w['base-cold']:.3f}")
for i in (1, 2):
    n, b = w[f"new-warm-{i}"], w[f"base-warm-{i}"]
    print(f"warm {i}: new {n:.1f} s, base {b:.1f} s, new/base {n / b:.3f}")
PY
