"""Hidden check for notes/: every file converted to UTF-8 with LF endings, text unchanged."""

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402

expected = json.loads(kit.read_hidden(os.path.join(HERE, "expected.json")))
present = set()
for root, _, files in os.walk("notes"):
    for name in files:
        present.add(os.path.join(root, name).replace(os.sep, "/"))
missing = sorted(set(expected) - present)
if missing:
    fail("file(s) missing from notes/: " + ", ".join(missing) + " (convert in place, keep the same names)")
extra = sorted(present - set(expected))
if extra:
    fail("unexpected extra file(s) left in notes/: " + ", ".join(extra) + " (no backups or copies, convert in place)")

for path in sorted(expected):
    want = expected[path]
    try:
        with open(path, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        fail(f"{path} cannot be read: {exc}")
    if raw.startswith(b"\xef\xbb\xbf"):
        fail(f"{path} still starts with a UTF-8 BOM")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        fail(f"{path} is still UTF-16")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        fail(f"{path} is not valid UTF-8 (byte {raw[e.start]:#04x} at offset {e.start})")
    if "\r" in text:
        fail(f"{path} still contains CR characters (CRLF line endings); use LF only")
    if text == want:
        continue
    if text.lstrip("\ufeff") == want:
        fail(f"{path} starts with U+FEFF: the BOM was decoded as text instead of being removed")
    if text.rstrip("\n") == want.rstrip("\n"):
        fail(f"{path}: trailing newline at end of file was added or removed; the text must stay exactly the same")
    for i, (a, b) in enumerate(zip(text, want)):
        if a != b:
            break
    else:
        i = min(len(text), len(want))
    line = text.count("\n", 0, i) + 1
    got_s, want_s = text[max(0, i - 10):i + 12], want[max(0, i - 10):i + 12]
    hint = ""
    try:
        if text.encode("latin-1").decode("utf-8") == want:
            hint = " (looks double-encoded: UTF-8 bytes were decoded as Latin-1)"
    except (UnicodeEncodeError, UnicodeDecodeError):
        pass
    fail(f"{path}: text differs from the original at line {line}: got {got_s!r}, expected {want_s!r}{hint}")
kit.passed()
