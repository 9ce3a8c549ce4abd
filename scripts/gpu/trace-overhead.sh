#!/usr/bin/env bash
# On the H100: where a trace's time goes over the plain run, on the Liger-Kernel ops program.
# Plain runs, `reprokit trace --json --tensors none` runs and the same through `env` (a launcher:
# no harness prestarted beside the program) alternate (ROUNDS each, after one warm-up of the
# caches); the last trace runs under cProfile (the host's side: what it waits for) and its
# harness log comes back. Every figure goes to $OUT/phases.txt, the profile's top lines
# to $OUT/profile.txt.
#
#   OUT=... WHEELHOUSE=.gpu/wheels ROUNDS=3 scripts/gpu/trace-overhead.sh
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
WHEELHOUSE=${WHEELHOUSE:-wheels}
ROUNDS=${ROUNDS:-3}
. scripts/gpu/install.sh
install_host "$WHEELHOUSE" python3 "$OUT/install.log"
install_beside python3 "$WHEELHOUSE" /tmp/liger "$OUT/install.log" liger-kernel==0.8.5
export PYTHONPATH=/tmp/liger
PROG=(python3 tests/data/trace/libs/liger_ops.py)
RK=.reprokit/host-local/bin/python
say() { echo "$*" | tee -a "$OUT/phases.txt"; }
since() { python3 -c "import sys; print(round($EPOCHREALTIME - $1, 2))"; }
secs() { local t0=$EPOCHREALTIME; "$@" >/dev/null 2>"$OUT/last.err"; local rc=$?; echo "$(since "$t0") rc=$rc"; }
say "import torch: $(secs python3 -c 'import torch')"
say "import triton: $(secs python3 -c 'import triton')"
say "import torch+triton+liger: $(secs python3 -c 'import torch, triton, liger_kernel.transformers.functional')"
say "warm-up plain: $(secs "${PROG[@]}")"
for r in $(seq "$ROUNDS"); do
    say "round $r plain: $(secs "${PROG[@]}")"
    for how in direct env; do
        launcher=(); [ "$how" = env ] && launcher=(env)
        rm -rf /tmp/tr; t0=$EPOCHREALTIME
        $RK -m reprokit trace --json --gpu h100 --tensors none --out /tmp/tr -- "${launcher[@]}" "${PROG[@]}" >/tmp/tr.json 2>"$OUT/trace.err"
        rc=$?; t=$(since "$t0")
        say "round $r trace ($how): $t rc=$rc $(python3 -c 'import json,sys; d=json.load(open("/tmp/tr.json")); print("program", d["program"]["seconds"], "capture", d["capture_s"])' 2>&1 | tail -1)"
    done
done
rm -rf /tmp/tr
$RK -m cProfile -o "$OUT/trace.prof" -m reprokit trace --json --gpu h100 --tensors none --out /tmp/tr -- "${PROG[@]}" >/tmp/tr.json 2>>"$OUT/trace.err"
say "profiled trace: rc=$?"
$RK -c "import pstats; pstats.Stats('$OUT/trace.prof').sort_stats('cumulative').print_stats(60)" >"$OUT/profile.txt" 2>&1
b=$(ls /tmp/tr/*.tgz | head -1); mkdir -p /tmp/trx && tar xzf "$b" -C /tmp/trx
cat /tmp/trx/*/logs/harness.log /tmp/trx/*/logs/envsnap.log >"$OUT/harness.log" 2>&1
