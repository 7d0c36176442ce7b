"""Migrate data/customers.csv (legacy CRM export) to data/customers.json (see MIGRATION.md)."""
import csv
import json
from datetime import datetime

SRC = "data/customers.csv"
DST = "data/customers.json"


def or_none(value):
    return value if value != "" else None


def parse_balance(value):
    value = value.strip()
    if value == "":
        return None
    return float(value)


def parse_active(value):
    flag = value.strip().lower()
    if flag not in ("yes", "no"):
        raise ValueError(f"active must be yes/no, got {value!r}")
    return flag == "yes"


def parse_date(value):
    for fmt in ("%m/%d/%Y", "%d/%m/%Y"):
        try:
            return datetime.strptime(value.strip(), fmt).date().isoformat()
        except ValueError:
            continue
    raise ValueError(f"unrecognised date {value!r}")


def convert(row):
    return {
        "id": int(row["id"]),
        "name": row["name"],
        "contact": {"email": or_none(row["email"]), "postal_code": or_none(row["postal_code"])},
        "signup_date": parse_date(row["signup_date"]),
        "balance": parse_balance(row["balance"]),
        "tags": [tag.strip() for tag in row["tags"].split(";") if tag.strip()],
        "active": parse_active(row["active"]),
        "notes": or_none(row["notes"]),
    }


def main():
    # utf-8-sig: the CRM writes a byte-order mark; newline="" keeps quoted line breaks intact.
    with open(SRC, encoding="utf-8-sig", newline="") as fh:
        customers = [convert(row) for row in csv.DictReader(fh)]
    document = {"schema": "customers/v2", "count": len(customers), "customers": customers}
    with open(DST, "w", encoding="utf-8") as fh:
        json.dump(document, fh, ensure_ascii=False, indent=2)
        fh.write("\n")
    print(f"wrote {len(customers)} customers to {DST}")


if __name__ == "__main__":
    main()
