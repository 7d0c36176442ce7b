#!/usr/bin/env bash
# Start a local Docker engine for `sandbox=docker`, offline, idempotently.
#
#   scripts/docker-engine.sh            # install docker.io if missing, start dockerd if needed
#
# The engine runs with --bridge=none: evalrun containers use network_mode=none unless a task asks
# for a network, and these machines cannot make the default bridge (user-defined bridge networks
# work). iptables stays on, as Docker's default: it keeps networks apart and gives an internal
# network no way out, which the egress gate of an allow-listed task relies on. If the daemon already
# answers (DOCKER_HOST or the default socket), nothing is started. dockerd's log goes to
# $EVALRUN_DOCKERD_LOG (default /var/log/evalrun-dockerd.log). Waits at most
# $EVALRUN_DOCKERD_WAIT_S seconds (default 60) for `docker info`, then fails with the log's tail.
set -euo pipefail

log_file=${EVALRUN_DOCKERD_LOG:-/var/log/evalrun-dockerd.log}
wait_s=${EVALRUN_DOCKERD_WAIT_S:-60}

say() { printf 'docker-engine: %s\n' "$*" >&2; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
  say "installing docker.io (apt-get)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq docker.io >/dev/null
fi

if docker info >/dev/null 2>&1; then
  say "engine already answering at ${DOCKER_HOST:-unix:///var/run/docker.sock}"
  exit 0
fi

if [ -n "${DOCKER_HOST:-}" ] && [ "${DOCKER_HOST}" != "unix:///var/run/docker.sock" ]; then
  say "DOCKER_HOST=${DOCKER_HOST} does not answer; this script only starts the default local engine"
  say "unset DOCKER_HOST to use it, or start the engine behind DOCKER_HOST yourself"
  exit 1
fi

if pgrep -x dockerd >/dev/null 2>&1; then
  say "dockerd is running but not answering yet; waiting"
else
  say "starting dockerd (log: ${log_file})"
  mkdir -p "$(dirname "${log_file}")"
  # setsid: the daemon must outlive this script and the shell that ran it.
  as_root setsid dockerd --bridge=none >>"${log_file}" 2>&1 </dev/null &
fi

deadline=$((SECONDS + wait_s))
until docker info >/dev/null 2>&1; do
  if [ "${SECONDS}" -ge "${deadline}" ]; then
    say "dockerd did not answer within ${wait_s}s; last lines of ${log_file}:"
    tail -n 20 "${log_file}" >&2 2>/dev/null || true
    exit 1
  fi
  sleep 0.5
done
say "engine ready: $(docker version --format '{{.Server.Version}}' 2>/dev/null)"
