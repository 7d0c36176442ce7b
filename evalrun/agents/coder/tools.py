"""The coder agent's tools - read, write, edit, bash, grep, ls - acting only through the Sandbox.

Because every tool goes through `sandbox.exec/read_file/write_file`, the coder runs unchanged on
every backend. Each call appends one `ToolCall` to `trajectory` (name, args, a bounded result
summary, duration, error). A tool never raises for the model's own mistakes (a missing file, an
edit whose text is not found): it returns an `error: ...` message the model can act on and records
the error on the step. A `SandboxError` (the sandbox itself broke) propagates to the engine.

This module has no pydantic-ai import; `evalrun.agents.coder.agent` hands the bound methods to it as
tools, and their docstrings become the tool descriptions the model sees.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any

from evalrun.models.records import ToolCall
from evalrun.sandbox.base import ExecResult, Sandbox

SUMMARY_CHARS = 2000
ARG_CHARS = 2000

Reply = tuple[str, str | None]
"""What a tool action returns: the text for the model, and an error to record (or None)."""


class ToolFailure(Exception):
    """The model asked for something that cannot be done; the message goes back to the model."""


def clip(text: str, limit: int) -> str:
    """Keep the head and tail of `text` within about `limit` characters, marking the cut."""
    if len(text) <= limit:
        return text
    half = max(limit // 2, 1)
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


def _decode(data: bytes) -> str:
    """Bytes to text such that encoding back with `_encode` restores every byte."""
    return data.decode("utf-8", errors="surrogateescape")


def _encode(text: str) -> bytes:
    return text.encode("utf-8", errors="surrogateescape")


def _shown(text: str) -> str:
    """Text safe to send to the model (undecodable bytes become U+FFFD)."""
    return _encode(text).decode("utf-8", errors="replace")


def _exec_report(result: ExecResult, limit: int) -> str:
    if result.timed_out:
        head = f"timed out after {result.duration_s:.0f}s (process killed)"
    else:
        head = f"exit code {result.exit_code}"
    parts = [head]
    if result.stdout:
        parts.append("stdout:\n" + clip(result.stdout, limit))
    if result.stderr:
        parts.append("stderr:\n" + clip(result.stderr, limit // 2))
    return "\n".join(parts)


class SandboxTools:
    """Tools bound to one sample's sandbox; `functions()` is what the agent registers."""

    def __init__(
        self, sandbox: Sandbox, *, output_chars: int = 16_000, bash_timeout_s: float = 120.0
    ):
        self.sandbox = sandbox
        self.output_chars = output_chars
        self.bash_timeout_s = bash_timeout_s
        self.trajectory: list[ToolCall] = []
        self.turn_tokens: tuple[int, int] | None = None  # the asking response's; used once
        self.turn_calls: list[tuple[str, str, dict[str, Any]]] = []  # its calls not run yet:
        # (tool name, API id, the arguments the model gave)

    def functions(self) -> list[Callable[..., Awaitable[str]]]:
        return [self.read, self.write, self.edit, self.bash, self.grep, self.ls]

    async def _step(
        self, name: str, args: dict[str, Any], action: Callable[[], Awaitable[Reply]]
    ) -> str:
        started = time.monotonic()
        try:
            text, error = await action()
        except ToolFailure as exc:
            error = str(exc)
            text = f"error: {exc}"
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError) as exc:
            error = f"{type(exc).__name__}: {exc.strerror or exc}"
            text = f"error: {error}"
        recorded = {k: clip(v, ARG_CHARS) if isinstance(v, str) else v for k, v in args.items()}
        tokens, self.turn_tokens = self.turn_tokens or (None, None), None
        self.trajectory.append(
            ToolCall(
                name=name,
                args=recorded,
                result=clip(text, SUMMARY_CHARS),
                duration_s=time.monotonic() - started,
                error=error,
                input_tokens=tokens[0],
                output_tokens=tokens[1],
                call_id=self._call_id(name, args),
            )
        )
        return clip(text, self.output_chars)

    def _call_id(self, name: str, args: dict[str, Any]) -> str | None:
        """The API id of the call now running (tool `name` with `args`): the asking response's
        one call not run yet with that name and those arguments. None when no such call, or
        more than one, is waiting (a call whose arguments failed validation never runs, so
        order alone cannot tell)."""
        waiting = [
            entry
            for entry in self.turn_calls
            if entry[0] == name and all(args.get(k, v) == v for k, v in entry[2].items())
        ]
        if len(waiting) != 1:
            return None
        self.turn_calls.remove(waiting[0])
        return waiting[0][1]

    async def _read_text(self, path: str) -> str:
        return _decode(await self.sandbox.read_file(path))

    async def read(self, path: str, offset: int = 1, limit: int = 2000) -> str:
        """Read a text file from the workspace.

        Args:
            path: File path, relative to the workspace root.
            offset: First line to show (1-based).
            limit: Maximum number of lines to show.
        """

        async def action() -> Reply:
            lines = (await self._read_text(path)).splitlines(keepends=True)
            start = max(offset, 1) - 1
            chosen = lines[start : start + max(limit, 1)]
            body = _shown("".join(chosen))
            if start == 0 and len(chosen) == len(lines):
                return body, None
            return f"[lines {start + 1}-{start + len(chosen)} of {len(lines)}]\n{body}", None

        return await self._step("read", {"path": path, "offset": offset, "limit": limit}, action)

    async def write(self, path: str, content: str) -> str:
        """Create or overwrite a file with exactly `content` (parent folders are created).

        Args:
            path: File path, relative to the workspace root.
            content: The complete new file content.
        """

        async def action() -> Reply:
            await self.sandbox.write_file(path, _encode(content))
            return f"wrote {len(_encode(content))} bytes to {path}", None

        return await self._step("write", {"path": path, "content": content}, action)

    async def edit(self, path: str, old: str, new: str, replace_all: bool = False) -> str:
        """Replace an exact piece of text in a file.

        `old` must appear in the file exactly as given (whitespace and indentation included) and,
        unless `replace_all` is true, exactly once; include surrounding lines to make it unique.

        Args:
            path: File path, relative to the workspace root.
            old: The exact text to replace.
            new: The replacement text.
            replace_all: Replace every occurrence instead of requiring exactly one.
        """

        async def action() -> Reply:
            if not old:
                raise ToolFailure("old must not be empty; use write to create a file")
            text = await self._read_text(path)
            count = text.count(old)
            if count == 0:
                hint = " (the file uses CRLF line endings)" if "\r\n" in text else ""
                raise ToolFailure(
                    f"old text not found in {path}{hint}; read the file and copy the text exactly"
                )
            if count > 1 and not replace_all:
                raise ToolFailure(
                    f"old text occurs {count} times in {path}; add surrounding lines to make it "
                    "unique, or set replace_all"
                )
            await self.sandbox.write_file(path, _encode(text.replace(old, new)))
            return f"replaced {count} occurrence{'s' if count > 1 else ''} in {path}", None

        args = {"path": path, "old": old, "new": new, "replace_all": replace_all}
        return await self._step("edit", args, action)

    async def bash(self, command: str, timeout_s: float = 120.0) -> str:
        """Run a bash command in the workspace root; returns the exit code, stdout and stderr.

        Args:
            command: The shell command line.
            timeout_s: Seconds before the command is killed.
        """
        timeout = min(max(timeout_s, 1.0), self.bash_timeout_s)

        async def action() -> Reply:
            result = await self.sandbox.exec(command, timeout_s=timeout)
            error = None
            if not result.ok:
                error = "timed out" if result.timed_out else f"exit {result.exit_code}"
            return _exec_report(result, self.output_chars), error

        return await self._step("bash", {"command": command, "timeout_s": timeout_s}, action)

    async def grep(self, pattern: str, path: str = ".", glob: str = "") -> str:
        """Search file contents with an extended regular expression (grep -rnE).

        Args:
            pattern: The regular expression.
            path: File or folder to search, relative to the workspace root.
            glob: Only search files whose name matches this glob, e.g. "*.py".
        """

        async def action() -> Reply:
            argv = ["grep", "-rnIE", "--exclude-dir=.git", "--color=never"]
            if glob:
                argv.append(f"--include={glob}")
            argv += ["-e", pattern, "--", path]
            result = await self.sandbox.exec(argv, timeout_s=60)
            if result.exit_code == 1:
                return "no matches", None
            if result.exit_code != 0:
                raise ToolFailure(f"grep failed: {result.stderr.strip() or result.exit_code}")
            return result.stdout, None

        return await self._step("grep", {"pattern": pattern, "path": path, "glob": glob}, action)

    async def ls(self, path: str = ".") -> str:
        """List a folder of the workspace (names, sizes, permissions; hidden files included).

        Args:
            path: Folder to list, relative to the workspace root.
        """

        async def action() -> Reply:
            result = await self.sandbox.exec(["ls", "-lA", "--", path], timeout_s=30)
            if result.exit_code != 0:
                raise ToolFailure(result.stderr.strip() or f"ls failed (exit {result.exit_code})")
            return result.stdout, None

        return await self._step("ls", {"path": path}, action)
