"""The `local` backend: a temp folder per sample and plain host processes. Fast, not isolated.

Commands run with an allow-listed environment and their own process group, but they can see and
write the whole host filesystem. Use it for trusted agents (oracle, noop) and for speed; use
`bwrap` or `docker` for anything that should not be able to find the verifier.

What a task may ask (`SandboxSpec`): `network=none` runs every command in a network namespace
of its own (`unshare --net`; as a non-root user with `--map-current-user`), so a task that must
have no network has none here either - where this host cannot do that, such tasks are skipped.
`env` is added to every command's environment. A task image or a workspace at a fixed path
cannot be given (the workspace is a temp folder); CPU, memory and disk limits and users are
not enforced.

What the harness still does here, knowing an adversarial agent can defeat every part of it:
every command carries `EVALRUN_SANDBOX=<its sample's temp root>` in its environment, and
`end_agent` kills every host process that does (an agent process that scrubs its environment
escapes); the verifier gets a fresh HOME and TMPDIR; `preflight` removes the temp roots and
processes of runs that no longer exist (`evalrun.sandbox.common.owner`). There is no disk or memory
limit, and the hidden verifier is readable by the agent on the host all along.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import cached_property
from pathlib import Path

from evalrun.config.schema import EvalConfig, SandboxConf
from evalrun.errors import SandboxError, SandboxUnavailable
from evalrun.sandbox.base import (
    DEFAULT_SPEC,
    Command,
    ExecResult,
    Network,
    SandboxSpec,
    needs_docker,
    sandbox_env,
)
from evalrun.sandbox.common import hostfs
from evalrun.sandbox.common.clear import clear_argv, cleared, restored_notes
from evalrun.sandbox.common.owner import (
    PROCESS_MARKER,
    kill_marked,
    new_root,
    release_root,
    remove_tree,
    sweep_roots,
)
from evalrun.sandbox.common.process import run_process

CLEAR_TIMEOUT_S = 120.0


class LocalSandbox:
    """A workspace folder on the host; `exec` runs host processes inside it."""

    is_container = False  # absolute paths are the host's (or read-only)
    switches_users = False  # every command runs as the sandbox's one user

    limit_poll_s: float | None = None
    kept_at: str | None = None

    def __init__(
        self,
        root: Path,
        *,
        output_limit: int,
        path_env: str,
        prefix: Sequence[str] = (),
        verifier_prefix: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
    ):
        self.root = root
        # e.g. `unshare --net --`: no network, for the agent's phase and the verifier's
        self._prefixes = (list(prefix), list(verifier_prefix))
        self._env = dict(env or {})
        self.workdir = str(root / "workspace")
        self.private_dir = str(root / "private")
        self._home = root / "home"
        self._tmp = root / "tmp"
        for folder in (self.workdir, self.private_dir, self._home, self._tmp):
            Path(folder).mkdir(parents=True, exist_ok=True)
        self._output_limit = output_limit
        self._path_env = path_env
        self._verifying = False

    @property
    def host_workspace(self) -> Path:
        return Path(self.workdir)

    def _abs(self, path: str) -> Path:
        return Path(path) if os.path.isabs(path) else Path(self.workdir) / path

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        user: str | None = None,  # not honoured: `switches_users` is false
    ) -> ExecResult:
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = sandbox_env(
            home=str(self._home),
            tmpdir=str(self._tmp),
            path=self._path_env,
            extra={**self._env, **(env or {})},
            verifier=self._verifying,
            private_dir=self.private_dir,
        )
        full_env[PROCESS_MARKER] = str(self.root)
        try:
            return await run_process(
                [*self._prefixes[self._verifying], *argv],
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
            await asyncio.to_thread(
                shutil.copytree, host_dir, self._abs(path), symlinks=True, dirs_exist_ok=True
            )
        except OSError as exc:
            raise SandboxError(f"copying {host_dir} into the workspace failed: {exc}") from exc

    async def get(self, path: str, host_dir: Path, exclude: Sequence[str] = ()) -> bool:
        raise SandboxError("sandbox=local does not copy files out of its sandboxes")

    async def end_agent(self) -> None:
        survivors = await asyncio.to_thread(kill_marked, self.root)
        if survivors:
            raise SandboxError(f"processes of the agent survived SIGKILL: {survivors}")
        self._home = Path(tempfile.mkdtemp(prefix="verifier-home-", dir=self.root))
        self._tmp = Path(tempfile.mkdtemp(prefix="verifier-tmp-", dir=self.root))
        self._verifying = True

    async def begin_agent(self) -> None:
        self._home, self._tmp = self.root / "home", self.root / "tmp"
        self._verifying = False

    async def clear(self, paths: Sequence[str]) -> list[str]:
        places = {self.workdir: self.host_workspace, self.private_dir: Path(self.private_dir)}
        try:
            absolute = [str(self._abs(p)) for p in paths]
            restored = await asyncio.to_thread(hostfs.clear_in, places, absolute)
            return restored_notes(restored, self.workdir)
        except (hostfs.NotHere, OSError):
            pass  # the script below handles (or reports) what is there
        result = await self.exec(clear_argv(paths), timeout_s=CLEAR_TIMEOUT_S)
        return cleared(paths, result.exit_code, result.stdout, result.stderr, self.workdir)

    async def over_limit(self) -> str | None:
        return None


def _write(target: Path, payload: bytes) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(payload)


class LocalBackend:
    """`sandbox=local`: see the module docstring."""

    name = "local"
    isolated = False
    task_limits: frozenset[str] = frozenset()  # a temp folder on the host: no limits at all
    copies_out = False  # no `Sandbox.get`

    def __init__(
        self,
        keep_workspaces: bool = EvalConfig.keep_workspaces,
        output_limit_bytes: int = SandboxConf.output_limit_bytes,
    ):
        self.keep_workspaces = keep_workspaces
        self.output_limit = output_limit_bytes
        self._path_env = os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin")
        self._open: set[Path] = set()

    def add_read_only(self, paths: Sequence[Path], *, live: bool) -> None:
        """Nothing to do: local commands see the host's folders where they are."""

    def preflight(self) -> None:
        if shutil.which("bash") is None:
            raise SandboxUnavailable("sandbox=local needs bash on PATH")
        sweep_roots(self.name)

    @cached_property
    def _offline_prefix(self) -> list[str] | str:
        """The argv prefix that takes the network away from a command, or why there is none."""
        found = shutil.which("unshare")
        if found is None:
            return "unshare (util-linux) is not installed"
        mapping = [] if os.geteuid() == 0 else ["--map-current-user"]
        loopback = 'ip link set lo up 2>/dev/null; exec "$@"'  # a loopback of its own, as bwrap's
        prefix = [found, "--net", *mapping, "--", "bash", "-c", loopback, "evalrun-offline"]
        try:
            done = subprocess.run([*prefix, "true"], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"`unshare --net` could not start ({exc})"
        if done.returncode != 0:
            return f"`unshare --net` failed here ({done.stderr.strip() or done.returncode})"
        return prefix

    def cannot_host(self, spec: SandboxSpec) -> str | None:
        if reason := needs_docker(spec, self.name):
            return reason
        if spec.workdir is not None:
            return (
                f"needs its workspace at {spec.workdir}; sandbox=local works in a temp folder "
                "(use sandbox=bwrap or sandbox=docker)"
            )
        if Network.none in spec.networks and isinstance(self._offline_prefix, str):
            return (
                f"must have no network, and sandbox=local cannot take it away: "
                f"{self._offline_prefix} (use sandbox=bwrap or sandbox=docker)"
            )
        return None

    @asynccontextmanager
    async def open(
        self, label: str, spec: SandboxSpec = DEFAULT_SPEC
    ) -> AsyncIterator[LocalSandbox]:
        if problem := self.cannot_host(spec):
            raise SandboxError(problem)
        offline = self._offline_prefix if isinstance(self._offline_prefix, list) else []
        agent, verifier = (offline if n is Network.none else [] for n in spec.networks)
        root = new_root(label, self.name, self.keep_workspaces)
        self._open.add(root)
        try:
            box = LocalSandbox(
                root,
                output_limit=self.output_limit,
                path_env=self._path_env,
                prefix=agent,
                verifier_prefix=verifier,
                env=dict(spec.env),
            )
            box.kept_at = box.workdir if self.keep_workspaces else None
            yield box
        finally:
            await asyncio.to_thread(release_root, root, self.keep_workspaces)
            self._open.discard(root)

    def abandon(self) -> None:
        for root in list(self._open):
            kill_marked(root)
            if not self.keep_workspaces:
                remove_tree(root)
