#!/usr/bin/env bash
# Hidden oracle: runs the checks in _oracle/ against the workspace.
set -u
export PYTHONDONTWRITEBYTECODE=1
verdict_file=$(mktemp "${TMPDIR:-/tmp}/verdict.XXXXXX")
timeout 30 python3 _oracle/run_hidden.py "$verdict_file" test_textutils_hidden >/dev/null 2>"$verdict_file.err"
rc=$?
verdict=$(head -n 1 "$verdict_file" 2>/dev/null)
if [ "$rc" -eq 124 ]; then
  echo "FAIL: checks timed out after 30s (infinite loop or hang in the workspace code?)"; rm -f "$verdict_file" "$verdict_file.err"; exit 1
fi
if [ "$rc" -ne 0 ] || [ -z "$verdict" ]; then
  echo "FAIL: check runner crashed (rc=$rc): $(tail -n 1 "$verdict_file.err" 2>/dev/null)"; rm -f "$verdict_file" "$verdict_file.err"; exit 1
fi
rm -f "$verdict_file" "$verdict_file.err"
if [ "$verdict" = "PASS" ]; then echo PASS; exit 0; fi
echo "$verdict"; exit 1
