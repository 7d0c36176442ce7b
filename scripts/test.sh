#!/usr/bin/env bash
# Everything the tests need, then the tests: system packages (bubblewrap, Docker engine,
# debootstrap, Chromium), the Python environment, the built wheel proven in a fresh virtualenv
# outside the repository (scripts/wheel-smoke.sh), a running Docker engine with the offline base
# image, every bundled verifier proven honest and ungameable (gold, untouched, near misses and the
# reward-hack library of `evalrun check`, on bwrap and docker; the probes on bwrap), lint and types
# (ruff, mypy), and the whole pytest suite. Nothing is skipped: EVALRUN_CI=1 turns a missing engine
# into a failure.
#
#   bash scripts/test.sh [pytest args]
set -euo pipefail
cd "$(dirname "$0")/.."
export EVALRUN_CI=${EVALRUN_CI:-1}
export LITELLM_LOCAL_MODEL_COST_MAP=True OPIK_ANALYTICS_ENABLE=false
step() { echo "test: [${SECONDS}s] $*"; }  # each step with the seconds spent so far

need=()
command -v bwrap >/dev/null 2>&1 || need+=(bubblewrap)
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || need+=(debootstrap)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v git >/dev/null 2>&1 || need+=(git)
if [ "${#need[@]}" -gt 0 ]; then
  step "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

step "the Python environment"
bash scripts/bootstrap.sh
step "the built wheel, installed outside the repository, run from an empty folder"
bash scripts/wheel-smoke.sh
step "a Docker engine, its compose plugin and the offline base image"
bash scripts/docker-engine.sh
EVALRUN_PYTHON=.venv/bin/python bash scripts/docker-compose-plugin.sh
bash scripts/build-base-image.sh

step "agent CLIs for the preset tests (into the host cache once; seconds when cached)"
.venv/bin/evalrun agents install claude_code codex mini_swe_agent gemini_cli opencode aider

step "proving every bundled verifier honest and every reward hack failed, on bwrap and docker"
# bwrap: every attack against every bundled task. docker: the attacks its harness must stop (the
# verifier attacks test only the verifiers' own code, the same on every backend), against five
# tasks of different shapes (hidden helpers, git, sqlite, an answer): the harness's defences do
# not depend on the task. tests/honesty/test_tamper.py plays every attack on docker too.
.venv/bin/evalrun check sandbox=bwrap
step "the harness attacks on docker"
.venv/bin/evalrun check sandbox=docker --tamper=harness concurrency=8 \
  "ids=[003-error-message-typo,014-fix-flaky-test,016-git-branch-partial-commit,021-sqlite-multi-step,023-answer-sqlite-question]"
step "the behaviour probes on bwrap"
.venv/bin/evalrun check suite=probes sandbox=bwrap
step "ruff (tasks/ and probes/ fixtures excluded in pyproject.toml) and mypy on evalrun/"
.venv/bin/ruff check .
.venv/bin/mypy
step "pytest (the 25 slowest listed at the end)"
.venv/bin/python -m pytest -q -ra --durations=25 "$@"
step "done"
