#!/usr/bin/env bash
# Hidden oracle: _verifier/check.py decides, in a process that never imports the workspace's code
# (it calls it in a child through evalrun's verifier kit; see tasks/README.md).
set -u
exec python3 -I _verifier/check.py
