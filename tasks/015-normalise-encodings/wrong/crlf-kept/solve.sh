# Normalise every file under notes/ to UTF-8 (no BOM) with LF line endings.
python3 - <<'PY'
import os

def decode(raw):
    if raw.startswith(b"\xff\xfe") or raw.startswith(b"\xfe\xff"):
        return raw.decode("utf-16")          # BOM tells the byte order; BOM is dropped
    if raw.startswith(b"\xef\xbb\xbf"):
        return raw.decode("utf-8-sig")
    try:
        return raw.decode("utf-8")           # already UTF-8 (or plain ASCII)
    except UnicodeDecodeError:
        return raw.decode("latin-1")         # the old Western-European files

for root, _, files in os.walk("notes"):
    for name in files:
        path = os.path.join(root, name)
        raw = open(path, "rb").read()
        text = decode(raw)
        new = text.encode("utf-8")
        if new != raw:
            with open(path, "wb") as fh:
                fh.write(new)
PY
