#!/usr/bin/env bash
# Triton 3.8+'s autotuning listener on the H100 (issue 29, item 7), in one device command, from the
# checkout's root, everything written under $OUT:
#
#   <release>/bundle/   `reprokit trace` of benchmarks/trace_program.py (its autotuned `add`)
#   <release>/replay/   that bundle replayed on the GPU (`--executor local`): the chosen config
#   <release>/cands/    ... and with `--candidates`: the configs the autotuner did not choose
#   summary.txt         per release: the trace's autotune record (chosen, chosen_by), what the
#                       listener heard, each step's exit code; logs/ every step's output
#
# Two releases: the machine's (3.6: no autotuning listener, the choice is what the program
# launched) and a carried 3.8 (TRITON_TAR: a cp312 wheel stripped as docs/gpu.md says, unpacked
# and put first on PYTHONPATH, beside the machine's torch), where the listener names the choice.
# RELEASES="carried" runs the second alone. The stripped wheel drops the amd backend, so its
# dist-info's entry_points.txt must not name it (Triton 3.8 finds its backends by entry point).
# Needs: python3 with torch + triton (the lab H100's), WHEELS (docs/gpu.md's minimal wheelhouse).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
WHEELS=${WHEELS:-wheels}
PY=${PY:-python3}
TRITON_TAR=${TRITON_TAR:-.whl/triton-3.8.0-cp312-stripped.tar.xz}
mkdir -p "$OUT/logs"
say() { echo "$*" | tee -a "$OUT/summary.txt"; }

. scripts/gpu/install.sh
install_host "$WHEELS" "$PY" "$OUT/logs/install.log"
RK=$PWD/.reprokit/host-local/bin/reprokit
NEW=$(mktemp -d)
tar xJf "$TRITON_TAR" -C "$NEW" && chmod +x "$NEW"/triton/backends/nvidia/bin/* || { say "cannot unpack $TRITON_TAR"; exit 3; }

for which in ${RELEASES:-machine carried}; do
    if [ "$which" = carried ]; then export PYTHONPATH="$NEW"; fi
    rel=$("$PY" -c 'import triton; print(triton.__version__)')
    say "== $which: torch $("$PY" -c 'import torch; print(torch.__version__)') triton $rel"
    d="$OUT/$rel"
    mkdir -p "$d"
    timeout 150 "$RK" trace --gpu h100 --out "$d/bundle" --json -- "$PY" benchmarks/trace_program.py 5 \
        >"$OUT/logs/trace-$rel.json" 2>"$OUT/logs/trace-$rel.err"
    say "trace: exit $?"
    b=$(ls "$d"/bundle/trace-*.tgz 2>/dev/null | head -1)
    [ -n "$b" ] || continue
    tar -xzOf "$b" --wildcards '*/trace/trace.json' | "$PY" -c '
import json, sys
t = json.load(sys.stdin)
for a in t["autotune"]:
    print("autotune", a["kernel"], "call", a["call"], "chosen", json.dumps(a["chosen"]), "by", a["chosen_by"])
for h in t["autotune_listener"]:
    print("listener", h["kernel"], "chosen", json.dumps(h["chosen"]), "cache_hit", h["cache_hit"],
          "timings", json.dumps(h["timings"]))' | tee -a "$OUT/summary.txt"
    for mode in replay cands; do
        extra=(); [ "$mode" = cands ] && extra=(--candidates)
        timeout 150 "$RK" replay "$b" --executor local --all "${extra[@]}" --out "$d/$mode" --json \
            >"$OUT/logs/$mode-$rel.json" 2>"$OUT/logs/$mode-$rel.err"
        say "$mode: exit $? ($(tail -1 "$OUT/logs/$mode-$rel.err"))"
    done
    unset PYTHONPATH
done
