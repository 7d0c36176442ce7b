python3 - <<'PY'
import sqlite3
con = sqlite3.connect("file:tracker.db?mode=ro", uri=True)
rows = con.execute("""
    SELECT i.title FROM issues i
    JOIN issue_labels il ON il.issue_id = i.id
    JOIN labels l ON l.id = il.label_id
    WHERE i.state = 'open' AND i.assignee LIKE 'bob%' AND l.name = 'bug'
    ORDER BY i.created_at, i.id
""").fetchall()
with open("answer.txt", "w") as fh:
    fh.writelines(title + "\n" for (title,) in rows)
print(f"{len(rows)} open bugs are assigned to bob:")
for (title,) in rows:
    print(f"- {title}")
PY
