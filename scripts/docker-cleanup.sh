#!/usr/bin/env bash
# Remove every container evalrun's docker backend left behind (label evalrun=1), e.g. after the
# evalrun process was killed with SIGKILL or ran with keep_workspaces=true. Running evalrun
# processes remove their own containers; this removes all of them, so run it when none is running.
set -euo pipefail
ids=$(docker ps -aq --filter label=evalrun=1)
if [ -z "${ids}" ]; then
  echo "docker-cleanup: no evalrun containers" >&2
  exit 0
fi
# shellcheck disable=SC2086 # one id per word
docker rm -f ${ids} >/dev/null
echo "docker-cleanup: removed $(echo "${ids}" | wc -l) container(s)" >&2
