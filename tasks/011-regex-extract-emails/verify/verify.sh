#!/usr/bin/env bash
set -u
cd "$(dirname "$0")"
python3 - <<'PY'
import os, subprocess, sys, tempfile

def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)

def read_rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    return [l.rstrip() for l in text.split("\n") if l.strip()]

def compare(label, got, want):
    if not got:
        fail(f"{label} is empty")
    if got[0].replace(" ", "") != want[0]:
        fail(f"{label}: header should be {want[0]!r}, got {got[0]!r}")
    got_rows = [r.replace(" ", "") for r in got[1:]]
    want_rows = want[1:]
    for r in want_rows:
        if r not in got_rows:
            email = r.split(",")[0]
            near = [g for g in got_rows if g.split(",")[0].lower() == email]
            hint = f" (found {near[0]!r})" if near else ""
            fail(f"{label}: missing or wrong row {r!r}{hint}")
    for g in got_rows:
        if g not in want_rows:
            fail(f"{label}: unexpected row {g!r} (only recipients whose delivery status is bounced, lower-cased, from the to=<...> field)")
    if got_rows != want_rows:
        fail(f"{label}: rows are not sorted by email")

if not os.path.isfile("extract_bounces.py"):
    fail("extract_bounces.py not found in the workspace root")
if not os.path.isfile("reports/bounces.csv"):
    fail("reports/bounces.csv was not produced")
compare("reports/bounces.csv", read_rows("reports/bounces.csv"), read_rows("mail_expected.csv"))

tmp = tempfile.mkdtemp()
out = os.path.join(tmp, "hidden.csv")
try:
    p = subprocess.run([sys.executable, "extract_bounces.py", "hidden_mail.log", out],
                       capture_output=True, text=True, timeout=20)
except subprocess.TimeoutExpired:
    fail("extract_bounces.py timed out on a second log file")
if p.returncode != 0 or not os.path.isfile(out):
    err = (p.stderr.strip().splitlines() or ["no output file"])[-1]
    fail(f"extract_bounces.py failed on a second log file: {err}")
compare("extract_bounces.py on a different log", read_rows(out), read_rows("hidden_expected.csv"))
print("PASS")
PY
