"""Bounded capture of a command's output: an agent that prints gigabytes cannot fill memory."""

from __future__ import annotations

import asyncio
import time

from evalrun.sandbox.base import ExecResult


class BoundedBuffer:
    """Keeps the first and last `limit // 2` bytes of a stream and counts the rest."""

    def __init__(self, limit: int = 256 * 1024):
        self.half = max(limit // 2, 1)
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.half - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk:
            self.tail += chunk
            if len(self.tail) > self.half:
                del self.tail[: len(self.tail) - self.half]

    def text(self) -> str:
        dropped = self.total - len(self.head) - len(self.tail)
        body = bytes(self.head)
        if dropped > 0:
            marker = f"\n[... {dropped} bytes omitted of {self.total} ...]\n"
            body += marker.encode()
        body += bytes(self.tail)
        return body.decode("utf-8", errors="replace")

    async def drain(self, stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(1 << 16):
            self.feed(chunk)


def exec_result(
    exit_code: int | None, out: BoundedBuffer, err: BoundedBuffer, started: float, timed_out: bool
) -> ExecResult:
    """What a command started at `started` (`time.monotonic`) did, its output in `out` and `err`;
    a timed-out command has no exit code."""
    return ExecResult(
        exit_code=None if timed_out else exit_code,
        stdout=out.text(),
        stderr=err.text(),
        duration_s=time.monotonic() - started,
        timed_out=timed_out,
        stdout_bytes=out.total,
        stderr_bytes=err.total,
    )
