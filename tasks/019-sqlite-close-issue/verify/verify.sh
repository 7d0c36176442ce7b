#!/usr/bin/env bash
set -u
export PYTHONDONTWRITEBYTECODE=1
python3 - <<'PY'
import copy, os, sqlite3, sys, tempfile
sys.path.insert(0, os.getcwd())
import dbdiff
import seed

TITLE = "Login button misaligned on mobile"

if not os.path.isfile("tracker.db"):
    print("FAIL: tracker.db is missing")
    sys.exit(1)
ref = os.path.join(tempfile.mkdtemp(), "initial.db")
seed.build(ref)
initial = dbdiff.dump(ref)
try:
    actual = dbdiff.dump("tracker.db")
except sqlite3.DatabaseError as e:
    print(f"FAIL: tracker.db cannot be read as a SQLite database: {e}")
    sys.exit(1)

expected = copy.deepcopy(initial)
issue = expected["tables"]["issues"][(TITLE,)]
issue["state"] = "closed"
issue["closed_at"] = dbdiff.Timestamp()   # set when closing, like the other closed issues
issue["updated_at"] = dbdiff.Any("updated by the database")
sys.exit(dbdiff.report(dbdiff.compare(initial, expected, actual)))
PY
