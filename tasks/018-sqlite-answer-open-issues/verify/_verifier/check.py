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

EXPECTED = [
    "Login button misaligned on mobile",
    "Rate limiter ignores X-Forwarded-For",
    "Password reset email is sent twice",
]

# 1. the answer
if not os.path.isfile("answer.txt"):
    fail("answer.txt was not written")
with open("answer.txt", encoding="utf-8", errors="replace") as fh:
    lines = [line.strip() for line in fh.read().splitlines() if line.strip()]
extra = [l for l in lines if l not in EXPECTED]
missing = [t for t in EXPECTED if t not in lines]
if missing:
    fail(f"answer.txt is missing {missing[0]!r}" + (f" (and has unexpected line {extra[0]!r})" if extra else ""))
if extra:
    fail(f"answer.txt has a line that is not an open bug assigned to bob: {extra[0]!r}")
if len(lines) != len(EXPECTED):
    fail("answer.txt lists a title more than once")
if lines != EXPECTED:
    fail("answer.txt has the right titles but not oldest first")

# 2. the database must be exactly as it was
if not os.path.isfile("tracker.db"):
    fail("tracker.db is missing")
ref = os.path.join(tempfile.mkdtemp(), "initial.db")
seed.build(ref)
initial = dbdiff.dump(ref)
try:
    actual = dbdiff.dump("tracker.db")
except (sqlite3.DatabaseError, OSError) as e:
    fail(f"tracker.db cannot be read as a SQLite database: {e}")
sys.exit(dbdiff.report(dbdiff.compare(initial, copy.deepcopy(initial), actual)))
