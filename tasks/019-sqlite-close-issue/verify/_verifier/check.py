"""Hidden check for tracker.db: its whole state diffed against the expected end state."""

import copy
import os
import sqlite3
import sys
import tempfile

sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402  (first: it hardens this process before other imports)
from verifykit import fail  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
dbdiff = kit.import_hidden(os.path.join(HERE, "dbdiff.py"))
seed = kit.import_hidden(os.path.join(HERE, "seed.py"))

TITLE = "Login button misaligned on mobile"

if not os.path.isfile("tracker.db"):
    fail("tracker.db is missing")
ref = os.path.join(tempfile.mkdtemp(), "initial.db")
seed.build(ref)
initial = dbdiff.dump(ref)
try:
    actual = dbdiff.dump("tracker.db")
except (sqlite3.DatabaseError, OSError) as e:
    fail(f"tracker.db cannot be read as a SQLite database: {e}")

expected = copy.deepcopy(initial)
issue = expected["tables"]["issues"][(TITLE,)]
issue["state"] = "closed"
issue["closed_at"] = dbdiff.Timestamp()   # set when closing, like the other closed issues
issue["updated_at"] = dbdiff.Any("updated by the database")
sys.exit(dbdiff.report(dbdiff.compare(initial, expected, actual)))
