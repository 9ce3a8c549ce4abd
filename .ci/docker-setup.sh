#!/usr/bin/env bash
# CI: a Docker engine and the offline base image for the docker tests. Idempotent; root on Debian.
#
#   source .ci/docker-setup.sh      # from .ci/run: also exports REPROKIT_REQUIRE_DOCKER=1
#   bash .ci/docker-setup.sh        # stand-alone (the export then dies with the shell)
#
# Installs docker.io + debootstrap when missing, starts dockerd when no engine answers (waits
# up to DOCKERD_WAIT_S, default 60 s), builds reprokit-base:bookworm (reused when present),
# then requires the docker tests to run: with REPROKIT_REQUIRE_DOCKER=1 they fail, not skip.

reprokit_docker_setup() {
  local here root wait_s i
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(dirname "$here")"
  wait_s="${DOCKERD_WAIT_S:-60}"

  if ! command -v docker >/dev/null || ! command -v dockerd >/dev/null || ! command -v debootstrap >/dev/null; then
    echo "docker-setup: installing docker.io debootstrap" >&2
    DEBIAN_FRONTEND=noninteractive apt-get update -q || return 1
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q docker.io debootstrap || return 1
  fi

  if ! docker info >/dev/null 2>&1; then
    echo "docker-setup: starting dockerd (log: /var/log/dockerd.log)" >&2
    # setsid: the daemon outlives this shell and ignores its job control.
    setsid dockerd >/var/log/dockerd.log 2>&1 < /dev/null &
    for ((i = 0; i < wait_s; i++)); do
      docker info >/dev/null 2>&1 && break
      sleep 1
    done
    if ! docker info >/dev/null 2>&1; then
      echo "docker-setup: dockerd did not answer within ${wait_s}s; last log lines:" >&2
      tail -n 20 /var/log/dockerd.log >&2
      return 1
    fi
  fi
  echo "docker-setup: engine $(docker version --format '{{.Server.Version}}')" >&2

  "$root/scripts/make-base-image.sh" || return 1
  export REPROKIT_REQUIRE_DOCKER=1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  set -euo pipefail
  reprokit_docker_setup
else
  reprokit_docker_setup || return 1
fi
