"""What the agent changed in the workspace: files added, removed and modified, with a unified
diff of the text files - recorded on every sample, on every backend, through the sandbox API.

Two looks at the workspace, each one run of a small python3 script: inside the sandbox (an
`exec`), or in the harness's own process when the workspace is a host folder and nothing of the
sample runs (`Sandbox.host_workspace`: local, bwrap) - the same code either way, never following
a link:

1. `take_snapshot`, after the workspace is prepared and before the agent starts: every file's
   kind, mode, size and sha256, and the text of the small text files (the "before" side of the
   diffs), returned compressed on stdout and kept on the host - nothing is written into the
   sandbox, so nothing the agent or the verifier sees changes.
2. `changes_since`, after the agent phase has ended (`Sandbox.end_agent`: no agent process is
   left to race it) and before the hidden verifier is injected: the same listing again, whose
   texts are the "after" side (a changed text file left out of the listing's budget is read
   back with one more `exec`); the diffs are made on the host.

It is bounded everywhere, so it stays cheap beside the sample: a workspace of more than
`MAX_FILES` files or `MAX_BYTES` bytes is not compared (the diff says so); files larger than
`HASH_MAX` are compared by size and mtime; only text files up to `TEXT_MAX` keep their text;
each file's diff is cut at `FILE_DIFF_CHARS` and a sample's at `DIFF_CHARS`. Of a `.git` folder
only HEAD, packed-refs and refs/ are compared - where the branches point (a commit shows as a
moved ref; the objects it wrote are not listed). A
sandbox without python3 (some task images) gets a diff that says so. Nothing here can change a
sample's outcome: any failure becomes a note on the diff.

The agent shapes the workspace, so nothing in it may break the listing or the record it feeds
(DESIGN.md, threat model rule 2). The listing walks the tree iteratively, names a folder deeper
than `MAX_DEPTH` without entering it and stops comparing past `MAX_FOLDERS` folders; it reads
names as bytes and writes them as valid, printable Unicode - a name (or a symlink's target) that
is not UTF-8 or holds a control character is escaped losslessly (`\\xNN` per such byte, `\\\\`
for a backslash) and its entry says so; the read-back of a changed file turns such a name back
into its bytes.
"""

from __future__ import annotations

import asyncio
import base64
import difflib
import functools
import json
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from evalrun.models.records import ChangeKind, FileChange, WorkspaceDiff
from evalrun.sandbox.base import Sandbox

MAX_FILES = 2_000
MAX_BYTES = 256 * 1024 * 1024  # hashed in all; beyond it the workspace is "huge"
HASH_MAX = 8 * 1024 * 1024  # larger files: compared by size and mtime
TEXT_MAX = 64 * 1024  # a text file's content is kept (diffed) up to this size
TEXT_BUDGET = 256 * 1024  # text kept from the starting workspace, all files together
OUTPUT_MAX = 160 * 1024  # encoded snapshot on stdout (sandbox output limits are 256 KiB)
CHANGED_MAX = 50  # changed text files read back and diffed
MAX_DEPTH = 64  # a folder deeper than this is named, its contents not listed
MAX_FOLDERS = 20_000  # beyond it the workspace is not compared
FILE_DIFF_CHARS = 16_000
DIFF_CHARS = 64_000
TIMEOUT_S = 60.0

# File names as the listing writes them: valid, printable Unicode, and losslessly so. A name that
# is UTF-8 without a backslash or a control character is kept as it is; any other is escaped -
# every byte that is not UTF-8 or belongs to a control character (Cc, Cf, Zl, Zp: newlines, ESC,
# bidi overrides) as \xNN, a backslash as \\ - so a name with a backslash in it is always an
# escaped one, and `raw_of` gives back the exact bytes.
_NAMES = r"""
SHOWN_AS_BYTES = ("Cc", "Cf", "Zl", "Zp")
def name_of(raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    if text is not None and "\\" not in text and text.isascii() and text.isprintable():
        return text
    import unicodedata  # only for the names that need it: an import costs the listing time
    if text is not None and "\\" not in text:
        if not any(unicodedata.category(c) in SHOWN_AS_BYTES for c in text):
            return text
    out = []
    for c in raw.decode("utf-8", "surrogateescape"):
        if c == "\\":
            out.append("\\\\")
        elif "\udc80" <= c <= "\udcff":
            out.append("\\x%02x" % (ord(c) - 0xdc00))
        elif unicodedata.category(c) in SHOWN_AS_BYTES:
            out.extend("\\x%02x" % b for b in c.encode("utf-8"))
        else:
            out.append(c)
    return "".join(out)
def raw_of(name):
    if "\\" not in name:
        return name.encode("utf-8")
    out, i = bytearray(), 0
    while i < len(name):
        if name.startswith("\\\\", i):
            out += b"\\"
            i += 2
        elif name.startswith("\\x", i):
            out.append(int(name[i + 2:i + 4], 16))
            i += 4
        else:
            out += name[i].encode("utf-8")
            i += 1
    return bytes(out)
"""

_LISTING = r"""
import os, stat, sys, zlib
from binascii import b2a_base64
try:  # the C parts of json and hashlib: importing the modules costs more than the listing
    from _json import encode_basestring_ascii as quote
except ImportError:
    from json.encoder import py_encode_basestring_ascii as quote
try:
    from _sha256 import sha256
except ImportError:
    try:
        from _sha2 import sha256
    except ImportError:
        from hashlib import sha256
def dumps(obj):
    if isinstance(obj, str):
        return quote(obj)
    if obj is None or obj is True or obj is False:
        return {None: "null", True: "true", False: "false"}[obj]
    if isinstance(obj, int):
        return str(obj)
    if isinstance(obj, dict):
        return "{" + ",".join(quote(k) + ":" + dumps(v) for k, v in obj.items()) + "}"
    return "[" + ",".join(dumps(v) for v in obj) + "]"
def sniff(head):
    if b"\0" in head[:8192]:
        return False
    try:
        head[:8192].decode("utf-8")
    except UnicodeDecodeError as exc:
        return len(head) > 8192 and exc.start >= 8189  # a character cut at 8 KiB
    return True
def text_of(path, text_max):
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        with open(path, "rb") as fh:
            data = fh.read(text_max + 1)
        if len(data) > text_max or not sniff(data):
            return None
        return data.decode("utf-8", "replace")
    except OSError:
        return None
def encoded(obj):
    return b2a_base64(zlib.compress(dumps(obj).encode(), 6), newline=False).decode()
def listing(argv, root):
    mode, cut = argv[0], len(root) + 1
    limits = {k: int(v) for k, v in (p.split("=") for p in argv[1].split(","))}
    if mode == "read":
        wanted = [(p, os.path.join(root, raw_of(p))) for p in argv[2:]]
        return encoded({"texts": {p: text_of(raw, limits["text_max"]) for p, raw in wanted}})
    files, texts, total, budget, skipped = {}, {}, 0, limits["text_budget"], None
    stack, folders = [(root, 0)], 0
    while stack and not skipped:  # iterative: a chain of folders thousands deep is no recursion
        top, depth = stack.pop()
        folders += 1
        if folders > limits["max_folders"]:
            skipped = "the workspace holds more than %d folders" % limits["max_folders"]
            break
        if depth > limits["max_depth"]:  # named, not entered
            files[name_of(top[cut:])] = ["deep", 0, 0, "", False]
            continue
        try:
            with os.scandir(top) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError:
            continue
        in_git = os.path.basename(top) == b".git"  # where branches point, not the objects
        subdirs = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if is_dir:
                if not in_git or entry.name == b"refs":
                    subdirs.append(entry.path)
                continue
            if in_git and entry.name not in (b"HEAD", b"packed-refs"):
                continue
            raw = entry.path
            path = name_of(raw[cut:])
            try:
                st = os.lstat(raw)
            except OSError:
                continue
            if len(files) >= limits["max_files"]:
                skipped = "the workspace holds more than %d files" % limits["max_files"]
                break
            perm = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                try:
                    target = name_of(os.readlink(raw))
                except OSError:
                    target = "unreadable"
                files[path] = ["link", perm, 0, target, False]
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            total += min(st.st_size, limits["hash_max"])
            if total > limits["max_bytes"]:
                skipped = "the workspace holds more than %d MB" % (limits["max_bytes"] >> 20)
                break
            digest, text, texty = "unreadable", None, False
            try:
                with open(os.open(raw, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK), "rb") as fh:
                    head = fh.read(1 << 20)
                    texty = sniff(head)
                    if st.st_size > limits["hash_max"]:
                        digest = "size:%d:mtime:%d" % (st.st_size, st.st_mtime_ns)
                    else:
                        h = sha256(head)
                        for chunk in iter(lambda: fh.read(1 << 20), b""):
                            h.update(chunk)
                        digest = h.hexdigest()[:32]
                if texty and mode == "keep" and len(head) <= limits["text_max"]:
                    text = head.decode("utf-8", "replace")
            except OSError:
                pass
            files[path] = ["file", perm, st.st_size, digest, texty]
            if mode == "keep" and text is not None and len(text) <= budget:
                texts[path] = text
                budget -= len(text)
        stack.extend((d, depth + 1) for d in reversed(subdirs))
    out = {"files": files, "texts": texts, "skipped": skipped}
    text = encoded(out)
    while len(text) > limits["output_max"] and out["texts"]:
        out["texts"].pop(max(out["texts"], key=lambda p: len(out["texts"][p])))
        text = encoded(out)
    if len(text) > limits["output_max"]:
        out = {"files": {}, "texts": {}, "skipped": "the workspace listing is too large to compare"}
        text = encoded(out)
    return text
"""
_SCRIPT = _NAMES + _LISTING + "sys.stdout.write(listing(sys.argv[1:], b'.'))\n"


def _limits() -> str:
    """The listing's bounds as its second argument: `name=value,...` (no json to import)."""
    limits = {
        "max_files": MAX_FILES,
        "max_bytes": MAX_BYTES,
        "hash_max": HASH_MAX,
        "text_max": TEXT_MAX,
        "text_budget": TEXT_BUDGET,
        "output_max": OUTPUT_MAX,
        "max_depth": MAX_DEPTH,
        "max_folders": MAX_FOLDERS,
    }
    return ",".join(f"{name}={value}" for name, value in limits.items())


@dataclass(frozen=True)
class Entry:
    """One path of a listing: kind (file, link, or deep: a folder below `MAX_DEPTH`, not
    entered), permission bits, size, digest (a symlink's target), and whether it is text."""

    kind: str
    mode: int
    size: int
    digest: str
    text: bool


@dataclass
class Snapshot:
    """A listing of the workspace, with the text of its small text files (`keep` mode)."""

    files: dict[str, Entry] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    skipped: str | None = None


class SnapshotFailed(Exception):
    """The listing could not be taken; the message says why (for the diff's note)."""


@functools.cache
def _listing_here() -> Callable[[list[str], bytes], str]:
    """The listing script's `listing` function, for the harness's own process."""
    namespace: dict[str, Any] = {}
    exec(compile(_NAMES + _LISTING, "<evalrun listing>", "exec"), namespace)
    return namespace["listing"]


async def _run(box: Sandbox, *args: str) -> dict[str, Any]:
    workspace = box.host_workspace
    if workspace is not None:  # nothing runs: list the host folder here, one process start less
        text = await asyncio.to_thread(_listing_here(), list(args), bytes(workspace))
        return _decoded(text)
    result = await box.exec(["python3", "-I", "-S", "-c", _SCRIPT, *args], timeout_s=TIMEOUT_S)
    if result.exit_code == 127:
        raise SnapshotFailed("the sandbox has no python3 to list the workspace with")
    if result.timed_out:
        raise SnapshotFailed(f"listing the workspace took longer than {TIMEOUT_S:g}s")
    if result.exit_code != 0:
        detail = (result.stderr.strip().splitlines() or [f"exit {result.exit_code}"])[-1]
        raise SnapshotFailed(f"listing the workspace failed: {detail}")
    return _decoded(result.stdout)


def _decoded(text: str) -> dict[str, Any]:
    try:
        return json.loads(zlib.decompress(base64.b64decode(text.strip())))
    except (ValueError, zlib.error) as exc:
        raise SnapshotFailed(f"the workspace listing was cut or unreadable ({exc})") from exc


def _snapshot(data: dict[str, Any]) -> Snapshot:
    files = {path: Entry(*entry) for path, entry in (data.get("files") or {}).items()}
    return Snapshot(files, dict(data.get("texts") or {}), data.get("skipped"))


async def take_snapshot(box: Sandbox) -> Snapshot:
    """The starting workspace (call after it is prepared, before the agent runs). Never raises:
    a listing that fails is a snapshot that says why (`skipped`)."""
    try:
        return _snapshot(await _run(box, "keep", _limits()))
    except Exception as exc:  # any failure is a note, never the sample's outcome
        return Snapshot(skipped=str(exc) or type(exc).__name__)


async def changes_since(box: Sandbox, before: Snapshot) -> WorkspaceDiff:
    """What changed since `before` (call after `Sandbox.end_agent`, before the verifier goes
    in). Never raises: a comparison that cannot be made is a diff with `skipped` set."""
    if before.skipped:
        return WorkspaceDiff(skipped=before.skipped)
    try:
        after = _snapshot(await _run(box, "keep", _limits()))
        if after.skipped:
            return WorkspaceDiff(skipped=after.skipped)
        paths = sorted(set(before.files) | set(after.files))
        changed = [p for p in paths if before.files.get(p) != after.files.get(p)]
        texts = [p for p in changed if p in after.files and after.files[p].text]
        new_texts: dict[str, str | None] = {p: after.texts[p] for p in texts if p in after.texts}
        wanted = [p for p in texts if p not in new_texts][:CHANGED_MAX]  # over the text budget
        if wanted:
            new_texts.update((await _run(box, "read", _limits(), *wanted))["texts"])
    except Exception as exc:
        return WorkspaceDiff(skipped=str(exc) or type(exc).__name__)
    return compare(before, after, changed, new_texts)


def compare(
    before: Snapshot, after: Snapshot, changed: list[str], new_texts: dict[str, str | None]
) -> WorkspaceDiff:
    """The diff from the two listings and the changed files' new text (host side, bounded)."""
    budget = DIFF_CHARS
    files = []
    for path in changed:
        old, new = before.files.get(path), after.files.get(path)
        change: ChangeKind = "added" if old is None else "removed" if new is None else "modified"
        entry = new or old
        assert entry is not None
        item = FileChange(
            path=path,
            change=change,
            binary=entry.kind == "file" and not entry.text,
            size=entry.size if entry.kind == "file" else None,
        )
        notes = _escape_notes(path, old, new)
        if old and new and old.mode != new.mode:
            notes.append(f"mode {old.mode:04o} → {new.mode:04o}")
        if entry.kind == "deep":
            notes.append(f"a folder more than {MAX_DEPTH} levels deep: its contents not listed")
        elif entry.kind == "link":
            item.diff = _link_diff(path, old, new)
        elif not item.binary:
            text, note = _file_diff(path, before.texts.get(path), new_texts.get(path), old, new)
            if note:
                notes.append(note)
            if len(text) > budget:
                text = ""
                notes.append("diff not shown: the sample's diff is over its size budget")
            budget -= len(text)
            item.diff = text
        item.note = "; ".join(notes) or None
        files.append(item)
    return WorkspaceDiff(files=files)


ESCAPED = "as \\xNN: bytes that are not UTF-8 or are control characters; \\\\ is a backslash"


def _escape_notes(path: str, old: Entry | None, new: Entry | None) -> list[str]:
    """Say so when the name or a symlink's target is shown escaped (only an escaped one holds a
    backslash: see `_NAMES`)."""
    notes = ["name shown escaped"] if "\\" in path else []
    if any(e is not None and e.kind == "link" and "\\" in e.digest for e in (old, new)):
        notes.append("symlink target shown escaped")
    return [f"{', '.join(notes)} ({ESCAPED})"] if notes else []


def _link_diff(path: str, old: Entry | None, new: Entry | None) -> str:
    lines = [f"--- a/{path}", f"+++ b/{path}"]
    if old is not None:
        lines.append(f"-symlink -> {old.digest}")
    if new is not None:
        lines.append(f"+symlink -> {new.digest}")
    return "\n".join(lines) + "\n"


def _file_diff(
    path: str,
    old_text: str | None,
    new_text: str | None,
    old: Entry | None,
    new: Entry | None,
) -> tuple[str, str | None]:
    """A unified diff of one text file, and a note when it could not be made whole."""
    if old is not None and old.kind == "file" and old_text is None:
        if new is None:
            return "", None
        return "", "no diff: the starting version was not kept (too large)"
    if new is not None and new.kind == "file" and new_text is None:
        if old is None and new.size == 0:
            new_text = ""
        else:
            return "", "no diff: the new version was not read (too large or too many files)"
    lines = difflib.unified_diff(
        (old_text or "").splitlines(keepends=True),
        (new_text or "").splitlines(keepends=True),
        fromfile="/dev/null" if old is None else f"a/{path}",
        tofile="/dev/null" if new is None else f"b/{path}",
    )
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    if len(text) > FILE_DIFF_CHARS:
        cut = text[:FILE_DIFF_CHARS].rsplit("\n", 1)[0] + "\n"
        return cut, f"diff cut at {FILE_DIFF_CHARS // 1000} KB"
    return text, None
