"""The `local` backend: a temp folder per sample and plain host processes. Fast, not isolated.

Commands run with an allow-listed environment and their own process group, but they can see and
write the whole host filesystem. Use it for trusted agents (oracle, noop) and for speed; use
`bwrap` or `docker` for anything that should not be able to find the oracle.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path

from evalrun.errors import SandboxError
from evalrun.sandbox.base import Command, ExecResult, sandbox_env
from evalrun.sandbox.process import run_process


class LocalSandbox:
    """A workspace folder on the host; `exec` runs host processes inside it."""

    def __init__(self, root: Path, *, output_limit: int, path_env: str):
        self.root = root
        self.workdir = str(root / "workspace")
        self.private_dir = str(root / "private")
        self._home = root / "home"
        self._tmp = root / "tmp"
        for folder in (self.workdir, self.private_dir, self._home, self._tmp):
            Path(folder).mkdir(parents=True, exist_ok=True)
        self._output_limit = output_limit
        self._path_env = path_env

    def _abs(self, path: str) -> Path:
        return Path(path) if os.path.isabs(path) else Path(self.workdir) / path

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> ExecResult:
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = sandbox_env(
            home=str(self._home), tmpdir=str(self._tmp), path=self._path_env, extra=env
        )
        try:
            return await run_process(
                argv,
                cwd=str(self._abs(cwd or ".")),
                env=full_env,
                timeout_s=timeout_s,
                output_limit=self._output_limit,
            )
        except (FileNotFoundError, NotADirectoryError, PermissionError) as exc:
            return ExecResult(exit_code=127, stdout="", stderr=str(exc), duration_s=0.0)

    async def write_file(self, path: str, data: bytes | str) -> None:
        target = self._abs(path)
        payload = data.encode() if isinstance(data, str) else data
        await asyncio.to_thread(_write, target, payload)

    async def read_file(self, path: str) -> bytes:
        return await asyncio.to_thread(self._abs(path).read_bytes)

    async def put(self, host_dir: Path, path: str = ".") -> None:
        try:
            await asyncio.to_thread(copy_tree, Path(host_dir), self._abs(path))
        except OSError as exc:
            raise SandboxError(f"copying {host_dir} into the workspace failed: {exc}") from exc


def _write(target: Path, payload: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(payload)


def copy_tree(src: Path, dst: Path) -> None:
    """Copy the contents of `src` into `dst`, keeping modes and symlinks, overwriting files."""
    shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)


class LocalBackend:
    """`sandbox=local`: see the module docstring."""

    name = "local"
    isolated = False

    def __init__(self, keep_workspaces: bool = False, output_limit_bytes: int = 256 * 1024):
        self.keep_workspaces = keep_workspaces
        self.output_limit = output_limit_bytes
        self._path_env = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")

    def preflight(self) -> None:
        if shutil.which("bash") is None:
            from evalrun.errors import SandboxUnavailable

            raise SandboxUnavailable("sandbox=local needs bash on PATH")

    @asynccontextmanager
    async def open(self, label: str) -> AsyncIterator[LocalSandbox]:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        root = Path(tempfile.mkdtemp(prefix=f"evalrun-{safe}-"))
        try:
            yield LocalSandbox(root, output_limit=self.output_limit, path_env=self._path_env)
        finally:
            if not self.keep_workspaces:
                await asyncio.to_thread(shutil.rmtree, root, True)
