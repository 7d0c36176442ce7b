"""What the agent changed, recorded the same way on every backend through the sandbox API.

One sandbox per backend: a starting workspace (text, binary, a symlink, a git ref, a file to
delete) is listed, a stand-in "agent" changes it with shell commands, the agent phase ends, and
the recorded diff must name every change - a unified diff for text, binary files by name. The
bounds (a huge workspace, a missing python3) are checked on the local backend and a fake.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from evalrun.models.records import WorkspaceDiff
from evalrun.run import workspace_diff
from evalrun.run.workspace_diff import changes_since, take_snapshot
from evalrun.sandbox.base import ExecResult
from tests.sandbox.conftest import ALL_BACKENDS, backend_params, build_backend

AGENT = """
set -e
sed -i 's/return a - b/return a + b/' calc.py
printf 'new notes\\n' > notes/new.txt
rm gone.txt
printf '\\x00\\x01\\x02changed' > image.bin
chmod 755 run.sh
ln -sfn calc.py link
echo 0123456789abcdef0123456789abcdef01234567 > .git/refs/heads/main
"""


def starting_workspace(root: Path) -> Path:
    (root / "notes").mkdir(parents=True)
    (root / ".git" / "refs" / "heads").mkdir(parents=True)
    (root / ".git" / "objects").mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n\n\nprint(add(1, 2))\n")
    (root / "gone.txt").write_text("delete me\n")
    (root / "image.bin").write_bytes(b"\x00\x01\x02\x03")
    (root / "run.sh").write_text("echo hi\n")
    (root / "run.sh").chmod(0o644)
    (root / "link").symlink_to("gone.txt")
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / ".git" / "refs" / "heads" / "main").write_text("f" * 40 + "\n")
    (root / ".git" / "objects" / "blob").write_bytes(b"\x78\x9c")
    return root


async def agent_changes(backend, setup: Path, script: str = AGENT) -> WorkspaceDiff:
    async with backend.open("diff-test") as box:
        await box.put(setup)
        before = await take_snapshot(box)
        result = await box.exec(script)
        assert result.ok, result.stderr
        await box.end_agent()
        return await changes_since(box, before)


@pytest.mark.parametrize("backend_id", backend_params(ALL_BACKENDS))
def test_every_change_is_recorded_on_every_backend(backend_id, request, tmp_path):
    backend = build_backend(backend_id, request)
    changes = asyncio.run(agent_changes(backend, starting_workspace(tmp_path / "setup")))
    assert changes.skipped is None
    got = {f.path: f for f in changes.files}
    assert sorted(got) == [
        ".git/refs/heads/main",
        "calc.py",
        "gone.txt",
        "image.bin",
        "link",
        "notes/new.txt",
        "run.sh",
    ]
    assert got["calc.py"].change == "modified"
    assert "-    return a - b\n+    return a + b\n" in got["calc.py"].diff
    assert got["calc.py"].diff.startswith("--- a/calc.py\n+++ b/calc.py\n")
    assert got["notes/new.txt"].change == "added" and "+new notes" in got["notes/new.txt"].diff
    assert got["gone.txt"].change == "removed" and "-delete me" in got["gone.txt"].diff
    assert got["image.bin"].binary and got["image.bin"].diff == "" and got["image.bin"].size == 10
    assert got["run.sh"].note == "mode 0644 → 0755" and got["run.sh"].diff == ""
    assert "-symlink -> gone.txt\n+symlink -> calc.py" in got["link"].diff
    assert "+0123456789abcdef" in got[".git/refs/heads/main"].diff
    assert changes.summary() == "1 added, 5 modified, 1 removed"


def test_a_huge_workspace_is_not_compared_and_says_so(tmp_path, monkeypatch, request):
    monkeypatch.setattr(workspace_diff, "MAX_FILES", 5)
    setup = tmp_path / "setup"
    setup.mkdir()
    for n in range(8):
        (setup / f"f{n}.txt").write_text(str(n))
    changes = asyncio.run(agent_changes(build_backend("local", request), setup, "rm f0.txt"))
    assert changes.files == []
    assert changes.skipped == "the workspace holds more than 5 files"
    assert changes.summary() == "not compared: the workspace holds more than 5 files"


def test_big_text_files_are_named_with_a_note(tmp_path, monkeypatch, request):
    monkeypatch.setattr(workspace_diff, "TEXT_MAX", 1000)
    setup = tmp_path / "setup"
    setup.mkdir()
    (setup / "big.txt").write_text("line\n" * 400)
    changes = asyncio.run(
        agent_changes(build_backend("local", request), setup, "echo more >> big.txt")
    )
    [big] = changes.files
    assert (big.change, big.binary, big.diff) == ("modified", False, "")
    assert big.note == "no diff: the starting version was not kept (too large)"


class NoPython:
    """A container whose image has no python3 (some task images)."""

    host_workspace = None

    async def exec(self, cmd, **kwargs):
        return ExecResult(127, "", "python3: command not found", 0.0)


def test_a_sandbox_without_python_gets_a_note_not_a_failure():
    snapshot = asyncio.run(take_snapshot(NoPython()))
    changes = asyncio.run(changes_since(NoPython(), snapshot))
    assert changes.skipped == "the sandbox has no python3 to list the workspace with"


def test_a_changed_file_left_out_of_the_listing_is_read_back(tmp_path, monkeypatch, request):
    """The listing keeps texts up to a budget; a changed text past it is fetched separately."""
    monkeypatch.setattr(workspace_diff, "TEXT_BUDGET", 200)
    setup = tmp_path / "setup"
    setup.mkdir()
    (setup / "z.txt").write_text("z\n" * 50)
    agent = "printf 'a%.0s' $(seq 150) > a.txt; echo more >> z.txt"
    changes = asyncio.run(agent_changes(build_backend("local", request), setup, agent))
    got = {f.path: f for f in changes.files}
    assert got["a.txt"].change == "added" and got["a.txt"].diff.endswith("+" + "a" * 150 + "\n")
    assert got["z.txt"].note is None and got["z.txt"].diff.endswith(" z\n+more\n")


HOSTILE_NAMES = r"""
set -e
printf 'hello\n' > "$(printf '\377\376.txt')"
printf 'x\n' > "$(printf 'esc\033[31m\nline')"
printf 'y\n' > 'back\x41'
ln -s "$(printf '\377/\033')" "$(printf 'link\376')"
"""


@pytest.mark.parametrize("backend_id", backend_params(ALL_BACKENDS))
def test_names_in_any_encoding_are_recorded_escaped_on_every_backend(
    backend_id, request, tmp_path, monkeypatch
):
    """File names and a symlink target that are not UTF-8 or hold control characters are
    recorded as printable text, escaped so the bytes can be told apart, with a note; such a
    file's new text is still read back and diffed (no text is kept in the listing here)."""
    monkeypatch.setattr(workspace_diff, "TEXT_BUDGET", 0)
    backend = build_backend(backend_id, request)
    (tmp_path / "setup").mkdir()
    changes = asyncio.run(agent_changes(backend, tmp_path / "setup", HOSTILE_NAMES))
    got = {f.path: f for f in changes.files}
    assert sorted(got) == ["\\xff\\xfe.txt", "back\\\\x41", "esc\\x1b[31m\\x0aline", "link\\xfe"]
    assert got["\\xff\\xfe.txt"].diff.endswith("@@ -0,0 +1 @@\n+hello\n")
    assert got["back\\\\x41"].diff.endswith("+y\n")  # a real backslash, told apart from a byte
    assert "+symlink -> \\xff/\\x1b\n" in got["link\\xfe"].diff
    for item in changes.files:
        assert item.path.isprintable() and item.note is not None
        assert item.note.startswith("name shown escaped")
    assert "symlink target shown escaped" in (got["link\\xfe"].note or "")
    assert "\x1b" not in changes.patch() and "\udcff" not in changes.patch()


def test_the_escaping_of_names_is_lossless():
    """Every name maps to printable text and back to the same bytes, and no two names share a
    text - a literal `\\xff` in a name included."""
    codec: dict = {}
    exec(workspace_diff._NAMES, codec)  # the in-sandbox half of the listing script
    names = [bytes([b]) for b in range(1, 256) if b != ord("/")]
    names += [b"\\xff", b"\\\\", b"a\\b", "é\u202e\u2028.py".encode(), b"\xc3(", b"\xe2\x80"]
    shown = [codec["name_of"](name) for name in names]
    assert all(text.isprintable() for text in shown)
    assert [codec["raw_of"](text) for text in shown] == names
    assert len(set(shown)) == len(names)
    assert codec["name_of"](b"plain name.txt") == "plain name.txt"
    assert codec["name_of"]("café.py".encode()) == "café.py"


DEEP_CHAIN = """
set -e
echo top > top.txt
p=$(printf 'd/%.0s' $(seq 1000))
for i in 1 2 3; do mkdir -p "$p"; cd "$p"; done
echo bottom > bottom.txt
"""


@pytest.mark.parametrize("backend_id", backend_params(["local", "bwrap", "docker"]))
def test_a_folder_chain_3000_deep_is_named_not_walked(backend_id, request, tmp_path):
    """The listing does not recurse: the rest of the workspace is compared as usual, and the
    chain is one entry at the depth where listing stopped, saying so. (Not on the Modal
    stand-in: its host-side clean-up is the test double's own `shutil.rmtree`.)"""
    backend = build_backend(backend_id, request)
    (tmp_path / "setup").mkdir()
    changes = asyncio.run(agent_changes(backend, tmp_path / "setup", DEEP_CHAIN))
    assert changes.skipped is None
    got = {f.path: f for f in changes.files}
    deep = "d/" * workspace_diff.MAX_DEPTH + "d"
    assert sorted(got) == [deep, "top.txt"]
    assert got[deep].note == (
        f"a folder more than {workspace_diff.MAX_DEPTH} levels deep: its contents not listed"
    )
    assert got["top.txt"].diff.endswith("+top\n")
