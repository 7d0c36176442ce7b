"""The coder's tools against a real (local) sandbox: what the model sees, what gets recorded."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path

from evalrun.agents.coder.tools import SUMMARY_CHARS, SandboxTools
from evalrun.sandbox.local import LocalBackend


def with_tools(test: Callable[[SandboxTools, Path], Awaitable[None]], **options) -> None:
    async def main() -> None:
        async with LocalBackend().open("tools") as box:
            await test(SandboxTools(box, **options), Path(box.workdir))

    asyncio.run(main())


def test_edit_replaces_exactly_one_occurrence():
    async def check(tools: SandboxTools, root: Path) -> None:
        (root / "a.py").write_text("x = 1\ny = 2\n")
        reply = await tools.edit("a.py", "y = 2", "y = 3")
        assert reply == "replaced 1 occurrence in a.py"
        assert (root / "a.py").read_text() == "x = 1\ny = 3\n"
        assert tools.trajectory[-1].error is None

    with_tools(check)


def test_edit_refuses_missing_and_ambiguous_text_and_leaves_the_file_alone():
    async def check(tools: SandboxTools, root: Path) -> None:
        (root / "a.py").write_text("v = 0\nv = 0\n")
        missing = await tools.edit("a.py", "w = 0", "w = 1")
        assert missing.startswith("error: old text not found in a.py")
        ambiguous = await tools.edit("a.py", "v = 0", "v = 1")
        assert "occurs 2 times" in ambiguous
        assert (root / "a.py").read_text() == "v = 0\nv = 0\n"
        assert [s.error is not None for s in tools.trajectory] == [True, True]
        everywhere = await tools.edit("a.py", "v = 0", "v = 1", replace_all=True)
        assert everywhere == "replaced 2 occurrences in a.py"
        assert (root / "a.py").read_text() == "v = 1\nv = 1\n"

    with_tools(check)


def test_edit_keeps_bytes_it_did_not_touch():
    """Latin-1 bytes and CRLF line endings survive an edit elsewhere in the file."""

    async def check(tools: SandboxTools, root: Path) -> None:
        original = b"caf\xe9 = 1\r\nname = 'old'\r\n"
        (root / "legacy.py").write_bytes(original)
        await tools.edit("legacy.py", "'old'", "'new'")
        assert (root / "legacy.py").read_bytes() == original.replace(b"'old'", b"'new'")
        shown = await tools.read("legacy.py")
        assert "caf\ufffd" in shown  # undecodable byte shown as U+FFFD, never crashes

    with_tools(check)


def test_edit_hints_at_crlf_line_endings():
    async def check(tools: SandboxTools, root: Path) -> None:
        (root / "w.txt").write_bytes(b"one\r\ntwo\r\n")
        reply = await tools.edit("w.txt", "one\ntwo", "1\n2")
        assert "CRLF" in reply

    with_tools(check)


def test_write_creates_folders_and_read_pages_through_lines():
    async def check(tools: SandboxTools, root: Path) -> None:
        text = "".join(f"line {n}\n" for n in range(1, 11))
        assert (
            await tools.write("pkg/deep/f.txt", text)
            == f"wrote {len(text)} bytes to pkg/deep/f.txt"
        )
        assert (root / "pkg/deep/f.txt").read_text() == text
        assert await tools.read("pkg/deep/f.txt") == text
        page = await tools.read("pkg/deep/f.txt", offset=3, limit=2)
        assert page == "[lines 3-4 of 10]\nline 3\nline 4\n"

    with_tools(check)


def test_reading_a_missing_file_is_an_error_for_the_model_not_a_crash():
    async def check(tools: SandboxTools, root: Path) -> None:
        reply = await tools.read("nope.txt")
        assert reply.startswith("error: FileNotFoundError")
        assert tools.trajectory[-1].error.startswith("FileNotFoundError")

    with_tools(check)


def test_bash_reports_exit_code_and_output_and_records_failure():
    async def check(tools: SandboxTools, root: Path) -> None:
        ok = await tools.bash("echo hello; echo oops >&2")
        assert ok.startswith("exit code 0") and "hello" in ok and "oops" in ok
        bad = await tools.bash("exit 3")
        assert bad.startswith("exit code 3")
        assert [s.error for s in tools.trajectory] == [None, "exit 3"]

    with_tools(check)


def test_bash_is_killed_at_its_timeout():
    async def check(tools: SandboxTools, root: Path) -> None:
        reply = await tools.bash("sleep 30", timeout_s=1)
        assert reply.startswith("timed out")
        assert tools.trajectory[-1].error == "timed out"

    with_tools(check, bash_timeout_s=5)


def test_grep_finds_matches_and_says_when_there_are_none():
    async def check(tools: SandboxTools, root: Path) -> None:
        (root / "src").mkdir()
        (root / "src/a.py").write_text("def alpha():\n    return 1\n")
        (root / "notes.md").write_text("alpha in prose\n")
        found = await tools.grep("def al+pha", ".")
        assert "src/a.py:1:def alpha():" in found
        only_py = await tools.grep("alpha", ".", glob="*.py")
        assert "notes.md" not in only_py and "a.py" in only_py
        assert await tools.grep("zeta") == "no matches"

    with_tools(check)


def test_grep_passes_the_pattern_as_an_argument_not_through_a_shell():
    async def check(tools: SandboxTools, root: Path) -> None:
        await tools.grep("$(touch pwned)")
        assert not (root / "pwned").exists()

    with_tools(check)


def test_ls_lists_hidden_files_and_reports_missing_folders():
    async def check(tools: SandboxTools, root: Path) -> None:
        (root / ".env.example").write_text("")
        assert ".env.example" in await tools.ls()
        assert (await tools.ls("missing")).startswith("error:")

    with_tools(check)


def test_huge_output_is_bounded_for_the_model_and_the_record():
    async def check(tools: SandboxTools, root: Path) -> None:
        (root / "big.txt").write_text("x" * 100_000)
        reply = await tools.read("big.txt")
        assert len(reply) < 1200 and "chars omitted" in reply
        assert len(tools.trajectory[-1].result) <= SUMMARY_CHARS + 100

    with_tools(check, output_chars=1000)
