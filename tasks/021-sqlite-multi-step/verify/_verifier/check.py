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

OLD, NEW = "legacy-api", "api-v1"
NEW_LABEL = {"name": NEW, "color": "#5319e7", "description": "Issues about the deprecated v1 API"}
AUTHOR, BODY = "triage-bot", "Relabelled legacy-api -> api-v1"

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
t = expected["tables"]
moved = sorted(title for (title, label) in initial["tables"]["issue_labels"] if label == OLD)
assert len(moved) == 3
t["labels"][(NEW,)] = dict(NEW_LABEL)
del t["labels"][(OLD,)]
for title in moved:
    del t["issue_labels"][(title, OLD)]
    t["issue_labels"][(title, NEW)] = {"issue": title, "label": NEW}
    t["comments"][(title, AUTHOR, BODY)] = {"issue": title, "author": AUTHOR, "body": BODY,
                                            "created_at": dbdiff.Any("set by the database")}
    t["issues"][(title,)]["updated_at"] = dbdiff.Any("may be bumped on a relabelled issue")
sys.exit(dbdiff.report(dbdiff.compare(initial, expected, actual)))
