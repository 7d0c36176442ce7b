#!/usr/bin/env bash
# Build evalrun's default Docker base image offline from Debian packages (no image registry).
#
#   scripts/build-base-image.sh [--force] [IMAGE]     # IMAGE defaults to evalrun-base:bookworm
#   scripts/build-base-image.sh --print-mirror        # only say which Debian mirror it would use
#
# Does nothing when IMAGE already exists (unless --force). Otherwise debootstraps a minimal Debian
# root filesystem with bash, python3, git, sqlite3, ca-certificates and a user `agent` (uid 1000)
# from the Debian mirror this machine's apt is configured with (/etc/apt/sources.list and
# /etc/apt/sources.list.d/; EVALRUN_APT_ETC names another folder than /etc/apt), and imports it
# with `docker import`. Override the mirror with EVALRUN_DEBIAN_MIRROR=<url> and the release with
# EVALRUN_DEBIAN_SUITE (default bookworm). Needs root (debootstrap) and a running
# engine (scripts/docker-engine.sh). Takes about a minute.
set -euo pipefail

force=0 print_mirror=0
if [ "${1:-}" = "--force" ]; then force=1; shift; fi
if [ "${1:-}" = "--print-mirror" ]; then print_mirror=1; shift; fi
image=${1:-evalrun-base:bookworm}
suite=${EVALRUN_DEBIAN_SUITE:-bookworm}
packages=python3,git,sqlite3,ca-certificates

say() { printf 'build-base-image: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

# The first apt source that serves "$suite" itself (not -updates/-security), in either the
# one-line (*.list) or the deb822 (*.sources) format.
apt_mirror() {
  local etc=${EVALRUN_APT_ETC:-/etc/apt} files=()
  [ -f "${etc}/sources.list" ] && files+=("${etc}/sources.list")
  for f in "${etc}"/sources.list.d/*.list "${etc}"/sources.list.d/*.sources; do
    [ -f "$f" ] && files+=("$f")
  done
  [ "${#files[@]}" -gt 0 ] || return 0
  awk -v suite="${suite}" '
    function has_suite(list,   n, i, parts) {
      n = split(list, parts, /[ \t]+/)
      for (i = 1; i <= n; i++) if (parts[i] == suite) return 1
      return 0
    }
    function flush(   u) {
      if (uris != "" && has_suite(suites) && types ~ /(^|[ \t])deb([ \t]|$)/) {
        split(uris, u, /[ \t]+/); print u[1]; found = 1; exit
      }
      uris = suites = types = ""
    }
    FNR == 1 && NR > 1 { flush() }
    FILENAME ~ /\.list$/ {
      if ($1 != "deb") next
      i = 2
      if ($i ~ /^\[/) { while ($i !~ /\]$/) i++; i++ }
      if ($(i + 1) == suite) { print $i; found = 1; exit }
      next
    }
    /^[ \t]*$/ { flush(); next }
    /^Types:/   { sub(/^Types:[ \t]*/, "");  types = $0 }
    /^URIs:/    { sub(/^URIs:[ \t]*/, "");   uris = $0 }
    /^Suites:/  { sub(/^Suites:[ \t]*/, ""); suites = $0 }
    END { if (!found) flush() }
' "${files[@]}"
}

mirror=${EVALRUN_DEBIAN_MIRROR:-$(apt_mirror)}
need_mirror() {
  [ -n "${mirror}" ] && return 0
  die "no apt source serves '${suite}' in ${EVALRUN_APT_ETC:-/etc/apt}/sources.list*;" \
    "set EVALRUN_DEBIAN_MIRROR=<debian mirror url>"
}
if [ "${print_mirror}" -eq 1 ]; then need_mirror; echo "${mirror}"; exit 0; fi

docker info >/dev/null 2>&1 || die "the Docker engine does not answer; start it with scripts/docker-engine.sh"

if [ "${force}" -eq 0 ] && docker image inspect "${image}" >/dev/null 2>&1; then
  say "${image} already exists (use --force to rebuild)"
  exit 0
fi
need_mirror

if ! command -v debootstrap >/dev/null 2>&1; then
  say "installing debootstrap (apt-get)"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq debootstrap >/dev/null
fi

rootfs=$(mktemp -d "${TMPDIR:-/var/tmp}/evalrun-rootfs.XXXXXX")
trap 'as_root rm -rf "${rootfs}" "${rootfs}.log"' EXIT

say "debootstrap ${suite} from ${mirror} (packages: ${packages})"
as_root debootstrap --variant=minbase --include="${packages}" "${suite}" "${rootfs}" "${mirror}" \
  >"${rootfs}.log" 2>&1 || { tail -n 30 "${rootfs}.log" >&2; die "debootstrap failed"; }
as_root rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/lib/apt/lists/*
# The unprivileged user sandboxed commands run as (sandbox.user=1000:1000): named, so tools
# that look the user up (whoami, getpass) work.
echo 'agent:x:1000:1000:evalrun agent:/home/agent:/bin/bash' | as_root tee -a "${rootfs}/etc/passwd" >/dev/null
echo 'agent:x:1000:' | as_root tee -a "${rootfs}/etc/group" >/dev/null

say "importing as ${image}"
previous=$(docker image inspect --format '{{.Id}}' "${image}" 2>/dev/null || true)
as_root tar -C "${rootfs}" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LANG=C.UTF-8' \
  --change 'CMD ["sleep", "infinity"]' \
  --change "LABEL org.evalrun.base=${suite}" \
  - "${image}" >/dev/null
if [ -n "${previous}" ]; then docker rmi "${previous}" >/dev/null 2>&1 || true; fi
say "built ${image} ($(docker image inspect --format '{{.Size}}' "${image}" | awk '{printf "%.0f MB", $1/1e6}'))"
