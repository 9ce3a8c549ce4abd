#!/usr/bin/env bash
# On the H100: remake the named GPU examples in the order given (scripts/examples.py --make --gpu,
# one at a time), and pack each into $OUT/examples.tar as soon as it is in place, so that a device
# command cut off by its time limit still brings back every example it made. Every step's exit
# code and seconds go to $OUT/summary.txt, its output to $OUT/logs.tar.
#
#   OUT=... WHEELHOUSE=.gpu/wheels scripts/gpu/remake-examples.sh h100-gpu-triton-3.6.0.tgz 'h100-trace-inductor-*'
#
# THEN='command ...' runs after the examples (its output in the logs, its exit in the summary).
set -uo pipefail
OUT=${OUT:?set OUT to the folder for the results}
export WHEELHOUSE=${WHEELHOUSE:-wheels}
logs=$(mktemp -d)
made=()
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
pack() {
    tar -cf "$OUT/logs.tar.part" -C "$logs" . && mv "$OUT/logs.tar.part" "$OUT/logs.tar"
    [ ${#made[@]} -eq 0 ] || { tar -cf "$OUT/examples.tar.part" -C bundles/examples "${made[@]}" \
        && mv "$OUT/examples.tar.part" "$OUT/examples.tar"; }
}
. scripts/gpu/install.sh
(install_host "$WHEELHOUSE" python3 "$logs/install.log") || { pack; exit 3; }
say "$(python3 -c 'import torch, triton; print("torch", torch.__version__, "triton", triton.__version__)')"
for name in "$@"; do
    t0=$(date +%s)
    .reprokit/host-local/bin/python scripts/examples.py --make --gpu --only "$name" >"$logs/${name//[*\/]/_}.log" 2>&1
    rc=$?
    say "$name: exit $rc in $(( $(date +%s) - t0 )) s"
    while IFS= read -r f; do made+=("$f"); done < <(cd bundles/examples && find . -name '*.tgz' -newer "$logs/install.log" | sed 's|^\./||')
    mapfile -t made < <(printf '%s\n' "${made[@]}" | sort -u)
    pack
done
if [ -n "${THEN:-}" ]; then
    t0=$(date +%s)
    bash -c "$THEN" >"$logs/then.log" 2>&1
    say "then: exit $? in $(( $(date +%s) - t0 )) s"
    pack
fi
