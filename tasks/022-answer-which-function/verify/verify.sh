#!/usr/bin/env bash
# Hidden oracle: the final answer ($EVALRUN_ANSWER_FILE) against the required facts. `python3 -I`
# keeps the workspace off the import path (see tasks/README.md).
set -u
exec python3 -I _verifier/answer_check.py _verifier/facts.json
