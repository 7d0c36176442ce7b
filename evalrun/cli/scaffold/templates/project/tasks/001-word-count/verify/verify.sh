#!/usr/bin/env bash
# The hidden verifier. evalrun copies verify/ to the workspace root only after the agent has
# finished and runs `bash verify.sh` there: exit 0 is PASS; otherwise the first
# line starting with FAIL (else the last line) is the reason.
# It runs the agent's wc.py as a separate process and decides here, in bash, so nothing the agent
# wrote can decide the verdict. Only bash, python3, git and sqlite3 are available; no network.
set -u
export PYTHONDONTWRITEBYTECODE=1

expect() { # expect <words> <input, with printf escapes>
  local got
  if ! got=$(printf '%b' "$2" | timeout 10 python3 wc.py 2>&1); then
    echo "FAIL: wc.py failed on input '$2': ${got}"
    exit 1
  fi
  if [ "${got}" != "$1" ]; then
    echo "FAIL: input '$2': expected $1 words, got '${got}'"
    exit 1
  fi
}

expect 3 'one two three'
expect 3 'one  two   three'
expect 2 'two\nlines\n'
expect 4 '\ttabs\tand  two spaces \n'
expect 0 ''
echo PASS
