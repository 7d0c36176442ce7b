#!/usr/bin/env bash
# Prove the built wheel works as a user gets it: build it, install it (base package only, no
# extras) into a fresh virtualenv OUTSIDE the repository, and from an empty temporary folder run
# what a new user runs. Then install the same wheel as a tool with `pipx install` and with
# `uv tool install` (pipx and uv themselves go into a throwaway venv; their homes, bin folders
# and caches live in the temp folder, so nothing leaks) and run `evalrun --version` and a
# one-task run from each. Prints the wheel's size and the install times.
#
#   bash scripts/wheel-smoke.sh        # needs .venv (scripts/bootstrap.sh) for building
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
python=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/evalrun-wheel.XXXXXX")
trap 'rm -rf "${work}"' EXIT

say() { printf 'wheel-smoke: %s\n' "$*"; }
fail() { say "FAILED: $*"; exit 1; }
# expect <exit code> <pattern> <command...>: run it, check its exit code and that its output
# (stdout and stderr) matches the extended regex <pattern>.
expect() {
  local want=$1 pattern=$2 out rc=0
  shift 2
  out=$("$@" 2>&1) || rc=$?
  if [ "${rc}" -ne "${want}" ] || ! grep -Eq -- "${pattern}" <<<"${out}"; then
    printf '%s\n' "${out}" | tail -n 30
    fail "'$*' in $(pwd): exit ${rc} (expected ${want}), output must match /${pattern}/"
  fi
  say "ok: $* -> exit ${rc}, /${pattern}/"
}

say "building the wheel"
rm -rf build  # setuptools never prunes build/lib: a stale file there would ship
.venv/bin/python -m pip wheel -q --no-deps -w "${work}/dist" . >/dev/null
wheel=$(ls "${work}"/dist/evalrun-*.whl)
say "wheel $(basename "${wheel}"): $(du -k "${wheel}" | cut -f1) KB"

"${python}" -m venv "${work}/venv"
started=${SECONDS}
"${work}/venv/bin/python" -m pip install -q "${wheel}" >"${work}/pip.log" 2>&1 \
  || { tail -n 30 "${work}/pip.log"; fail "pip install of the wheel"; }
say "installed into a fresh venv in $((SECONDS - started)) s (base package, no extras)"
bin="${work}/venv/bin"

mkdir "${work}/empty" && cd "${work}/empty"
site=$("${bin}/python" -c 'import evalrun, pathlib; print(pathlib.Path(evalrun.__file__).parent)')
case "${site}" in "${repo}"*) fail "evalrun imported from the repository (${site})";; esac
export PATH="${bin}:${PATH}"
unset PYTHONPATH
hash -r
[ "$(command -v evalrun)" = "${bin}/evalrun" ] || fail "evalrun on PATH is not the wheel's"

expect 0 'evalrun init \[DIR\]' evalrun --help
expect 0 'names no project URL; this copy: .*see `evalrun docs`' evalrun --help  # no made-up host
# the guides messages cite (`evalrun docs verifiers`, ...) ship in the wheel, printed from there
expect 0 "^verifiers .*\(${site}/bundled/tasks/README.md\)" evalrun docs
expect 0 "^configuration .*\(${site}/bundled/docs/configuration.md\)" evalrun docs
expect 0 '^## Writing a verifier' evalrun docs verifiers
expect 0 "^evalrun [0-9.]+ \(wheel: ${site}\)" evalrun --version
expect 0 '^pass@1 1\.000' evalrun                     # the bundled benchmark, agent=oracle
grep -q '"kind": "wheel"' runs/*/plan.json || fail "plan.json does not record a wheel install"
[ ! -e "${site}/runs" ] && [ ! -e "${site}/bundled/runs" ] || fail "a run landed in site-packages"
expect 2 "pip install 'evalrun\[docker\]'" evalrun sandbox=docker   # a missing extra: one line
expect 2 "pip install 'evalrun\[opik\]'" evalrun online project=p judge=gpt_4o_mini  # conf/online.yaml ships

expect 0 'wrote demo/conf/evalrun.yaml' evalrun init demo
cd demo
expect 0 '^pass@1 1\.000' evalrun                     # the starter task, from the project's tasks/
expect 0 'all 1 verifiers honest' evalrun check
expect 0 '^pass@1 0\.000' evalrun agent=my_agent      # defined only in the project's conf/agent/
grep -q 'conf/agent/my_agent.yaml' runs/*/config.yaml || fail "agent=my_agent is not the project's"
expect 0 'agent .*my_agent .*project' evalrun info agent=my_agent
expect 0 'evalrun check ids=\[t\]' evalrun new-task t
expect 1 'still the new-task placeholder' evalrun check 'ids=[t]'

# pipx and uv: the README's other two install commands, each into homes of its own under ${work}.
started=${SECONDS}
interpreter=$("${python}" -c 'import sys; print(sys.executable)')
"${interpreter}" -m venv "${work}/tools"
"${work}/tools/bin/python" -m pip install -q pipx uv >"${work}/tools.log" 2>&1 \
  || { tail -n 30 "${work}/tools.log"; fail "pip install of pipx and uv"; }
export PIPX_HOME="${work}/pipx/home" PIPX_BIN_DIR="${work}/pipx/bin" PIPX_MAN_DIR="${work}/pipx/man"
# pipx would hand the install to uv when it sees uv beside it; pip is its path without uv (and
# `uv tool install` below is the uv path).
export PIPX_DEFAULT_BACKEND=pip
export UV_TOOL_DIR="${work}/uv/tools" UV_TOOL_BIN_DIR="${work}/uv/bin"
export UV_CACHE_DIR="${work}/uv/cache" UV_PYTHON_DOWNLOADS=never
"${work}/tools/bin/pipx" install --python "${interpreter}" "${wheel}" >"${work}/pipx.log" 2>&1 \
  || { tail -n 30 "${work}/pipx.log"; fail "pipx install of the wheel"; }
"${work}/tools/bin/uv" tool install --python "${interpreter}" "${wheel}" >"${work}/uv.log" 2>&1 \
  || { tail -n 30 "${work}/uv.log"; fail "uv tool install of the wheel"; }
for tool in pipx uv; do
  case "${tool}" in
    pipx) bin_dir=${PIPX_BIN_DIR} home=${PIPX_HOME} ;;
    uv) bin_dir=${UV_TOOL_BIN_DIR} home=${UV_TOOL_DIR} ;;
  esac
  [ -x "${bin_dir}/evalrun" ] || fail "${tool} put no evalrun in ${bin_dir}"
  mkdir "${work}/${tool}-empty" && cd "${work}/${tool}-empty"
  expect 0 "^evalrun [0-9.]+ \(wheel: ${home}/" "${bin_dir}/evalrun" --version  # its own copy
  expect 0 '^pass@1 1\.000' "${bin_dir}/evalrun" limit=1  # one bundled task, agent=oracle
done
say "pipx and uv tool installs checked in $((SECONDS - started)) s (installing pipx and uv included)"
say "all good"
