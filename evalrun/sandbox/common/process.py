"""Run a host process with a timeout that kills its whole process group, output bounded."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import time
from collections.abc import Mapping, Sequence

from evalrun.sandbox.base import ExecResult
from evalrun.sandbox.common.output import BoundedBuffer, exec_result

# After the main process exits, how long stray children may keep its pipes open.
_PIPE_GRACE_S = 0.2


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def _exited(proc: asyncio.subprocess.Process) -> int:
    """Wait for the process itself to exit.

    On Python 3.11 `proc.wait()` also waits until every holder of the stdout/stderr pipes has
    closed them, so a detached grandchild (`setsid daemon &`) would make it hang for as long as
    that grandchild lives; the return code is set on exit alone, so poll it alongside.
    """
    waiter = asyncio.ensure_future(proc.wait())
    try:
        while proc.returncode is None:
            await asyncio.wait({waiter}, timeout=0.05)
    finally:
        waiter.cancel()
    assert proc.returncode is not None
    return proc.returncode


async def run_process(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout_s: float | None,
    output_limit: int,
    stdin: bytes | int | None = None,
    pass_fds: tuple[int, ...] = (),
) -> ExecResult:
    """Run `argv` in its own session; on timeout or cancellation SIGKILL the whole group.

    `stdin` is bytes to feed, or a file descriptor the process reads (a pipe another thread
    writes: nothing is buffered here; the caller keeps and closes its own copy). `pass_fds` are
    inherited by the process at the same numbers (the caller closes its copies afterwards).
    Leftover background children are killed when the main process exits too, so nothing a
    sample started outlives it.
    """
    start = time.monotonic()
    if isinstance(stdin, int):
        stdin_arg: int = stdin
    else:
        stdin_arg = asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL
    proc = await asyncio.create_subprocess_exec(
        *argv,
        cwd=cwd,
        env=dict(env),
        stdin=stdin_arg,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    out, err = BoundedBuffer(output_limit), BoundedBuffer(output_limit)
    assert proc.stdout is not None and proc.stderr is not None
    readers = asyncio.gather(out.drain(proc.stdout), err.drain(proc.stderr))
    timed_out = False
    try:
        if isinstance(stdin, bytes):
            assert proc.stdin is not None
            proc.stdin.write(stdin)
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                await proc.stdin.drain()
            proc.stdin.close()
        try:
            await asyncio.wait_for(_exited(proc), timeout_s)
        except TimeoutError:
            timed_out = True
        _kill_group(proc.pid)
        if timed_out:
            await _exited(proc)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(readers), _PIPE_GRACE_S)
    finally:
        _kill_group(proc.pid)
        readers.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await readers
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await _exited(proc)
        # Our ends of the pipes: a detached grandchild may still hold theirs open.
        transport = getattr(proc, "_transport", None)
        if transport is not None:
            transport.close()
    return exec_result(proc.returncode, out, err, start, timed_out)
