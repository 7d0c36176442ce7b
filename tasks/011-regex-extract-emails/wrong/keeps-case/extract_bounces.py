#!/usr/bin/env python3
"""Summarise bounced deliveries from a Postfix mail log.

usage: python3 extract_bounces.py <mail.log> <out.csv>
"""
import csv
import re
import sys

# The recipient field: "to=<addr>" but not "orig_to=<addr>".
TO_RE = re.compile(r"(?<![\w.-])to=<([^<>\s]+@[^<>\s]+)>")
# The delivery status field follows "dsn=X.Y.Z, " -- free text later in the
# line may also mention "status=bounced", which must not count.
DSN_STATUS_RE = re.compile(r"\bdsn=(\d\.\d{1,3}\.\d{1,3}), status=(\w+)")


def summarise(lines):
    counts, last = {}, {}
    for line in lines:
        m = DSN_STATUS_RE.search(line)
        if not m or m.group(2) != "bounced":
            continue
        to = TO_RE.search(line)
        if not to:
            continue
        email = to.group(1)
        counts[email] = counts.get(email, 0) + 1
        last[email] = m.group(1)
    return [(e, counts[e], last[e]) for e in sorted(counts)]


def main(argv):
    if len(argv) != 3:
        sys.exit("usage: extract_bounces.py <mail.log> <out.csv>")
    with open(argv[1], encoding="utf-8", errors="replace") as fh:
        rows = summarise(fh)
    with open(argv[2], "w", newline="", encoding="utf-8") as out:
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["email", "bounces", "last_dsn"])
        w.writerows(rows)


if __name__ == "__main__":
    main(sys.argv)
