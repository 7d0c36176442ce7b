python3 - <<'PY'
import sqlite3
con = sqlite3.connect("tracker.db")
with con:
    cur = con.execute(
        "UPDATE issues SET state = 'closed', closed_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now') "
        "WHERE title = ? AND state = 'open'",
        ("Login button misaligned on mobile",))
    assert cur.rowcount == 1, cur.rowcount
print("Closed issue 'Login button misaligned on mobile' (state=closed, closed_at set).")
PY
