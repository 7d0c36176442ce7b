# Builds data/customers.csv exactly as the legacy CRM exports it:
# UTF-8 with a byte-order mark, CRLF line endings, minimal quoting.
set -eu
mkdir -p data
python3 - <<'PY'
import csv
rows = [
    ["id", "name", "email", "signup_date", "balance", "postal_code", "tags", "active", "notes"],
    ["1", "Smith, Jane", "jane.smith@example.com", "03/07/2021", "1250.50", "02139", "vip;newsletter", "yes", ""],
    ["2", "Bob O'Neil", "bob@example.org", "15/11/2020", "0", "10001", "", "no", 'Prefers "paper" invoices'],
    ["3", "Chloé Dubois", "chloe@example.fr", "01/02/2022", "-35.75", "75011", " newsletter ; beta ;", "yes",
     "Moved office,\nnew address pending"],
    ["4", "Ahmed Khan", "", "28/02/2019", "99.9", "00501", "", "Yes", ""],
    ["5", 'Lee, "Sam"', "sam.lee@example.com", "12/12/2023", "", "94105", "vip", "no", "Balance unknown"],
    ["7", "Zoë Ng", "zoe@example.com", "09/10/2022", "1000000", "08001", "newsletter", "YES", ""],
    ["8", "María José Pérez", "mj@example.es", "31/01/2024", "12", "28013", "vip;vip-gold", "no",
     'Asked for "no calls", email only'],
    ["11", "Tom Brown", "tom@example.co.uk", "05/04/2021", "7.05", "SW1A 1AA", "", "no", "0"],
    ["12", "Null Island Ltd", "ops@null.example", "01/01/2020", "-0.5", "", "newsletter;", "NO", "N/A"],
]
with open("data/customers.csv", "w", encoding="utf-8-sig", newline="") as fh:
    csv.writer(fh, lineterminator="\r\n").writerows(rows)
PY
