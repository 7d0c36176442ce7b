#!/usr/bin/env bash
# Remove every container evalrun's docker backend left behind (label evalrun=1), e.g. after the
# evalrun process was killed with SIGKILL or ran with keep_workspaces=true, then the networks and
# volumes of its compose projects. Running evalrun processes remove their own; this removes all
# of them, so run it when none is running.
set -euo pipefail
ids=$(docker ps -aq --filter label=evalrun=1)
networks=$(docker network ls -q --filter label=evalrun=1)
volumes=$(docker volume ls -q --filter label=evalrun=1)
if [ -z "${ids}${networks}${volumes}" ]; then
  echo "docker-cleanup: no evalrun containers, networks or volumes" >&2
  exit 0
fi
# shellcheck disable=SC2086 # one id per word
[ -z "${ids}" ] || docker rm -f -v ${ids} >/dev/null
# shellcheck disable=SC2086
[ -z "${networks}" ] || docker network rm ${networks} >/dev/null
# shellcheck disable=SC2086
[ -z "${volumes}" ] || docker volume rm -f ${volumes} >/dev/null
count() { if [ -z "$1" ]; then echo 0; else echo "$1" | wc -l; fi; }
echo "docker-cleanup: removed $(count "${ids}") container(s), $(count "${networks}") network(s)," \
  "$(count "${volumes}") volume(s)" >&2
