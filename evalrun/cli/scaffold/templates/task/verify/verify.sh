#!/usr/bin/env bash
# The hidden verifier. evalrun copies verify/ to the workspace root only after the agent has
# finished and runs `bash verify.sh` there: exit 0 is PASS; otherwise the first line starting
# with FAIL (else the last line printed) is the reason. Run the agent's code as a separate
# process and decide here, never inside code the agent could have written. Only bash, python3,
# git and sqlite3 are available; no network. For checks in Python: `exec python3 -I
# _verifier/check.py` with evalrun's verifier kit (`evalrun docs verifiers`, "Writing a verifier");
# `evalrun check` throws a library of reward hacks at it.
#
# For example:
#   got=$(timeout 10 python3 app.py --total 2>&1) || { echo "FAIL: app.py crashed: ${got}"; exit 1; }
#   [ "${got}" = "42" ] || { echo "FAIL: expected 42, got '${got}'"; exit 1; }
#   echo PASS
set -u

echo "FAIL: verify/verify.sh is still the new-task placeholder: write this task's check"
exit 1
