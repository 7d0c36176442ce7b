python3 - <<'PY'
import sqlite3
con = sqlite3.connect("tracker.db")
# Count comments in a subquery: joining comments and labels directly would multiply the counts.
issue_id, title, n = con.execute("""
    SELECT i.id, i.title, COUNT(c.id) AS n
    FROM issues i
    JOIN issue_labels il ON il.issue_id = i.id
    JOIN comments c ON c.issue_id = i.id
    WHERE i.state = 'open' AND i.assignee IS NULL
      AND i.id IN (SELECT il2.issue_id FROM issue_labels il2 JOIN labels l ON l.id = il2.label_id WHERE l.name = 'bug')
    GROUP BY i.id
    ORDER BY n DESC
    LIMIT 1
""").fetchone()
with con:
    con.execute("UPDATE issues SET assignee = 'alice' WHERE id = ?", (issue_id,))
    con.execute("INSERT INTO issue_labels (issue_id, label_id) SELECT ?, id FROM labels WHERE name = 'triaged'",
                (issue_id,))
print(f"The open, unassigned bug with the most comments is '{title}' ({n} comments). "
      "I assigned it to alice and added the triaged label.")
PY
