# How every device script installs what it needs on a GPU host with no network; sourced
# (`. scripts/gpu/install.sh`) from the checkout's root.
#
# install_host WHEELS PY LOG
#     reprokit's host side from the wheelhouse WHEELS into .reprokit/host-local, beside PY's own
#     torch and triton (the Makefile's rule, EXECUTOR=local). On failure: the log's tail, exit 3.
# install_beside PY WHEELS DIR LOG SPEC...
#     what the traced program imports besides the machine's torch and triton (tritonparse,
#     liger-kernel, ...), into DIR for PYTHONPATH: no index, no deps (their requirements would
#     pull another torch), looked for at the wheelhouse's top, in its extra/, and in .whl/.
#     On failure: the log's tail, exit 3.

install_host() {
    make .reprokit/host-local/.installed EXECUTOR=local WHEELHOUSE="$1" PYTHON="$2" >"$3" 2>&1 \
        || { tail -30 "$3"; exit 3; }
    # reprokit's bytecode, as a pip install compiles it: a checkout copied to a host that does not
    # write bytecode (PYTHONDONTWRITEBYTECODE) would compile ~140 modules from source at every start
    .reprokit/host-local/bin/python -m compileall -q reprokit >>"$3" 2>&1 || true
}

install_beside() {
    local py=$1 wheels=$2 dir=$3 log=$4
    shift 4
    local links=(--find-links "$wheels")
    [ -d "$wheels/extra" ] && links+=(--find-links "$wheels/extra")
    [ -d .whl ] && links+=(--find-links .whl)
    "$py" -m pip install -q --disable-pip-version-check --no-index "${links[@]}" --no-deps --target "$dir" "$@" \
        >>"$log" 2>&1 || { tail -5 "$log"; exit 3; }
}
