#!/usr/bin/env bash
# Hidden oracle: the final answer ($EVALRUN_ANSWER_FILE) against the required facts. `python3 -I`
# keeps the workspace off the import path (see tasks/README.md).
set -u
exec python3 -I _oracle/answer_check.py _oracle/facts.json
