"""Hidden checks for extract_bounces.py: its output files are compared here; the script itself
runs only as a child."""

import os
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402


def rows(text):
    text = text.replace("\r\n", "\n").lstrip("\ufeff")
    return [line.rstrip() for line in text.split("\n") if line.strip()]


MAIN_EXPECTED = rows(kit.read_hidden(os.path.join(HERE, "mail_expected.csv")))
HIDDEN_EXPECTED = rows(kit.read_hidden(os.path.join(HERE, "hidden_expected.csv")))
HIDDEN_LOG = os.path.join(HERE, "hidden_mail.log")


def read_rows(path):
    with open(path, encoding="utf-8", newline="") as fh:
        return rows(fh.read())


def compare(label, got, want):
    if not got:
        fail(f"{label} is empty")
    if got[0].replace(" ", "") != want[0]:
        fail(f"{label}: header should be {want[0]!r}, got {got[0]!r}")
    got_rows = [r.replace(" ", "") for r in got[1:]]
    want_rows = want[1:]
    for r in want_rows:
        if r not in got_rows:
            email = r.split(",")[0]
            near = [g for g in got_rows if g.split(",")[0].lower() == email]
            hint = f" (found {near[0]!r})" if near else ""
            fail(f"{label}: missing or wrong row {r!r}{hint}")
    for g in got_rows:
        if g not in want_rows:
            fail(f"{label}: unexpected row {g!r} (only recipients whose delivery status is bounced, "
                 "lower-cased, from the to=<...> field)")
    if got_rows != want_rows:
        fail(f"{label}: rows are not sorted by email")


if not os.path.isfile("extract_bounces.py"):
    fail("extract_bounces.py not found in the workspace root")
if not os.path.isfile("reports/bounces.csv"):
    fail("reports/bounces.csv was not produced")
try:
    compare("reports/bounces.csv", read_rows("reports/bounces.csv"), MAIN_EXPECTED)
except (OSError, UnicodeDecodeError) as exc:
    fail(f"reports/bounces.csv cannot be read: {exc}")

out = os.path.join(tempfile.mkdtemp(), "hidden.csv")
proc = kit.run([sys.executable, "extract_bounces.py", HIDDEN_LOG, out], timeout_s=20)
if proc.timed_out:
    fail("extract_bounces.py timed out on a second log file")
if proc.returncode != 0 or not os.path.isfile(out):
    err = (proc.stderr.strip().splitlines() or ["no output file"])[-1]
    fail(f"extract_bounces.py failed on a second log file: {err}")
try:
    compare("extract_bounces.py on a different log", read_rows(out), HIDDEN_EXPECTED)
except (OSError, UnicodeDecodeError) as exc:
    fail(f"the output of extract_bounces.py on a second log cannot be read: {exc}")
kit.passed()
