"""Whole-database state diff for the issue-tracker tasks.

dump() reads every table into dicts keyed by natural keys (label name, issue title,
(issue title, label name), (issue title, author, body)); surrogate ids are dropped and
foreign keys are resolved to those natural keys, so ids the database assigns never
matter. compare() checks the actual state against an expected state derived from the
initial state, classifying every difference as a missing change or a collateral change.
"""
import os
import re
import shutil
import sqlite3
import tempfile

NATURAL_KEYS = {
    "labels": ("name",),
    "issues": ("title",),
    "issue_labels": ("issue", "label"),
    "comments": ("issue", "author", "body"),
}


class Any:
    """Expected value that accepts anything (database-assigned timestamps)."""

    def __init__(self, desc="any value"):
        self.desc = desc

    def ok(self, value):
        return True

    def __repr__(self):
        return f"<{self.desc}>"


class Timestamp(Any):
    """Expected value: a non-empty date/time string."""

    def __init__(self):
        super().__init__("a timestamp")

    def ok(self, value):
        return isinstance(value, str) and re.match(r"^\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}", value) is not None


def _matches(expected, value):
    return expected.ok(value) if isinstance(expected, Any) else expected == value


def _snapshot(db_path):
    """Copy the db (+ journal/WAL) so reading never touches the agent's file."""
    tmp = tempfile.mkdtemp()
    dst = os.path.join(tmp, "snapshot.db")
    shutil.copyfile(db_path, dst)
    for suffix in ("-wal", "-journal"):
        if os.path.exists(db_path + suffix):
            shutil.copyfile(db_path + suffix, dst + suffix)
    return dst


def dump(db_path):
    """Full state: {'schema': {name: sql}, 'tables': {table: {key: row}}, 'duplicates': [...]}."""
    con = sqlite3.connect(_snapshot(db_path))
    con.row_factory = sqlite3.Row
    schema = {}
    for row in con.execute("SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'"):
        schema[f"{row['type']} {row['name']}"] = " ".join((row["sql"] or "").split())
    labels = {r["id"]: r["name"] for r in con.execute("SELECT id, name FROM labels")}
    titles = {r["id"]: r["title"] for r in con.execute("SELECT id, title FROM issues")}
    rows = {
        "labels": [{k: r[k] for k in r.keys() if k != "id"} for r in con.execute("SELECT * FROM labels")],
        "issues": [{k: r[k] for k in r.keys() if k != "id"} for r in con.execute("SELECT * FROM issues")],
        "issue_labels": [
            {"issue": titles.get(r["issue_id"], f"<missing issue id {r['issue_id']}>"),
             "label": labels.get(r["label_id"], f"<missing label id {r['label_id']}>"),
             **{k: r[k] for k in r.keys() if k not in ("issue_id", "label_id")}}
            for r in con.execute("SELECT * FROM issue_labels")],
        "comments": [
            {"issue": titles.get(r["issue_id"], f"<missing issue id {r['issue_id']}>"),
             **{k: r[k] for k in r.keys() if k not in ("id", "issue_id")}}
            for r in con.execute("SELECT * FROM comments")],
    }
    con.close()
    tables, duplicates = {}, []
    for table, items in rows.items():
        keyed = {}
        for row in items:
            key = tuple(row[k] for k in NATURAL_KEYS[table])
            if key in keyed:
                duplicates.append((table, key))
            keyed[key] = row
        tables[table] = keyed
    return {"schema": schema, "tables": tables, "duplicates": duplicates}


def keystr(table, key):
    return f"{table}[" + ", ".join(f"{k}={v!r}" for k, v in zip(NATURAL_KEYS[table], key)) + "]"


def compare(initial, expected, actual):
    """Return a list of problems (strings); missing changes first, then collateral ones."""
    missing, collateral = [], []
    a_s, i_s = actual["schema"], initial["schema"]
    for name in sorted(set(a_s) | set(i_s)):
        if name not in a_s:
            collateral.append(f"collateral change: schema object dropped: {name}")
        elif name not in i_s:
            collateral.append(f"collateral change: schema object added: {name}")
        elif a_s[name] != i_s[name]:
            collateral.append(f"collateral change: schema object altered: {name}")
    for table, key in actual["duplicates"]:
        collateral.append(f"collateral change: duplicate row {keystr(table, key)}")
    for table in NATURAL_KEYS:
        init, exp, act = (s["tables"][table] for s in (initial, expected, actual))
        for key in sorted(set(init) | set(exp) | set(act), key=repr):
            k = keystr(table, key)
            if key in exp and key not in act:
                if key in init:
                    collateral.append(f"collateral change: row deleted: {k}")
                else:
                    missing.append(f"missing change: row not added: {k}")
                continue
            if key in act and key not in exp:
                if key in init:
                    missing.append(f"missing change: row not deleted: {k}")
                elif any(str(v).startswith("<missing ") for v in key):
                    collateral.append(f"collateral change: dangling row left behind: {k} "
                                      "(it points to a row that no longer exists)")
                else:
                    collateral.append(f"collateral change: unexpected row added: {k}")
                continue
            if key not in act:
                continue
            e_row, a_row, i_row = exp[key], act[key], init.get(key)
            row_missing, row_collateral = [], []
            for field in sorted(set(e_row) | set(a_row)):
                want, got = e_row.get(field), a_row.get(field)
                if _matches(want, got):
                    continue
                if i_row is None:
                    row_missing.append((field, f"expected {want!r}, found {got!r}"))
                    continue
                before = i_row.get(field)
                if not isinstance(want, Any) and want == before:
                    row_collateral.append((field, f"{before!r} -> {got!r}"))
                elif got == before:
                    row_missing.append((field, f"expected {want!r}, still {got!r}"))
                else:
                    row_missing.append((field, f"expected {want!r}, found {got!r} (was {before!r})"))
            for kind, diffs, out in (("missing change", row_missing, missing),
                                     ("collateral change", row_collateral, collateral)):
                if len(diffs) == 1:
                    out.append(f"{kind}: {k}.{diffs[0][0]}: {diffs[0][1]}")
                elif diffs:
                    out.append(f"{kind}: {k}: " + "; ".join(f"{f}: {d}" for f, d in diffs))
    return missing + collateral


def report(problems, limit=8):
    """Print the verdict line (and details); return the exit code."""
    if not problems:
        print("PASS")
        return 0
    print("FAIL: " + problems[0])
    for p in problems[1:limit]:
        print("  also " + p)
    if len(problems) > limit:
        print(f"  ... and {len(problems) - limit} more")
    return 1
