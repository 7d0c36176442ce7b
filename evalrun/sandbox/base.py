"""The sandbox contract every backend implements and the conformance suite checks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

Command = str | Sequence[str]
"""A shell string (run with `bash -c`) or an argv list (run as is)."""


@dataclass(frozen=True)
class ExecResult:
    """What one command did. Output is bounded: head and tail kept, the total size noted."""

    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    timed_out: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@runtime_checkable
class Sandbox(Protocol):
    """One sample's workspace. Paths are relative to `workdir` unless absolute.

    `workdir` is the workspace as commands inside the sandbox see it; `private_dir` is a directory
    outside it for the harness's own files (the agent's final answer for verify.sh). Methods raise
    `evalrun.errors.SandboxError` when the sandbox itself fails; a command that fails is not an
    error, it is an `ExecResult` with a non-zero exit code.
    """

    workdir: str
    private_dir: str

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> ExecResult:
        """Run `cmd` (cwd defaults to `workdir`); on timeout kill its whole process tree."""
        ...

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (parents created)."""
        ...

    async def read_file(self, path: str) -> bytes:
        """Read a file's bytes; raises FileNotFoundError when it does not exist."""
        ...

    async def put(self, host_dir: Path, path: str = ".") -> None:
        """Copy the contents of a host folder into the sandbox at `path`, overwriting files."""
        ...


class SandboxBackend(Protocol):
    """Makes sandboxes. Instantiated from the `sandbox` config group."""

    name: str
    isolated: bool

    def preflight(self) -> None:
        """Raise `SandboxUnavailable` (a usage error) when this backend cannot run here."""
        ...

    def open(self, label: str) -> AbstractAsyncContextManager[Sandbox]:
        """A fresh sandbox; closing it removes everything it made."""
        ...


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "evalrun agent",
    "GIT_AUTHOR_EMAIL": "agent@evalrun.invalid",
    "GIT_COMMITTER_NAME": "evalrun agent",
    "GIT_COMMITTER_EMAIL": "agent@evalrun.invalid",
}


def sandbox_env(
    *, home: str, tmpdir: str, path: str, extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The whole environment a sandboxed command sees: an allow-list, never the host's."""
    env = {
        "PATH": path,
        "HOME": home,
        "TMPDIR": tmpdir,
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        **GIT_IDENTITY,
    }
    if extra:
        env.update(extra)
    return env
