"""Build the issue-tracker database used by this task.

usage: python3 seed.py <path.db>
"""
import sqlite3
import sys

SCHEMA = """
CREATE TABLE labels (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    name        TEXT NOT NULL UNIQUE,
    color       TEXT NOT NULL,
    description TEXT
);
CREATE TABLE issues (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    title      TEXT NOT NULL UNIQUE,
    body       TEXT NOT NULL DEFAULT '',
    state      TEXT NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'closed')),
    assignee   TEXT,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    updated_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now')),
    closed_at  TEXT
);
CREATE TABLE issue_labels (
    issue_id INTEGER NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    label_id INTEGER NOT NULL REFERENCES labels(id) ON DELETE CASCADE,
    PRIMARY KEY (issue_id, label_id)
);
CREATE TABLE comments (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    issue_id   INTEGER NOT NULL REFERENCES issues(id) ON DELETE CASCADE,
    author     TEXT NOT NULL,
    body       TEXT NOT NULL,
    created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%SZ', 'now'))
);
CREATE INDEX idx_issue_labels_label ON issue_labels(label_id);
CREATE INDEX idx_comments_issue ON comments(issue_id);
CREATE TRIGGER issues_touch AFTER UPDATE ON issues
FOR EACH ROW WHEN NEW.updated_at = OLD.updated_at
BEGIN
    UPDATE issues SET updated_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') WHERE id = NEW.id;
END;
"""

LABELS = [
    ("bug", "#d73a4a", "Something isn't working"),
    ("enhancement", "#a2eeef", "New feature or request"),
    ("docs", "#0075ca", "Documentation"),
    ("ui", "#bfd4f2", "User interface"),
    ("security", "#b60205", None),
    ("performance", "#fbca04", None),
    ("needs-info", "#d876e3", "Waiting for the reporter"),
    ("good-first-issue", "#7057ff", "Good for newcomers"),
    ("legacy-api", "#c5def5", "v1 API (deprecated)"),
    ("triaged", "#0e8a16", "Looked at by the triage rota"),
]

# title, state, assignee, created_at, labels, body
ISSUES = [
    ("Login button misaligned on mobile", "open", "bob", "2024-04-02T09:14:00Z", ["bug", "ui"],
     "On iPhone SE the login button overlaps the footer."),
    ("Login fails with SSO when email contains a plus sign", "open", "alice", "2024-04-03T11:02:00Z", ["bug", "security"],
     "user+tag@example.com cannot log in through Okta."),
    ("Add dark mode", "open", None, "2024-04-05T16:40:00Z", ["enhancement", "ui"], ""),
    ("Crash when exporting CSV with non-ASCII names", "open", None, "2024-04-08T08:30:00Z",
     ["bug", "needs-info", "good-first-issue"], "UnicodeEncodeError in export.py line 88."),
    ("Typo in installation guide", "closed", "carol", "2024-04-09T10:00:00Z", ["docs"], "'pip instal' in step 2."),
    ("Rate limiter ignores X-Forwarded-For", "open", "bob", "2024-04-11T13:25:00Z", ["bug", "security"], ""),
    ("Document the v1 webhook payload", "open", None, "2024-04-12T09:05:00Z", ["docs", "legacy-api"], ""),
    ("v1 /users endpoint returns 500 on empty query", "open", None, "2024-04-15T17:45:00Z", ["bug", "legacy-api"],
     "GET /v1/users?q= -> 500"),
    ("Search results flicker while typing", "closed", None, "2024-04-16T12:00:00Z", ["bug", "ui"], ""),
    ("Dashboard loads slowly with 10k projects", "open", "bob", "2024-04-18T15:10:00Z", ["performance"], ""),
    ("Session cookie missing SameSite attribute", "closed", "bob", "2024-04-20T09:55:00Z", ["bug", "security"], ""),
    ("Remove v1 XML responses", "closed", "dave", "2024-04-22T14:30:00Z", ["legacy-api", "enhancement"], ""),
    ("Password reset email is sent twice", "open", "bob", "2024-04-25T10:20:00Z", ["bug"], ""),
    ("Bulk edit for issue labels", "open", "erin", "2024-04-26T11:11:00Z", ["enhancement"], ""),
    ("Avatar upload rotates photos", "open", None, "2024-04-29T08:00:00Z", ["bug", "ui"], "EXIF orientation ignored."),
    ("Login page: 'Forgot password' link is hard to see", "open", "carol", "2024-05-02T09:30:00Z", ["ui"], ""),
    ("Webhook retries never stop", "open", "bobby", "2024-05-03T18:05:00Z", ["bug"], ""),
    ("Upgrade to Postgres 16", "open", "dave", "2024-05-06T10:00:00Z", ["enhancement", "performance"], ""),
]

# issue title -> list of (author, body)
COMMENTS = {
    "Login button misaligned on mobile": [("carol", "Reproduced on Safari 17."), ("bob", "Looking at the CSS grid now.")],
    "Login fails with SSO when email contains a plus sign": [
        ("erin", "Same for Azure AD."), ("alice", "The plus is not URL-encoded in the redirect."),
        ("dave", "Customer escalation from ACME."), ("alice", "Fix ready in #412."), ("carol", "Needs a test."),
        ("alice", "Test added."), ("erin", "Waiting for deploy."),
    ],
    "Add dark mode": [("erin", "+1"), ("dave", "Designs are in Figma."), ("carol", "Blocked on the new tokens.")],
    "Crash when exporting CSV with non-ASCII names": [
        ("alice", "Which browser?"), ("erin", "Chrome 124, file attached."), ("carol", "Happens with 'Zoë' too."),
        ("dave", "Probably the writer opens the file as ascii."),
    ],
    "Typo in installation guide": [("carol", "Fixed in docs#88.")],
    "Rate limiter ignores X-Forwarded-For": [("dave", "Only behind the ALB."), ("bob", "Need trusted proxy list."),
                                              ("alice", "See RFC 7239.")],
    "Document the v1 webhook payload": [("erin", "Partners keep asking for this."), ("dave", "Old schema is in the wiki.")],
    "v1 /users endpoint returns 500 on empty query": [
        ("carol", "Stack trace: KeyError 'q'."), ("erin", "Seen 40 times today."), ("dave", "v1 is deprecated but still used by Acme."),
        ("alice", "Easy fix: treat empty q as no filter."), ("carol", "Any taker?"),
    ],
    "Search results flicker while typing": [
        ("erin", "Debounce is 0ms."), ("carol", "Video attached."), ("dave", "Also on Firefox."), ("alice", "Fixed by #390."),
        ("erin", "Still flickers on slow 3G."), ("carol", "Closing, separate issue for 3G."), ("dave", "ok"), ("erin", "Thanks!"),
    ],
    "Dashboard loads slowly with 10k projects": [("bob", "N+1 query on project owners.")],
    "Session cookie missing SameSite attribute": [("bob", "Set to Lax."), ("alice", "Verified in staging.")],
    "Remove v1 XML responses": [("dave", "Announced in the March newsletter.")],
    "Avatar upload rotates photos": [
        ("erin", "Only portrait photos."), ("alice", "Pillow has ImageOps.exif_transpose."),
        ("carol", "Also affects the mobile app."), ("dave", "Duplicate of an old ticket?"),
    ],
    "Webhook retries never stop": [("bobby", "Max retries is not read from config.")],
}


def comment_time(issue_created, n):
    day = int(issue_created[8:10]) + n + 1
    month = int(issue_created[5:7])
    if day > 28:
        day, month = day - 28, month + 1
    return f"2024-{month:02d}-{day:02d}T{9 + n % 8:02d}:{(7 * n) % 60:02d}:00Z"


def build(path):
    con = sqlite3.connect(path)
    con.executescript(SCHEMA)
    con.executemany("INSERT INTO labels (name, color, description) VALUES (?, ?, ?)", LABELS)
    label_id = {name: i for i, name in con.execute("SELECT id, name FROM labels")}
    for title, state, assignee, created, labels, body in ISSUES:
        updated = comment_time(created, len(COMMENTS.get(title, [])))
        closed = updated if state == "closed" else None
        cur = con.execute(
            "INSERT INTO issues (title, body, state, assignee, created_at, updated_at, closed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (title, body, state, assignee, created, updated, closed))
        issue_id = cur.lastrowid
        for name in labels:
            con.execute("INSERT INTO issue_labels (issue_id, label_id) VALUES (?, ?)", (issue_id, label_id[name]))
        for n, (author, text) in enumerate(COMMENTS.get(title, [])):
            con.execute("INSERT INTO comments (issue_id, author, body, created_at) VALUES (?, ?, ?, ?)",
                        (issue_id, author, text, comment_time(created, n)))
    con.commit()
    con.close()


if __name__ == "__main__":
    build(sys.argv[1])
