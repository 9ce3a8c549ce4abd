#!/usr/bin/env bash
# Build the offline test base image: Debian bookworm from debootstrap, imported into Docker.
#
# Where no image registry is reachable (CI, air-gapped dev machines) the stack images build
# FROM this instead of nvidia/cuda: it has python3 + venv + pip, and it trusts this host's CA
# bundle (PIP_CERT), so `docker build --network host` can still pip install the pins.
#
#   scripts/make-base-image.sh                 # reuse the image when present
#   scripts/make-base-image.sh --force         # rebuild it
#
# Environment: REPROKIT_BASE_IMAGE (tag, default reprokit-base:bookworm), REPROKIT_ROOTFS (a
# debootstrap folder to reuse or create, default /var/cache/reprokit/rootfs-bookworm),
# DEBIAN_MIRROR (default http://deb.debian.org/debian). Needs root, debootstrap and docker.
set -euo pipefail

TAG="${REPROKIT_BASE_IMAGE:-reprokit-base:bookworm}"
ROOTFS="${REPROKIT_ROOTFS:-/var/cache/reprokit/rootfs-bookworm}"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
HOST_CA="${REPROKIT_HOST_CA:-/etc/ssl/certs/ca-certificates.crt}"
PACKAGES="python3,python3-venv,python3-pip,ca-certificates"
# Where the host bundle lands inside the image; Debian's own bundle stays untouched.
IMAGE_CA=/etc/ssl/certs/reprokit-host-ca.crt

force=0
case "${1:-}" in
  --force) force=1 ;;
  "") ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

log() { echo "make-base-image: $*" >&2; }

if [ "$force" = 0 ] && docker image inspect "$TAG" >/dev/null 2>&1; then
  log "$TAG present, reused"
  exit 0
fi

[ "$(id -u)" = 0 ] || { log "needs root (debootstrap)"; exit 1; }
command -v debootstrap >/dev/null || { log "debootstrap not installed (apt-get install debootstrap)"; exit 1; }

# A rootfs counts as complete only once python3 -m venv works in it: an interrupted
# debootstrap leaves a folder that must not be imported.
if [ "$force" = 1 ] || ! chroot "$ROOTFS" /usr/bin/python3 -c "import venv, ensurepip" >/dev/null 2>&1; then
  log "debootstrap bookworm into $ROOTFS"
  rm -rf "$ROOTFS"
  mkdir -p "$(dirname "$ROOTFS")"
  dlog="$(dirname "$ROOTFS")/debootstrap.log"
  if ! debootstrap --variant=minbase --include="$PACKAGES" bookworm "$ROOTFS" "$MIRROR" >"$dlog" 2>&1; then
    tail -n 30 "$dlog" >&2
    log "debootstrap failed (full log: $dlog)"
    exit 1
  fi
  chroot "$ROOTFS" /usr/bin/python3 -c "import venv, ensurepip"
else
  log "reusing rootfs $ROOTFS"
fi

# pip inside the image must trust whatever this host trusts (a TLS-inspecting proxy's CA
# included), else `pip install` fails certificate verification during the stack builds.
if [ -f "$HOST_CA" ]; then
  install -m 0644 "$HOST_CA" "$ROOTFS$IMAGE_CA"
else
  log "no host CA bundle at $HOST_CA; using Debian's"
  cp "$ROOTFS/etc/ssl/certs/ca-certificates.crt" "$ROOTFS$IMAGE_CA"
fi

log "importing $TAG"
tar --numeric-owner -C "$ROOTFS" \
    --exclude=./proc/* --exclude=./sys/* --exclude=./dev/* \
    --exclude=./var/cache/apt/archives/*.deb --exclude=./var/lib/apt/lists/* \
    -c . |
  docker import \
    --change "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --change "ENV PIP_CERT=$IMAGE_CA" \
    --change "ENV LANG=C.UTF-8" \
    --change 'CMD ["/bin/bash"]' \
    --message "reprokit offline base: debootstrap bookworm ($PACKAGES)" \
    - "$TAG" >/dev/null
log "built $TAG ($(docker image inspect --format '{{.Id}}' "$TAG"))"
