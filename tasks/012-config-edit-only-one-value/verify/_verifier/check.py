"""Hidden check for config/service.toml: one value changed, every other byte kept."""

import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.append(os.path.abspath("_evalrun"))  # the verifier kit; never the workspace
import verifykit as kit  # noqa: E402
from verifykit import fail  # noqa: E402

TARGET = 15  # 0-based index of the [database] connection timeout line
TARGET_RE = re.compile(rb"^timeout\s*=\s*45\s*#\s*seconds\s*$")

orig = kit.read_hidden(os.path.join(HERE, "original.toml"), binary=True)
try:
    with open("config/service.toml", "rb") as fh:
        new = fh.read()
except FileNotFoundError:
    fail("config/service.toml is missing")
except OSError as exc:
    fail(f"config/service.toml cannot be read: {exc}")

if b"\r\n" in new and b"\r\n" not in orig:
    fail("config/service.toml now has CRLF line endings; the file must keep its original LF endings")
if new.endswith(b"\n") != orig.endswith(b"\n"):
    fail("the trailing newline at the end of config/service.toml was added or removed")
ol = orig.split(b"\n")
nl = new.split(b"\n")
if len(nl) != len(ol):
    fail(f"config/service.toml has {len(nl) - 1} lines, expected {len(ol) - 1}: lines (comments/blank "
         "lines?) were added or removed; only one value should change")

for i, (a, b) in enumerate(zip(ol, nl)):
    if i == TARGET:
        continue
    if a != b:
        what = "a comment" if a.lstrip().startswith(b"#") else ("a blank line" if not a.strip() else "a line")
        fail(f"config/service.toml line {i + 1} ({what}) changed: {a.decode(errors='replace')!r} -> "
             f"{b.decode(errors='replace')!r}; nothing but the [database] timeout may change")

line = nl[TARGET]
if line == ol[TARGET]:
    fail("the [database] connection timeout (line 16) is still 30; it should be 45")
if not TARGET_RE.match(line):
    if re.match(rb"^timeout\s*=\s*45\b", line):
        fail(f"line 16 has the new value but lost or altered its inline '# seconds' comment: "
             f"{line.decode(errors='replace')!r}")
    fail(f"line 16 should set timeout = 45 (keeping its '# seconds' comment), got {line.decode(errors='replace')!r}")
kit.passed()
