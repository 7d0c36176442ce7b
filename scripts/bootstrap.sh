#!/usr/bin/env bash
# Set up evalrun on a fresh machine: a virtualenv in .venv with evalrun and every optional SDK,
# installed in ONE resolver call (opik, litellm and pydantic-ai only resolve together that way).
#
#   bash scripts/bootstrap.sh && .venv/bin/evalrun
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e '.[dev]'
echo "bootstrap: evalrun installed in .venv ($(.venv/bin/python -c 'import evalrun; print(evalrun.__version__)'))"
