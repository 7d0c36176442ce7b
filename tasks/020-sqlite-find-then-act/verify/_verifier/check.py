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

if not os.path.isfile("tracker.db"):
    fail("tracker.db is missing")
ref = os.path.join(tempfile.mkdtemp(), "initial.db")
seed.build(ref)
initial = dbdiff.dump(ref)
try:
    actual = dbdiff.dump("tracker.db")
except (sqlite3.DatabaseError, OSError) as e:
    fail(f"tracker.db cannot be read as a SQLite database: {e}")

# The target is derived from the initial state: open, unassigned, labelled bug, most comments.
t = initial["tables"]
bugs = {title for (title, label) in t["issue_labels"] if label == "bug"}
n_comments = {}
for (title, _author, _body) in t["comments"]:
    n_comments[title] = n_comments.get(title, 0) + 1
candidates = sorted((-n_comments.get(title, 0), title) for (title,), row in t["issues"].items()
                    if row["state"] == "open" and row["assignee"] is None and title in bugs)
assert len(candidates) > 1 and candidates[0][0] < candidates[1][0], "the target must be unique"
target = candidates[0][1]

expected = copy.deepcopy(initial)
issue = expected["tables"]["issues"][(target,)]
issue["assignee"] = "alice"
issue["updated_at"] = dbdiff.Any("updated by the database")
expected["tables"]["issue_labels"][(target, "triaged")] = {"issue": target, "label": "triaged"}
sys.exit(dbdiff.report(dbdiff.compare(initial, expected, actual)))
