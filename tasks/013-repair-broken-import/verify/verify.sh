#!/usr/bin/env bash
set -u
W=$(pwd)
export PYTHONDONTWRITEBYTECODE=1
T=$(mktemp -d)

out=$(python3 -m invoicer main_invoice.json 2>"$T/err1"); rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: 'python3 -m invoicer data/invoice.json' exits with $rc: $(tail -n 1 "$T/err1")"; exit 1
fi
if [ "$out" != "$(cat expected_main.txt)" ]; then
  echo "FAIL: 'python3 -m invoicer data/invoice.json' runs but its output differs from the original program's output"
  diff <(printf '%s\n' "$out") expected_main.txt | head -n 6; exit 1
fi

out=$(cd "$T" && PYTHONPATH="$W" python3 -m invoicer "$W/hidden_invoice.json" --currency '£' 2>"$T/err2"); rc=$?
if [ $rc -ne 0 ]; then
  echo "FAIL: the package does not work when run from another directory (PYTHONPATH=<repo> python3 -m invoicer ...): $(tail -n 1 "$T/err2")"; exit 1
fi
if [ "$out" != "$(cat expected_hidden.txt)" ]; then
  echo "FAIL: output for a second invoice (run from another directory, --currency) is not what the original code produces"
  diff <(printf '%s\n' "$out") expected_hidden.txt | head -n 6; exit 1
fi

detail=$(cd "$T" && PYTHONPATH="$W" python3 "$W/check_imports.py" 2>&1); rc=$?
if [ $rc -ne 0 ]; then
  msg=$(printf '%s\n' "$detail" | grep '^DETAIL: ' | head -n 1 | sed 's/^DETAIL: //')
  echo "FAIL: importing the package as a library is broken: ${msg:-$(printf '%s\n' "$detail" | tail -n 1)}"; exit 1
fi
echo PASS
