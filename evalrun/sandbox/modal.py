"""The `modal` backend: one `modal.Sandbox` per sample, files moved only through Modal's API.

NOTE: Modal's cloud cannot be reached from the machines evalrun is developed on. This module is
written against the modal SDK's real API (1.6: `App.lookup`, `Image.debian_slim().apt_install`,
`Image.from_registry`, `Sandbox.create`, `Sandbox.exec`, `Sandbox.filesystem`,
`Sandbox.terminate`, all through their `.aio` variants) but it is exercised only against a
stand-in of that SDK surface (`tests/sandbox/modal_standin.py`), never against Modal itself.

Each sample gets a fresh sandbox from `image` (a registry tag, or by default `debian_slim` with git
and sqlite3 added), with `block_network=True` unless configured otherwise and a lifetime of
`timeout_s`; it is terminated when the sample ends, also on cancellation. Nothing of the host is
mounted: files go in with `filesystem.write_bytes` (folders as a tar unpacked inside) and come out
with `filesystem.read_bytes`. Commands run through `evalrun.sandbox.common.container.ExecSession`,
as on Docker: an allow-listed environment, a session of their own, the whole tree killed on timeout
(and Modal's own exec timeout as a backstop).

```
/workspace     the sample's workspace (`workdir`)
/evalrun       the harness's private folder (`private_dir`): answer file, exec pid files, and
               the verifier's fresh HOME and TMPDIR (made when the agent phase ends)
/home/agent    HOME, empty;  /tmp  TMPDIR
```

What a task may ask (`SandboxSpec`): no network (`block_network=True` for its sandboxes, always),
the network (only with `block_network: false`), its own `cpus` and `memory_mb`, and variables
every command sees. A task image or a workspace at another path cannot be given here, and a
task's `storage_mb` is not enforced (this backend has no disk limit).

Folders go in as a tar streamed into a `tar -x` exec's stdin, never whole in memory. `end_agent`
kills every process outside PID 1's session and its own, as on Docker, and checks.

Orphans. Every sandbox carries Modal tags naming the evalrun process that made it (the owner
token of `evalrun.sandbox.common.owner`, split into tags because a tag value allows only letters,
digits, `.`, `-` and `_`):

```
evalrun=1   evalrun.owner_host=<hostname>   evalrun.owner_pid=<pid>   evalrun.owner_start=<ticks>
evalrun.keep=1                              only with keep_workspaces: never swept
```

`preflight()` lists the app's running sandboxes tagged `evalrun=1` (`Sandbox.list(app_id=,
tags=)`, then `get_tags` on each) and terminates those whose owner was on this host and is gone
(pid not running, or running with another start time), as the docker backend removes its
containers; a live run's, another host's and a kept one are left alone. A second Ctrl-C
(`abandon`) terminates the sandboxes still open, waiting at most ABANDON_TIMEOUT_S; what is left
then is swept by the next preflight. The sweep, like everything here, has run only against the
stand-in.

Known limitations: commands run as root inside the Modal sandbox (Modal's default), so unlike the
docker backend an agent there could alter the system tools verify.sh later uses, and write the
private folder. There is no disk watchdog (Modal bounds a sandbox's disk itself). A sandbox made
on another host, or by a run whose host was renamed, is not swept: it ends at its lifetime,
`timeout_s`.

Credentials come from MODAL_TOKEN_ID + MODAL_TOKEN_SECRET or from `~/.modal.toml` (or the file
MODAL_CONFIG_PATH names); without them `preflight()` stops the run before it contacts Modal.
"""

from __future__ import annotations

import asyncio
import math
import os
import posixpath
import re
import socket
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, suppress
from functools import cached_property
from pathlib import Path
from typing import Any

from evalrun.config.schema import EvalConfig, ModalSandboxConf
from evalrun.errors import SandboxError, SandboxUnavailable, bad_value
from evalrun.extras import install_hint
from evalrun.sandbox.base import (
    DEFAULT_SPEC,
    HOME_DIR,
    PRIVATE_DIR,
    WORKDIR,
    Command,
    ExecResult,
    Network,
    SandboxSpec,
    needs_docker,
)
from evalrun.sandbox.common.clear import clear_argv, cleared
from evalrun.sandbox.common.container import (
    EXEC_DIR,
    ExecSession,
    command_env,
    end_agent_argv,
    uncancelled,
)
from evalrun.sandbox.common.output import BoundedBuffer, exec_result
from evalrun.sandbox.common.owner import current_owner, owner_alive
from evalrun.sandbox.common.transfer import CHUNK, streamed

CLEAR_TIMEOUT_S = 120
KILL_GRACE_S = 5.0
EXEC_TIMEOUT_MARGIN_S = 10  # Modal's exec timeout, a backstop behind ours
_PREPARE = f"mkdir -p {WORKDIR} {HOME_DIR} && mkdir -p -m 0700 {PRIVATE_DIR} {EXEC_DIR}"
_UNTAR = 'mkdir -p -- "$1" && tar -x -f - -C "$1"'
TAG = "evalrun"
OWNER_HOST_TAG = "evalrun.owner_host"
OWNER_PID_TAG = "evalrun.owner_pid"
OWNER_START_TAG = "evalrun.owner_start"
KEEP_TAG = "evalrun.keep"
UNKNOWN_START = "unknown"  # a tag value cannot be "?" (owner.py's "start time unknown")
ABANDON_TIMEOUT_S = 20.0


def _modal() -> Any:
    try:
        import modal
    except ImportError as exc:
        raise SandboxUnavailable(
            "sandbox=modal needs the modal SDK, which is not installed: " + install_hint("modal")
        ) from exc
    return modal


class ModalSandbox:
    """One sample's Modal sandbox. Paths are relative to `workdir` unless absolute."""

    workdir = WORKDIR
    private_dir = PRIVATE_DIR
    is_container = True  # absolute paths (/tests, /logs) are the sandbox's own
    switches_users = False  # every command runs as the sandbox's one user
    host_workspace = None  # the workspace is only reached through commands

    limit_poll_s: float | None = None
    kept_at: str | None = None

    def __init__(self, sandbox: Any, output_limit: int, env: Mapping[str, str] | None = None):
        self._sb = sandbox
        self._output_limit = output_limit
        self._env = dict(env or {})
        self.sandbox_id: str | None = getattr(sandbox, "object_id", None)
        self._agent_done = False

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(WORKDIR, path))

    async def _plain(self, argv: Sequence[str]) -> tuple[int, str, str]:
        """Run a short harness command; (exit code, stdout, stderr)."""
        modal = _modal()
        try:
            proc = await self._sb.exec.aio(*argv, text=False)
            stdout, stderr, code = await asyncio.gather(
                proc.stdout.read.aio(), proc.stderr.read.aio(), proc.wait.aio()
            )
        except modal.exception.Error as exc:
            raise SandboxError(f"modal exec failed: {exc}") from exc
        return code, stdout.decode(errors="replace"), stderr.decode(errors="replace")

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        user: str | None = None,  # not honoured: `switches_users` is false
    ) -> ExecResult:
        modal = _modal()
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = command_env(self._agent_done, {**self._env, **(env or {})})
        session = ExecSession.new()
        # every command runs as root here: the verifier's is shielded (the no-trace filter)
        wrapped = session.argv(
            argv, cwd=self._abs(cwd or "."), env=full_env, shield=self._agent_done
        )
        backstop = None if timeout_s is None else math.ceil(timeout_s) + EXEC_TIMEOUT_MARGIN_S
        started = time.monotonic()
        try:
            proc = await self._sb.exec.aio(*wrapped, text=False, timeout=backstop)
        except modal.exception.Error as exc:
            raise SandboxError(f"modal exec failed: {exc}") from exc
        out, err = BoundedBuffer(self._output_limit), BoundedBuffer(self._output_limit)
        work = asyncio.ensure_future(
            asyncio.gather(_drain(proc.stdout, out), _drain(proc.stderr, err), proc.wait.aio())
        )
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(work), timeout_s)
        except TimeoutError:
            timed_out = True
            await self._kill(session, work)
        except asyncio.CancelledError:
            await self._kill(session, work)
            raise
        except modal.exception.Error as exc:
            raise SandboxError(f"modal exec failed: {exc}") from exc
        return exec_result(proc.returncode, out, err, started, timed_out)

    async def _kill(self, session: ExecSession, work: asyncio.Future) -> None:
        with suppress(SandboxError):
            await self._plain(session.kill_argv())
        with suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(work), KILL_GRACE_S)
        work.cancel()
        with suppress(BaseException):
            await work

    async def write_file(self, path: str, data: bytes | str) -> None:
        modal = _modal()
        payload = data.encode() if isinstance(data, str) else data
        target = self._abs(path)
        try:
            await self._sb.filesystem.write_bytes.aio(payload, target)
        except modal.exception.SandboxFilesystemIsADirectoryError as exc:
            raise IsADirectoryError(f"is a directory in the sandbox: {target}") from exc
        except modal.exception.Error as exc:
            raise SandboxError(f"modal could not write {target}: {exc}") from exc

    async def read_file(self, path: str) -> bytes:
        modal = _modal()
        target = self._abs(path)
        try:
            return await self._sb.filesystem.read_bytes.aio(target)
        except modal.exception.SandboxFilesystemNotFoundError as exc:
            raise FileNotFoundError(f"no such file in the sandbox: {target}") from exc
        except modal.exception.SandboxFilesystemIsADirectoryError as exc:
            raise IsADirectoryError(f"is a directory in the sandbox: {target}") from exc
        except modal.exception.Error as exc:
            raise SandboxError(f"modal could not read {target}: {exc}") from exc

    async def put(self, host_dir: Path, path: str = ".") -> None:
        modal = _modal()
        with streamed(Path(host_dir), what="for the sandbox") as pipe:
            try:
                proc = await self._sb.exec.aio(
                    "bash", "-c", _UNTAR, "untar", self._abs(path), text=False
                )
                with suppress(OSError, modal.exception.Error):  # tar exited: its status says why
                    while chunk := await asyncio.to_thread(os.read, pipe.read_fd, CHUNK):
                        proc.stdin.write(chunk)
                        await proc.stdin.drain.aio()
                    proc.stdin.write_eof()
                    await proc.stdin.drain.aio()
                _, stderr, code = await asyncio.gather(
                    proc.stdout.read.aio(), proc.stderr.read.aio(), proc.wait.aio()
                )
            except modal.exception.Error as exc:
                raise SandboxError(f"modal exec failed: {exc}") from exc
        if code != 0:
            detail = stderr.decode(errors="replace").strip()
            raise OSError(f"unpacking {host_dir} in the sandbox failed: {detail}")

    async def get(self, path: str, host_dir: Path, exclude: Sequence[str] = ()) -> bool:
        raise SandboxError("sandbox=modal does not copy files out of its sandboxes")

    async def end_agent(self) -> None:
        code, _, stderr = await self._plain(end_agent_argv((0, 0)))
        if code != 0:
            raise SandboxError(f"could not end the agent's processes: {stderr.strip()}")
        self._agent_done = True

    async def begin_agent(self) -> None:
        self._agent_done = False

    async def clear(self, paths: Sequence[str]) -> list[str]:
        argv = ["timeout", str(CLEAR_TIMEOUT_S), *clear_argv([self._abs(p) for p in paths])]
        code, stdout, stderr = await self._plain(argv)
        return cleared(paths, code, stdout, stderr, WORKDIR)

    async def over_limit(self) -> str | None:
        return None


def _tag_value(text: str) -> str:
    """`text` as Modal accepts a tag value: [A-Za-z0-9._-], at most 63 characters."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", text)[:63] or "_"


def owner_tags(token: str, keep: bool = False) -> dict[str, str]:
    """The tags marking a sandbox made by the process whose owner token is `token`."""
    host, pid, start = token.rsplit(":", 2)
    tags = {
        TAG: "1",
        OWNER_HOST_TAG: _tag_value(host),
        OWNER_PID_TAG: pid,
        OWNER_START_TAG: UNKNOWN_START if start == "?" else _tag_value(start),
    }
    return {**tags, KEEP_TAG: "1"} if keep else tags


def is_orphan(tags: Mapping[str, str]) -> bool:
    """Whether a sandbox with these tags was made by an evalrun process of this host that is
    gone; never for a kept sandbox, another host's, or one without evalrun's tags."""
    if tags.get(TAG) != "1" or tags.get(KEEP_TAG):
        return False
    host, pid = socket.gethostname(), tags.get(OWNER_PID_TAG, "")
    if tags.get(OWNER_HOST_TAG) != _tag_value(host) or not pid.isdigit():
        return False
    start = tags.get(OWNER_START_TAG, "")
    return not owner_alive(f"{host}:{pid}:{'?' if start == UNKNOWN_START else start}")


def _blocking(work: Callable[[], Coroutine[Any, Any, Any]]) -> Any:
    """Run `work()` to the end on an event loop of its own, in a thread: the callers (preflight,
    abandon) are synchronous and may be called from inside a running loop."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, work()).result()


async def _drain(stream: Any, buffer: BoundedBuffer) -> None:
    async for chunk in stream:
        buffer.feed(chunk if isinstance(chunk, bytes) else chunk.encode())


_CONF = ModalSandboxConf()


class ModalBackend:
    """`sandbox=modal`: see the module docstring."""

    name = "modal"
    isolated = True
    task_limits: frozenset[str] = frozenset({"cpus", "memory_mb"})  # no disk limit
    copies_out = False  # no `Sandbox.get`

    def __init__(  # defaults: evalrun.config.schema.ModalSandboxConf, their one home
        self,
        image: str | None = _CONF.image,
        python_version: str = _CONF.python_version,
        apt_packages: Sequence[str] = tuple(_CONF.apt_packages),
        app_name: str = _CONF.app_name,
        block_network: bool = _CONF.block_network,
        timeout_s: int = _CONF.timeout_s,
        cpu: float | None = _CONF.cpu,
        memory_mb: int | None = _CONF.memory_mb,
        output_limit_bytes: int = _CONF.output_limit_bytes,
        keep_workspaces: bool = EvalConfig.keep_workspaces,
    ):
        if timeout_s < 1:
            raise bad_value("sandbox.timeout_s", "a positive number", timeout_s)
        self.image = image
        self.python_version = python_version
        self.apt_packages = tuple(apt_packages)
        self.app_name = app_name
        self.block_network = block_network
        self.timeout_s = timeout_s
        self.cpu = cpu
        self.memory_mb = memory_mb
        self.output_limit = output_limit_bytes
        self.keep_workspaces = keep_workspaces
        self._app: Any = None  # looked up on first use; a race only looks it up twice
        self._live: dict[int, Any] = {}  # id() -> sandbox still open, for `abandon`

    def add_read_only(self, paths: Sequence[Path], *, live: bool) -> None:
        raise SandboxUnavailable(
            "sandbox=modal cannot show host folders to its sandboxes yet, so agent presets "
            "(their install and evalrun's model gateway) run on sandbox=local, bwrap or docker"
        )

    def preflight(self) -> None:
        """The SDK is installed and credentials are configured; then terminate orphaned
        sandboxes (see the module docstring), which is the first time Modal is contacted."""
        _modal()
        has_env = os.environ.get("MODAL_TOKEN_ID") and os.environ.get("MODAL_TOKEN_SECRET")
        config = os.environ.get("MODAL_CONFIG_PATH") or os.path.expanduser("~/.modal.toml")
        if not has_env and not os.path.isfile(config):
            raise SandboxUnavailable(
                "sandbox=modal needs Modal credentials: set MODAL_TOKEN_ID and "
                f"MODAL_TOKEN_SECRET, or run `modal token new` to write {config}"
            )
        self.remove_orphans()

    def remove_orphans(self) -> int:
        """Terminate the sandboxes of app `app_name` made on this host by evalrun processes that
        no longer exist; how many. `SandboxUnavailable` when Modal cannot be asked."""
        modal = _modal()
        try:
            return int(_blocking(self._sweep))
        except (modal.exception.Error, OSError) as exc:
            raise SandboxUnavailable(
                f"sandbox=modal could not list the sandboxes of app {self.app_name!r} "
                f"(to remove those of killed runs): {exc}"
            ) from exc

    async def _sweep(self) -> int:
        modal = _modal()
        app = await self._lookup_app()  # the run makes it anyway, with its first sandbox
        removed = 0
        async for sandbox in modal.Sandbox.list.aio(app_id=app.app_id, tags={TAG: "1"}):
            if is_orphan(await sandbox.get_tags.aio()):
                with suppress(modal.exception.Error):
                    await sandbox.terminate.aio()
                    removed += 1
        return removed

    @cached_property
    def _image_spec(self) -> Any:
        modal = _modal()
        if self.image:
            return modal.Image.from_registry(self.image)
        base = modal.Image.debian_slim(python_version=self.python_version)
        return base.apt_install(*self.apt_packages) if self.apt_packages else base

    async def _lookup_app(self) -> Any:
        if self._app is None:
            modal = _modal()
            self._app = await modal.App.lookup.aio(self.app_name, create_if_missing=True)
        return self._app

    def cannot_host(self, spec: SandboxSpec) -> str | None:
        if reason := needs_docker(spec, self.name, "task images here"):
            return reason
        if spec.workdir is not None:
            return f"needs its workspace at {spec.workdir}; sandbox=modal keeps it at {WORKDIR}"
        if any(n.reaches_out for n in spec.networks) and self.block_network:
            return "needs the network; sandbox.block_network=true gives it none"
        if len(set(spec.networks)) > 1:
            return "needs a different network per phase; a Modal sandbox keeps one for its life"
        return None

    async def _create(self, spec: SandboxSpec) -> Any:
        modal = _modal()
        try:
            return await modal.Sandbox.create.aio(
                "sleep",
                "infinity",
                app=await self._lookup_app(),
                image=self._image_spec,
                timeout=self.timeout_s,
                block_network=self.block_network or spec.network is Network.none,
                workdir=WORKDIR,
                cpu=spec.cpus or self.cpu,
                memory=spec.memory_mb or self.memory_mb,
                tags=owner_tags(current_owner(), self.keep_workspaces),
            )
        except modal.exception.Error as exc:
            raise SandboxError(f"modal could not create a sandbox: {exc}") from exc

    def abandon(self) -> None:
        """Terminate every sandbox this process still has open, in parallel, waiting at most
        ABANDON_TIMEOUT_S. What is left then (or was still being created) carries this
        process's owner tags, so the next preflight terminates it once this process is gone."""
        open_now = list(self._live.values())
        if self.keep_workspaces or not open_now:
            return

        async def terminate_all() -> None:
            ending = [self._terminate(sandbox) for sandbox in open_now]
            with suppress(TimeoutError):
                await asyncio.wait_for(asyncio.gather(*ending), ABANDON_TIMEOUT_S)

        with suppress(Exception):
            _blocking(terminate_all)

    async def _terminate(self, sandbox: Any) -> None:
        if not self.keep_workspaces:
            with suppress(Exception):
                await sandbox.terminate.aio()
        self._live.pop(id(sandbox), None)

    @asynccontextmanager
    async def open(
        self, label: str, spec: SandboxSpec = DEFAULT_SPEC
    ) -> AsyncIterator[ModalSandbox]:
        problem = self.cannot_host(spec)
        if problem:
            raise SandboxError(problem)
        creating = asyncio.ensure_future(self._create(spec))
        try:
            sandbox = await asyncio.shield(creating)
        except asyncio.CancelledError:
            with suppress(Exception):
                await self._terminate(await creating)
            raise
        self._live[id(sandbox)] = sandbox
        try:
            box = ModalSandbox(sandbox, self.output_limit, dict(spec.env))
            box.kept_at = f"modal sandbox {box.sandbox_id}" if self.keep_workspaces else None
            code, _, stderr = await box._plain(["bash", "-c", _PREPARE])
            if code != 0:
                raise SandboxError(f"preparing the modal sandbox failed: {stderr.strip()}")
            yield box
        finally:
            await uncancelled(self._terminate(sandbox))
