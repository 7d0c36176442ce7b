"""The `docker` backend: one container per sample, files moved only through the engine's API.

Each sample gets a fresh container from `image` (default `evalrun-base:bookworm`, built offline by
`scripts/build-base-image.sh`) with `network_mode=none`, memory / CPU / pids limits, all but a few
capabilities dropped, `no-new-privileges` and a read-only /proc (no process can write another's
memory through /proc/<pid>/mem). Docker's init (tini) is PID 1 and reaps orphans;
`sleep infinity` keeps the container alive. Nothing of the host is mounted: the workspace, the
hidden verify/ files and the agent's answer go in with `put_archive` (a tar streamed from a
pipe) and come out with `get_archive` (streamed, bounded; `get` unpacks through tarfile's `data`
filter), so a container never sees the tasks folder, the run directory or the host's home.

```
/workspace     the sample's workspace (`workdir`), the agent's user's
/evalrun       the harness's private folder (`private_dir`): root's, not writable by the agent
  exec/        exec pid files and staged writes: root's alone
  verifier-*   the verifier's fresh HOME and TMPDIR, made when the agent phase ends
/home/agent    HOME, empty;  /tmp  TMPDIR
/logs/agent    the agent's user's (Harbor agents write their logs here)
/logs/artifacts the agent's user's (what a separate verifier gets, with the task's artifacts)
/logs/verifier root's during the agent phase; made fresh for the verifier when it ends
```

Commands run through `evalrun.sandbox.common.container.ExecSession` (an allow-listed environment, a
session of their own, the whole tree killed on timeout): `docker exec` starts its wrapper as root,
which runs the command as `user` and reports its status - out of reach of the command, and of a
verifier's command in particular, which also runs under the no-trace seccomp filter. If the killer
itself cannot run - a fork bomb has taken every pid - or the output stream stays open after the
kill, the container is restarted: every process in it dies, its files stay. `write_file` during the
agent phase writes as `user` too (staged, then copied by the agent's user), so a path the agent
chooses can never reach what only root may write; the harness's own writes afterwards are root's. A
FIFO, socket or device the agent leaves where the harness reads a file is refused unread (an
`OSError`: the workspace's state, graded against the agent). `end_agent` kills every process
outside PID 1's session as root and checks (a restart if any survives). `disk_mb` is RLIMIT_FSIZE
for every process plus a watchdog (`du` as root).

What a task may ask (`SandboxSpec`): its own image (built offline from a Dockerfile, or a prebuilt
one that must be local or pullable), its workspace at another absolute path (also the image's
`WORKDIR` when the task names none; made the sandbox user's), no network (always honoured: the
container gets `network_mode=none` whatever `network` says), the network (only when `network`
names one), its own `cpus`, `memory_mb` and `storage_mb` (replacing the configured `cpus`,
`memory` and `disk_mb`), variables every command sees, and the user commands run as (a name or
uid in the image; the verifier may run as another, `exec(..., user=...)`). An agent's install
(`add_read_only`) is a derived layer under every one of these images alike (`sample_image`).
A task that brings a compose file (`compose_file`) runs as a compose project of its own
(`evalrun.sandbox.docker.compose`): its `main` container, hardened as above but for the read-only
/proc, is the sample's `DockerSandbox`; the sidecars share the project's network (internal when
the task must have no network).

Every container carries the label `evalrun=1` and its owner (`<host>:<pid>` plus the process's
start time) and is removed when its sample ends, also on cancellation and Ctrl-C; a second Ctrl-C
removes the open ones before exiting (`abandon`). Containers - and a compose project's networks
and volumes - left by a process that was killed outright (SIGKILL) are removed by the next
`preflight()` on the same host; `scripts/docker-cleanup.sh` removes them all. Blocking SDK
calls run in threads; an exec's output stream gets a thread of its own so that many long
commands cannot starve the default pool the killer needs.
"""

from __future__ import annotations

import asyncio
import errno
import os
import posixpath
import re
import socket
import tempfile
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass
from functools import cached_property, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from evalrun.config.schema import DockerSandboxConf, EvalConfig
from evalrun.errors import SandboxError, SandboxUnavailable, bad_value
from evalrun.extras import install_hint
from evalrun.sandbox.base import (
    DEFAULT_SPEC,
    HOME_DIR,
    IMAGE_USER,
    PRIVATE_DIR,
    WORKDIR,
    Command,
    ExecResult,
    Network,
    SandboxSpec,
    TaskImage,
    bad_workdir,
)
from evalrun.sandbox.common.clear import clear_argv, cleared
from evalrun.sandbox.common.container import (
    AS_USER,
    EXEC_DIR,
    VERIFIER_LOGS,
    ExecSession,
    as_user_args,
    command_env,
    end_agent_argv,
    uncancelled,
)
from evalrun.sandbox.common.limits import DU_SCRIPT, DiskLimit, check_positive
from evalrun.sandbox.common.output import BoundedBuffer, exec_result
from evalrun.sandbox.common.owner import owner_alive, start_time
from evalrun.sandbox.common.transfer import first_file, streamed, tar_bytes, unpack
from evalrun.sandbox.docker.egress import EgressGate, proxy_env
from evalrun.sandbox.docker.images import TaskImages, local_id

if TYPE_CHECKING:
    from evalrun.sandbox.docker.compose import ComposeProject

_CONF = DockerSandboxConf()
DEFAULT_IMAGE = _CONF.image
PASSWD_BYTES = 1 << 20  # an image's /etc/passwd is read up to this size
LABEL = "evalrun"
OWNER_LABEL = "evalrun.owner"  # "<hostname>:<pid>" of the evalrun process that made it
OWNER_START_LABEL = "evalrun.owner_start"  # that process's start time (a reused pid is not it)
KEEP_LABEL = "evalrun.keep"
EGRESS = "evalrun:egress"  # `network_of` an allow-list: the sample's own gate network
CAPABILITIES = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "SETGID", "SETUID"]
KILL_GRACE_S = 3.0  # after the killer ran, how long the output stream may take to close
ROOT_TIMEOUT_S = 120  # a harness command as root (clear, du) is ended after this long
DISK_POLL_S = 2.0  # the disk watchdog's `du` is an exec: ask less often than on bwrap
MAX_READ_BYTES = 64 * 1024 * 1024
MAX_GET_BYTES = 512 * 1024 * 1024  # what `get` copies out at once (a separate verifier's artifacts)
# Go's os.FileMode bits, as the engine reports a path's mode: a folder; a FIFO, socket, device,
# character device or irregular file.
GO_MODE_DIR = 1 << 31
GO_MODE_SPECIAL = (1 << 25) | (1 << 24) | (1 << 26) | (1 << 21) | (1 << 19)
ABANDON_TIMEOUT_S = 20.0
# As root: copy a staged file ($1, root's) to its target ($2) through a process of the agent's
# user (as_user's arguments follow), so that a path the agent chose can only reach what its user
# may write. Exit 4/5: a directory / refused.
_COPY_STAGED = (
    AS_USER
    + r"""
staged=$1 target=$2
shift 2
trap 'rm -f -- "$staged"' EXIT
as_user "$@" bash -c '[ -d "$1" ] && exit 4; [ -p "$1" ] && exit 5
  mkdir -p -- "$(dirname -- "$1")" && cat > "$1" || exit 5' evalrun-write "$target" <"$staged"
"""
)
# A task image's first command, as root: hand the workspace ($2) to the sandbox user ($1), and
# check the image can run commands as that user (`evalrun.sandbox.common.container.AS_USER`).
_ADOPT = (
    'chown -R -- "$1" "$2" || exit 1; '
    "command -v setpriv >/dev/null || command -v python3 >/dev/null || exit 3"
)
BUILD_HINT = "build it offline with scripts/build-base-image.sh (or `evalrun image build`)"
ENGINE_HINT = (
    "start an engine with scripts/docker-engine.sh (runs `dockerd --bridge=none` in the "
    "background) or point DOCKER_HOST at a running one"
)
_MEMORY = re.compile(r"^\d+[bkmg]?$", re.IGNORECASE)
_USER = re.compile(r"^\d+(:\d+)?$")


def _engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or "unix:///var/run/docker.sock"


class DockerSandbox:
    """One sample's container. Paths are relative to `workdir` unless absolute."""

    private_dir = PRIVATE_DIR
    is_container = True  # absolute paths (/tests, /logs) are the container's own
    switches_users = True  # exec(..., user=...) runs a command as another user
    host_workspace = None  # the workspace is only reached through commands

    def __init__(self, backend: DockerBackend, container: Any, started: Started):
        self._backend = backend
        self._container = container
        self._api = backend.client.api
        self.container_id: str = container.id
        self.workdir = started.workdir
        kept = f"docker container {container.short_id} ({started.workdir})"
        self.kept_at = kept if backend.keep_workspaces else None
        self.owner_ids = started.owner_ids
        self._env = dict(started.env)
        self._agent_done = False
        self._started = started
        self._network = started.networks[0]  # the one it is attached to now
        self._gate = started.gate
        self._users: dict[str, tuple[int, int]] = {}  # exec(user=...) names -> (uid, gid)
        self.limit_poll_s = DISK_POLL_S if started.disk is not None else None

    def _abs(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.workdir, path))

    async def _call(self, what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """A blocking SDK call in a thread; engine errors become `SandboxError`."""
        return await asyncio.to_thread(_engine_call, what, fn, *args, **kwargs)

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        user: str | None = None,
    ) -> ExecResult:
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        full_env = command_env(self._agent_done, {**self._env, **self._proxy_env(), **(env or {})})
        session = ExecSession.new()
        ids = self.owner_ids if user is None else await self._ids_of(user)
        wrapped = session.argv(
            argv, cwd=self._abs(cwd or "."), env=full_env, user=ids, shield=self._agent_done
        )
        started = time.monotonic()
        created = await self._call(
            "exec", self._api.exec_create, self._container.id, wrapped, stdin=False, user="0"
        )
        exec_id = created["Id"]
        sock = await self._call("exec", self._api.exec_start, exec_id, socket=True)
        out = BoundedBuffer(self._backend.output_limit)
        err = BoundedBuffer(self._backend.output_limit)
        drained = _pump_in_thread(sock, out, err)
        timed_out = False
        try:
            await asyncio.wait_for(asyncio.shield(drained), timeout_s)
        except TimeoutError:
            timed_out = True
            await self._kill(session, drained, sock)
        except asyncio.CancelledError:
            await self._kill(session, drained, sock)
            raise
        exit_code = None
        if not timed_out:
            inspected = await self._call("exec inspect", self._api.exec_inspect, exec_id)
            exit_code = inspected.get("ExitCode")
        if user == IMAGE_USER and not self._agent_done:  # what it made is the agent's to change
            owned = f"{self.owner_ids[0]}:{self.owner_ids[1]}"
            await self._run(["bash", "-c", _ADOPT, "adopt", owned, self.workdir], "0")
        return exec_result(exit_code, out, err, started, timed_out)

    async def _kill(self, session: ExecSession, drained: asyncio.Future, sock: Any) -> None:
        """Kill the session's tree; restart the container if that does not end the command."""
        with suppress(SandboxError):
            await self._call(
                "exec", self._container.exec_run, session.kill_argv(), user="0", stdout=False
            )
        with suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(drained), KILL_GRACE_S)
            return
        with suppress(SandboxError):
            await self._call("restart", self._container.restart, timeout=0)
        with suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(drained), KILL_GRACE_S)
            return
        _close_socket(sock)

    async def _ids_of(self, user: str) -> tuple[int, int]:
        """(uid, gid) of a user named as `exec(user=...)` takes it, looked up once."""
        if user == IMAGE_USER:
            user = self._started.image_user
        if user not in self._users:
            self._users[user] = await self._call(
                "user lookup", _resolve_user, self._container, user
            )
        return self._users[user]

    async def _run(self, argv: Sequence[str], user: str) -> tuple[int, str, str]:
        """A short harness command (no session, no timeout of ours): (exit code, stdout, stderr)."""
        result = await self._call(
            "exec", self._container.exec_run, list(argv), user=user, workdir="/", demux=True
        )
        out, err = result.output or (None, None)
        text = (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace")
        return result.exit_code, *text

    async def write_file(self, path: str, data: bytes | str) -> None:
        target = self._abs(path)
        payload = data.encode() if isinstance(data, str) else data
        if self._agent_done:  # the harness's own file (the answer): root's, as it should stay
            owner = (0, 0) if target.startswith(PRIVATE_DIR + "/") else self.owner_ids
            archive = tar_bytes([(target.lstrip("/"), payload, 0o644, owner)])
            await self._call("put_archive", self._container.put_archive, "/", archive)
            return
        # The agent's write, made by the agent's user from a copy staged where only root looks.
        staged = f"{EXEC_DIR}/stage-{uuid.uuid4().hex}"
        archive = tar_bytes([(staged.lstrip("/"), payload, 0o600, (0, 0))])
        await self._call("put_archive", self._container.put_archive, "/", archive)
        copy = ["bash", "-c", _COPY_STAGED, "evalrun-write", staged, target]
        argv = ["timeout", str(ROOT_TIMEOUT_S), *copy, *as_user_args(self.owner_ids, False)]
        code, _, stderr = await self._run(argv, "0")
        if code == 4:
            raise IsADirectoryError(f"is a directory in the sandbox: {target}")
        if code != 0:
            raise PermissionError(f"{target}: {stderr.strip() or f'exit {code}'}")

    async def read_file(self, path: str) -> bytes:
        from docker.errors import NotFound

        target = self._abs(path)
        for _ in range(8):  # follow at most 8 symlinks, resolved by the engine inside the container
            try:
                chunks, stat = await self._call("get_archive", self._container.get_archive, target)
            except SandboxError as exc:
                if isinstance(exc.__cause__, NotFound):
                    raise FileNotFoundError(f"no such file in the sandbox: {target}") from exc
                raise
            if stat.get("linkTarget"):
                target = stat["linkTarget"]
                continue
            mode = stat.get("mode", 0)
            if mode & GO_MODE_DIR:
                raise IsADirectoryError(f"is a directory in the sandbox: {target}")
            if mode & GO_MODE_SPECIAL:  # a FIFO, socket or device the agent left: not read
                raise OSError(errno.EINVAL, "not a regular file in the sandbox", target)
            data = await self._call("get_archive", first_file, chunks, MAX_READ_BYTES)
            if data is None:
                raise OSError(errno.EINVAL, "not a regular file in the sandbox", target)
            if len(data) > MAX_READ_BYTES:
                raise OSError(errno.EFBIG, f"larger than {MAX_READ_BYTES} bytes, not read", path)
            return data
        raise SandboxError(f"too many symlinks reading {path}")

    async def put(self, host_dir: Path, path: str = ".") -> None:
        prefix = self._abs(path).lstrip("/")
        with streamed(Path(host_dir), prefix, self.owner_ids) as pipe:
            await self._call("put_archive", self._container.put_archive, "/", pipe.chunks())

    async def get(self, path: str, host_dir: Path, exclude: Sequence[str] = ()) -> bool:
        import tarfile

        from docker.errors import NotFound

        target = self._abs(path)
        try:
            chunks, _ = await self._call("get_archive", self._container.get_archive, target)
        except SandboxError as exc:
            if isinstance(exc.__cause__, NotFound):
                return False
            raise
        try:
            await self._call("get_archive", unpack, chunks, host_dir, MAX_GET_BYTES, exclude)
        except tarfile.TarError as exc:
            raise SandboxError(f"docker get_archive of {target} failed: {exc}") from exc
        return True

    async def end_agent(self) -> None:
        argv = end_agent_argv(self.owner_ids)
        code, _, stderr = await self._run(argv, "0")
        if code != 0:  # a process outran the killer: a restart ends them all, files stay
            await self._call("restart", self._container.restart, timeout=0)
            code, _, stderr = await self._run(argv, "0")
        if code != 0:
            raise SandboxError(f"could not end the agent's processes: {stderr.strip()}")
        await self._switch_network(1)
        self._agent_done = True

    async def begin_agent(self) -> None:
        await self._switch_network(0)
        self._agent_done = False

    def _proxy_env(self) -> dict[str, str]:
        """The gate's proxy variables, in a phase behind the egress gate."""
        gated = self._gate is not None and self._network == self._gate.network
        return proxy_env() if gated else {}

    async def _switch_network(self, phase: int) -> None:
        """Attach the container to the network of `phase` (0: the agent's, 1: the verifier's)
        alone ("none": to no network), between phases; behind the gate, allow that phase's
        hosts."""
        network = self._started.networks[phase]
        if self._gate is not None and network == self._gate.network:
            await self._call("egress gate", self._gate.allow, self._started.hosts[phase])
        if network == self._network:
            return
        if self._network != "none":
            await self._call(
                "network",
                self._api.disconnect_container_from_network,
                self.container_id,
                self._network,
            )
        if network != "none":
            await self._call(
                "network", self._api.connect_container_to_network, self.container_id, network
            )
        self._network = network

    async def clear(self, paths: Sequence[str]) -> list[str]:
        absolute = [self._abs(p) for p in paths]
        argv = ["timeout", str(ROOT_TIMEOUT_S), *clear_argv(absolute)]
        code, stdout, stderr = await self._run(argv, "0")
        return cleared(paths, code, stdout, stderr, self.workdir)

    async def over_limit(self) -> str | None:
        if self._started.disk is None:
            return None
        folders = [self.workdir, HOME_DIR, "/tmp", "/var/tmp", PRIVATE_DIR]
        argv = ["timeout", "60", "bash", "-c", DU_SCRIPT, "evalrun-du", *folders]
        try:
            code, stdout, _ = await self._run(argv, "0")
        except SandboxError:  # not running right now (a timed-out command's restart): ask again
            return None
        if code != 0 or not stdout.strip().isdigit():
            return None
        return self._started.disk.reason(int(stdout.strip()) * 1024)


def _engine_call(what: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """A blocking SDK call; engine and transport errors become `SandboxError` (the harness's
    failure, never the agent's - requests' errors are OSErrors, which grading would blame on the
    workspace)."""
    import requests
    from docker.errors import DockerException

    try:
        return fn(*args, **kwargs)
    except (DockerException, requests.RequestException) as exc:
        raise SandboxError(f"docker {what} failed: {exc}") from exc


def _pump_in_thread(sock: Any, out: BoundedBuffer, err: BoundedBuffer) -> asyncio.Future:
    """Read an exec's multiplexed stream in a thread of its own; the future ends with the stream."""
    from docker.utils.socket import STDERR, frames_iter

    loop = asyncio.get_running_loop()
    done: asyncio.Future = loop.create_future()

    def finish() -> None:
        if not done.done():
            done.set_result(None)

    def pump() -> None:
        try:
            for stream, data in frames_iter(sock, tty=False):
                (err if stream == STDERR else out).feed(data)
        except (OSError, ValueError):
            pass  # the socket was closed under us: the output ends here
        finally:
            _close_socket(sock)
            with suppress(RuntimeError):  # the loop is gone: nobody is waiting
                loop.call_soon_threadsafe(finish)

    threading.Thread(target=pump, name="evalrun-docker-exec", daemon=True).start()
    return done


def _in_threads(calls: Sequence[Callable[[], None]], deadline: float) -> None:
    """Run the calls at once, each in a daemon thread of its own; wait for them until `deadline`."""
    threads = [threading.Thread(target=call, daemon=True) for call in calls]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))


def _close_socket(sock: Any) -> None:
    raw = getattr(sock, "_sock", sock)
    with suppress(OSError):
        raw.shutdown(socket.SHUT_RDWR)
    with suppress(OSError):
        sock.close()


class DockerBackend:
    """`sandbox=docker`: see the module docstring."""

    name = "docker"
    isolated = True
    task_limits: frozenset[str] = frozenset({"cpus", "memory_mb", "storage_mb", "allowed_hosts"})
    copies_out = True  # `Sandbox.get`: get_archive, streamed and bounded

    def __init__(  # defaults: evalrun.config.schema.DockerSandboxConf, their one home
        self,
        image: str = _CONF.image,
        network: str = _CONF.network,
        public_network: str = _CONF.public_network,
        offline: bool = _CONF.offline,
        build_network: str | None = _CONF.build_network,
        image_aliases: Mapping[str, str] | None = None,
        force_build: bool = _CONF.force_build,
        memory: str | None = _CONF.memory,
        cpus: float | None = _CONF.cpus,
        pids_limit: int | None = _CONF.pids_limit,
        user: str = _CONF.user,
        output_limit_bytes: int = _CONF.output_limit_bytes,
        keep_workspaces: bool = EvalConfig.keep_workspaces,
        disk_mb: int | None = _CONF.disk_mb,
    ):
        check_positive(disk_mb=disk_mb)
        if memory is not None and not _MEMORY.match(str(memory)):
            raise bad_value("sandbox.memory", "a size like 512m or 2g (or null)", memory)
        if not _USER.match(str(user)):
            raise bad_value("sandbox.user", "a numeric uid or uid:gid like 1000:1000", user)
        for knob, value in (("cpus", cpus), ("pids_limit", pids_limit)):
            if value is not None and value <= 0:
                raise bad_value(f"sandbox.{knob}", "a positive number or null", value)
        self.image = image
        self.network = network
        self.public_network = public_network
        self.offline = offline
        self.build_network = build_network
        self.image_aliases = dict(image_aliases or {})
        self.force_build = force_build
        self.memory = memory
        self.cpus = cpus
        self.pids_limit = pids_limit
        self.user = str(user)
        uid, _, gid = self.user.partition(":")
        self.owner_ids = (int(uid), int(gid or uid))
        self.output_limit = output_limit_bytes
        self.keep_workspaces = keep_workspaces
        self.disk_mb = disk_mb
        self.owner_label = f"{socket.gethostname()}:{os.getpid()}"
        self.owner_start = start_time(os.getpid()) or ""
        self._live: dict[str, Any] = {}  # container id -> container, for `abandon`
        self._gates: dict[str, EgressGate] = {}  # container id -> its egress gate
        self._projects: dict[str, ComposeProject] = {}  # compose projects open, for `abandon`
        self._compose_builds = threading.Lock()  # one project builds its sidecars at a time
        self.live_mounts: list[str] = []  # host folders bound read-only (the gateway's sockets)
        self.layer_folders: list[Path] = []  # host folders copied into every sample's image
        self._layered: dict[str, str] = {}  # image -> it with `layer_folders`, for this process
        self._layering = threading.Lock()  # one layer build at a time (samples start together)

    def add_read_only(self, paths: Sequence[Path], *, live: bool) -> None:
        """Live folders are bound read-only; others go into a derived image layer
        (`evalrun.sandbox.docker.layers`) on top of whatever image a later sample starts from: the
        configured `image`, a task's image built FROM that layered image, or a task's prebuilt
        image. The layer on `image` is built now, so a failure stops the run before it starts."""
        if live:
            self.live_mounts += [str(p) for p in paths if str(p) not in self.live_mounts]
            return
        self.layer_folders += [p for p in paths if p not in self.layer_folders]
        self._layered.clear()
        self.with_layer(self.image)

    def with_layer(self, image: str) -> str:
        """`image` with `layer_folders` in it, built once (a no-op without folders). Blocking;
        raises `SandboxUnavailable` when the image is missing or the build fails."""
        if not self.layer_folders:
            return image
        with self._layering:
            if image not in self._layered:
                from evalrun.sandbox.docker.layers import ensure_layer

                self._layered[image] = ensure_layer(self.client, image, self.layer_folders)
            return self._layered[image]

    @cached_property
    def client(self) -> Any:
        """The SDK client, from DOCKER_HOST or the default socket (raises `SandboxUnavailable`)."""
        try:
            import docker
        except ImportError as exc:
            raise SandboxUnavailable(
                "sandbox=docker needs the docker SDK, which is not installed: "
                + install_hint("docker")
            ) from exc
        try:
            return docker.from_env(max_pool_size=64)
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(
                f"sandbox=docker cannot reach the Docker engine at {_engine_address()}: {exc}. "
                f"{ENGINE_HINT}"
            ) from exc

    def preflight(self) -> None:
        """Engine reachable, image present, network known; then remove orphaned containers."""
        client = self.client  # first: says which extra to install when the SDK is missing
        import docker

        try:
            client.ping()
        except docker.errors.DockerException as exc:
            raise SandboxUnavailable(
                f"sandbox=docker cannot reach the Docker engine at {_engine_address()}: {exc}. "
                f"{ENGINE_HINT}"
            ) from exc
        try:
            client.images.get(self.image)
        except docker.errors.ImageNotFound as exc:
            hint = BUILD_HINT
            if self.image != DEFAULT_IMAGE:
                hint = f"load it, or {BUILD_HINT} and set sandbox.image={DEFAULT_IMAGE}"
            raise SandboxUnavailable(
                f"sandbox.image: {self.image!r} is not in the Docker engine at "
                f"{_engine_address()}; {hint}"
            ) from exc
        if self.network != "none":
            try:
                client.networks.get(self.network)
            except docker.errors.NotFound as exc:
                raise SandboxUnavailable(
                    f"sandbox.network: the engine has no network {self.network!r} "
                    "(use none, or a network listed by `docker network ls`)"
                ) from exc
        self.remove_orphans()

    def remove_orphans(self) -> int:
        """Remove containers made on this host by evalrun processes that no longer exist, then
        such networks and volumes (compose projects', egress gates'); the number of containers
        removed."""
        host = socket.gethostname()
        removed = 0
        # sparse: no per-container inspect, which races with other runs removing containers
        listed = self.client.containers.list(all=True, filters={"label": LABEL}, sparse=True)
        for container in listed:
            if _orphaned(container.attrs.get("Labels") or {}, host):
                with suppress(Exception):
                    container.remove(force=True)
                    removed += 1
        for kind in (self.client.networks, self.client.volumes):
            for item in kind.list(filters={"label": LABEL}):
                if _orphaned(item.attrs.get("Labels") or {}, host):
                    with suppress(Exception):
                        item.remove()
        return removed

    def network_of(self, network: Network) -> str:
        """The docker network a phase that says `network` gets (`EGRESS`: the sample's own
        gate network, made when it starts)."""
        if self.offline or network is Network.none:
            return "none"
        if network is Network.allowlist:
            return EGRESS
        return self.public_network if network is Network.public else self.network

    def cannot_host(self, spec: SandboxSpec) -> str | None:
        if spec.workdir is not None and bad_workdir(spec.workdir):
            return f"its workspace path cannot be used: {bad_workdir(spec.workdir)}"
        if spec.gpus and not self._gpu_runtime:
            return (
                f"needs {spec.gpus} GPU(s); the Docker engine has no GPU runtime (install the "
                "NVIDIA Container Toolkit and restart the engine)"
            )
        reaches_out = any(n.reaches_out for n in spec.networks)
        if reaches_out and self.public_network == "none" and not self.offline:
            return (
                "needs the network; sandbox.public_network=none gives it none (name a Docker "
                "network, or sandbox.offline=true runs every task without one)"
            )
        if spec.compose_file is not None:  # its own network: none of the engine's is needed
            problem = self._compose_problem(spec.compose_file, spec)
            if problem is not None or spec.image is None:
                return problem
            return self.task_images.unavailable(spec.image)
        names = {self.network_of(n) for n in spec.networks}
        if EGRESS in names:  # the gate's way out
            names = (names - {EGRESS}) | {self.public_network}
        missing = [n for n in names if n != "none" and not self._has_network(n)]
        if missing:
            knob = "public_network" if missing[0] == self.public_network else "network"
            return (
                f"needs the network, and the Docker engine has no network {missing[0]!r} "
                f"(sandbox.{knob}; `docker network ls` lists them, or sandbox.offline=true "
                "runs every task without one)"
            )
        if len(names) > 1 and not all(self._switchable(n) for n in names):
            return (
                f"needs the networks {' and '.join(sorted(names))} in different phases; only "
                "bridge networks can be switched between phases (not host)"
            )
        if spec.image is not None:
            return self.task_images.unavailable(spec.image)
        return None

    @cached_property
    def _gpu_runtime(self) -> bool:
        """Whether the engine can give containers GPUs: an `nvidia` runtime, or GPUs among the
        CDI devices it discovered (engines since API 1.50)."""
        info = self.client.info()
        devices = info.get("DiscoveredDevices") or []
        gpus = [d for d in devices if "gpu" in str(d.get("ID", "")).lower()]
        return "nvidia" in (info.get("Runtimes") or {}) or bool(gpus)

    def _compose_problem(self, compose_file: Path, spec: SandboxSpec) -> str | None:
        """Why this backend cannot run a task's compose project (None: it can)."""
        from evalrun.sandbox.docker.compose import compose_missing, offline_problem, read_compose

        missing = compose_missing()
        if missing is not None:
            return f"needs several containers (environment/{compose_file.name}), and {missing}"
        agent, verifier = (self.network_of(n) for n in spec.networks)
        if EGRESS in (agent, verifier):
            return (
                "allows only some hosts (allowed_hosts), and evalrun's egress gate does not yet "
                "stand before a compose project"
            )
        if agent != verifier:
            return (
                "needs a different network in the agent's and the verifier's phase, which "
                "evalrun cannot switch for a compose project"
            )
        try:
            document = read_compose(compose_file)
        except ValueError as exc:
            return str(exc)
        problem = offline_problem(document) if agent == "none" else None
        return f"must have no network, but {problem}" if problem else None

    def _has_network(self, name: str) -> bool:
        import docker

        try:
            self.client.networks.get(name)
            return True
        except docker.errors.NotFound:
            return False
        except docker.errors.DockerException:
            return True  # no engine to ask: the preflight says so

    def _switchable(self, name: str) -> bool:
        return name == "none" or self.client.networks.get(name).attrs.get("Driver") != "host"

    def _create(self, label: str, image: str, spec: SandboxSpec) -> tuple[Any, Started]:
        """Create, seed and start one container (blocking; runs in a thread). With a network
        per phase, it is created on the one that is not `none` and starts in the agent's."""
        agent, verifier = (self.network_of(n) for n in spec.networks)
        gate = None
        if EGRESS in (agent, verifier):
            gate = EgressGate.open(
                self.client, self.image, self.public_network, self._labels(label)
            )
            agent, verifier = (gate.network if n == EGRESS else n for n in (agent, verifier))
        try:
            return self._create_in(label, image, spec, (agent, verifier), gate)
        except Exception:
            if gate is not None:
                gate.close(self.client)
            raise

    def _labels(self, label: str) -> dict[str, str]:
        """The labels of everything made for one sample - containers, networks, volumes
        (`remove_orphans` finds them by these)."""
        return {
            LABEL: "1",
            OWNER_LABEL: self.owner_label,
            OWNER_START_LABEL: self.owner_start,
            "evalrun.sample": label[:200],
            **({KEEP_LABEL: "1"} if self.keep_workspaces else {}),
        }

    def _create_in(
        self,
        label: str,
        image: str,
        spec: SandboxSpec,
        phases: tuple[str, str],
        gate: EgressGate | None,
    ) -> tuple[Any, Started]:
        attached = next((n for n in phases if n != "none"), None)
        workdir = self._workdir_of(image, spec)
        memory = f"{spec.memory_mb}m" if spec.memory_mb else self.memory
        cpus = spec.cpus or self.cpus
        disk = DiskLimit.of(self.disk_mb, spec.storage_mb)
        from docker.types import DeviceRequest, Ulimit

        ulimits = []
        if disk is not None:  # RLIMIT_FSIZE, in bytes for Docker
            ulimits.append(Ulimit(name="fsize", soft=disk.mb << 20, hard=disk.mb << 20))
        api = self.client.api
        host_config = api.create_host_config(
            init=True,
            network_mode=attached or "none",
            mem_limit=memory,
            memswap_limit=memory,
            nano_cpus=int(cpus * 1e9) if cpus else None,
            pids_limit=self.pids_limit,
            cap_drop=["ALL"],
            cap_add=CAPABILITIES,
            security_opt=["no-new-privileges"],
            ulimits=ulimits,
            binds={path: {"bind": path, "mode": "ro"} for path in self.live_mounts},
            device_requests=(
                [DeviceRequest(count=spec.gpus, capabilities=[["gpu"]])] if spec.gpus else None
            ),
        )
        # /proc read-only (the SDK has no keyword for it): no process writes another's memory
        # through /proc/<pid>/mem; the engine's own read-only /proc paths are all under it.
        host_config["ReadonlyPaths"] = ["/proc"]
        created = api.create_container(
            image,
            ["sleep", "infinity"],
            host_config=host_config,
            working_dir=workdir,
            hostname="sandbox",
            volumes=list(self.live_mounts),
            labels=self._labels(label),
        )
        container = self.client.containers.prepare_model({"Id": created["Id"]})
        try:
            if attached is not None and phases[0] != attached:  # the agent's phase: none
                api.disconnect_container_from_network(container.id, attached)
            owner = self._owner_of(container, spec)
            _make_folders(container, workdir, owner)
            container.start()
            if spec.image is not None:
                _adopt_workspace(container, workdir, owner)
        except Exception:
            container.remove(force=True)
            raise
        image_user = self._image_user(image)
        if gate is not None:
            self._gates[container.id] = gate
            gate.allow(spec.hosts[0] if phases[0] == gate.network else spec.hosts[1])
        return container, Started(
            workdir, owner, spec.env, disk, phases, image_user, gate, spec.hosts
        )

    def _owner_of(self, container: Any, spec: SandboxSpec) -> tuple[int, int]:
        """Who commands run as and owns the files put in: (uid, gid)."""
        return self.owner_ids if spec.user is None else _resolve_user(container, spec.user)

    def _image_user(self, image: str) -> str:
        return (self.client.images.get(image).attrs.get("Config") or {}).get("User") or "0"

    def _workdir_of(self, image: str, spec: SandboxSpec) -> str:
        return spec.workdir or (self._image_workdir(image) if spec.image else None) or WORKDIR

    def _image_workdir(self, image: str) -> str | None:
        """The image's WORKDIR, when it names one other than /."""
        config = self.client.images.get(image).attrs.get("Config") or {}
        workdir = (config.get("WorkingDir") or "").rstrip("/")
        return workdir if workdir and not bad_workdir(workdir) else None

    def _dispose(self, container: Any) -> None:
        """Remove (or, keeping workspaces, stop) a container; forgotten only once it is done,
        so an `abandon` meanwhile still sees it."""
        gate = self._gates.pop(container.id, None)
        if self.keep_workspaces:
            with suppress(Exception):
                container.kill()
            if gate is not None:  # kept with the container, as its network
                with suppress(Exception):
                    gate.container.kill()
        else:
            with suppress(Exception):
                container.remove(force=True)
            if gate is not None:
                gate.close(self.client)
        self._live.pop(container.id, None)

    def abandon(self) -> None:
        """Remove every container this process made that still exists, in parallel, waiting at
        most ABANDON_TIMEOUT_S (what is left then goes with the next preflight: its owner will be
        gone)."""
        deadline = time.monotonic() + ABANDON_TIMEOUT_S
        mine = dict(self._live)
        with suppress(Exception):  # also those whose creation had not come back to us yet
            labelled = {"label": [f"{OWNER_LABEL}={self.owner_label}", f"{LABEL}=1"]}
            for listed in self.client.containers.list(all=True, filters=labelled, sparse=True):
                mine.setdefault(listed.id, listed)
        _in_threads([partial(self._remove_by, c, deadline) for c in mine.values()], deadline)
        for gate in list(self._gates.values()):  # their containers went with the owner's
            if time.monotonic() < deadline:
                gate.close(self.client)
        if self.keep_workspaces:
            return
        # the compose projects' networks and volumes, now that no container uses them
        _in_threads(
            [partial(self._remove_project, name) for name in list(self._projects)], deadline
        )

    def _remove_project(self, name: str) -> None:
        from evalrun.sandbox.docker.compose import remove_project

        with suppress(Exception):
            remove_project(self.client, name)

    def _remove_by(self, container: Any, deadline: float) -> None:
        """Remove `container` and see it gone, before `deadline`. A removal already under way
        (the first Ctrl-C's) is not enough: the process exiting mid-request can cancel it."""
        from docker.errors import APIError, NotFound

        if self.keep_workspaces:
            self._dispose(container)
            return
        while time.monotonic() < deadline:
            try:
                container.remove(force=True)
            except NotFound:
                return
            except APIError:  # e.g. 409: a removal is in progress; wait and look again
                time.sleep(0.1)
                continue
            except Exception:
                return
            return

    @asynccontextmanager
    async def open(
        self, label: str, spec: SandboxSpec = DEFAULT_SPEC
    ) -> AsyncIterator[DockerSandbox]:
        """A sandbox as `spec` asks: in the task's own image when it has one, else in
        `self.image`; either way with the agent's layer (`add_read_only`) in it."""
        image = await self.sample_image(spec)
        opener = self._open if spec.compose_file is None else self._open_compose
        async with opener(label, image, spec) as box:
            yield box

    async def sample_image(self, spec: SandboxSpec) -> str:
        """The image a sample of `spec` starts from (raises `SandboxError`): the task's own
        (`evalrun.sandbox.docker.images`), else `self.image`, with the agent's layer on top;
        built once per process, and across runs while nothing changed."""
        try:
            image = self.image if spec.image is None else await self.task_images.resolve(spec.image)
            return await asyncio.to_thread(self.with_layer, image)
        except SandboxUnavailable as exc:
            raise SandboxError(str(exc)) from exc

    @cached_property
    def task_images(self) -> TaskImages:
        return TaskImages(
            lambda: self.client, self.image_aliases, self.build_network, self.force_build
        )

    @asynccontextmanager
    async def _open(
        self, label: str, image: str, spec: SandboxSpec
    ) -> AsyncIterator[DockerSandbox]:
        import docker

        creating = asyncio.ensure_future(asyncio.to_thread(self._create, label, image, spec))
        try:
            container, started = await asyncio.shield(creating)
        except asyncio.CancelledError:
            # The thread goes on creating the container; wait for it and remove it.
            with suppress(Exception):
                await asyncio.to_thread(self._dispose, (await creating)[0])
            raise
        except docker.errors.DockerException as exc:
            raise SandboxError(f"docker could not start {image}: {exc}") from exc
        self._live[container.id] = container
        try:
            yield DockerSandbox(self, container, started)
        finally:
            await uncancelled(asyncio.to_thread(self._dispose, container))

    @asynccontextmanager
    async def _open_compose(
        self, label: str, image: str, spec: SandboxSpec
    ) -> AsyncIterator[DockerSandbox]:
        """A sample's compose project (`evalrun.sandbox.docker.compose`), its `main` service
        the sandbox; the whole project is removed at the end, also on cancellation."""
        import docker

        with tempfile.TemporaryDirectory(prefix="evalrun-compose-") as scratch:
            try:
                project = await asyncio.to_thread(
                    self._compose_project, Path(scratch), label, image, spec
                )
            except (ValueError, OSError) as exc:
                raise SandboxError(str(exc)) from exc
            self._projects[project.name] = project
            starting = asyncio.ensure_future(
                asyncio.to_thread(self._start_project, project, image, spec)
            )
            try:
                container, started = await asyncio.shield(starting)
            except asyncio.CancelledError:
                with suppress(Exception):
                    await starting
                await asyncio.to_thread(self._end_project, project)
                raise
            except docker.errors.DockerException as exc:
                await asyncio.to_thread(self._end_project, project)
                raise SandboxError(f"docker could not start {project.name}: {exc}") from exc
            try:
                yield DockerSandbox(self, container, started)
            finally:
                await uncancelled(asyncio.to_thread(self._end_project, project))

    def _compose_project(
        self, folder: Path, label: str, image: str, spec: SandboxSpec
    ) -> ComposeProject:
        """Write a sample's compose files (blocking): evalrun's base and overlay around the
        task's file, `main` hardened as `_create` hardens a single container."""
        from evalrun.sandbox.docker.compose import Hardening, write_project

        assert spec.compose_file is not None
        disk = DiskLimit.of(self.disk_mb, spec.storage_mb)
        hardening = Hardening(
            labels=self._labels(label),
            capabilities=CAPABILITIES,
            memory=f"{spec.memory_mb}m" if spec.memory_mb else self.memory,
            cpus=spec.cpus or self.cpus,
            pids_limit=self.pids_limit,
            fsize_bytes=disk.mb << 20 if disk is not None else None,
            read_only_mounts=self.live_mounts,
        )
        internal = self.network_of(spec.network) == "none"
        task_id = spec.image.task_id if spec.image is not None else "compose"
        workdir = self._workdir_of(image, spec)
        return write_project(
            folder,
            spec.compose_file,
            task_id,
            image,
            workdir,
            hardening,
            internal,
            self.build_network,
            lambda name: local_id(self.client, name),
        )

    def _start_project(
        self, project: ComposeProject, image: str, spec: SandboxSpec
    ) -> tuple[Any, Started]:
        """`up --wait` a project and seed its `main` container (blocking); on any failure the
        project is removed again. Sidecar images missing are built by one project at a time,
        before its `up`; other projects start meanwhile."""
        from evalrun.sandbox.docker.compose import main_container

        timeout = spec.image.build_timeout_s if spec.image else TaskImage.build_timeout_s
        try:
            if self._unbuilt(project):
                with self._compose_builds:
                    if self._unbuilt(project):
                        project.run(["build"], timeout)  # the sidecar images
            project.up(timeout)
            container = main_container(self.client, project.name)
            workdir = self._workdir_of(image, spec)
            owner = self._owner_of(container, spec)
            _make_folders(container, workdir, owner)
            if spec.image is not None:
                _adopt_workspace(container, workdir, owner)
        except BaseException:
            self._end_project(project)
            raise
        disk = DiskLimit.of(self.disk_mb, spec.storage_mb)
        networks = (project.network, project.network)
        image_user = self._image_user(image)
        env = tuple(sorted({**self._service_env(container, image), **dict(spec.env)}.items()))
        return container, Started(workdir, owner, env, disk, networks, image_user)

    def _service_env(self, container: Any, image: str) -> dict[str, str]:
        """The variables the compose file gives `main` (its `environment`, beyond the image's
        own), which `docker compose exec` would pass: every command sees them, as a task's
        `[environment.env]` (HOME, TMPDIR and PATH stay the sandbox's)."""
        own = set((self.client.images.get(image).attrs.get("Config") or {}).get("Env") or [])
        found = {}
        for entry in (container.attrs.get("Config") or {}).get("Env") or []:
            name, _, value = entry.partition("=")
            if entry not in own and name not in ("HOME", "TMPDIR", "PATH"):
                found[name] = value
        return found

    def _unbuilt(self, project: ComposeProject) -> bool:
        return any(local_id(self.client, tag) == "absent" for tag in project.builds)

    def _end_project(self, project: ComposeProject) -> None:
        """Remove (or, keeping workspaces, stop) a project; through the SDK when compose fails."""
        from evalrun.sandbox.docker.compose import remove_project

        try:
            if self.keep_workspaces:
                with suppress(SandboxError):
                    project.kill()
                return
            try:
                project.down()
            except SandboxError:
                with suppress(Exception):
                    remove_project(self.client, project.name)
        finally:
            self._projects.pop(project.name, None)


@dataclass(frozen=True)
class Started:
    """What one sample's container was started with, as its sandbox needs to know."""

    workdir: str
    owner_ids: tuple[int, int]  # who owns the files put into it
    env: tuple[tuple[str, str], ...]
    disk: DiskLimit | None  # the sample's disk limit: the task's storage_mb, else disk_mb
    networks: tuple[str, str] = ("none", "none")  # the agent's phase's and the verifier's
    image_user: str = "0"  # the image's USER (`IMAGE_USER`): root when it names none
    gate: EgressGate | None = None  # the egress gate of the phases with an allow-list
    hosts: tuple[tuple[str, ...], tuple[str, ...]] = ((), ())  # what each phase's gate allows


def _orphaned(labels: Mapping[str, str], host: str) -> bool:
    """Whether what carries `labels` was made on `host` by an evalrun process now gone (and is
    not kept)."""
    owner_host, _, pid = labels.get(OWNER_LABEL, "").partition(":")
    if owner_host != host or labels.get(KEEP_LABEL) or not pid.isdigit():
        return False
    return not owner_alive(f"{owner_host}:{pid}:{labels.get(OWNER_START_LABEL, '')}")


def _make_folders(container: Any, workdir: str, owner: tuple[int, int]) -> None:
    """The sandbox's folders, with their owners and modes (before or after the start)."""
    root = (0, 0)
    folders = {
        workdir: (0o755, owner),
        HOME_DIR: (0o755, owner),
        PRIVATE_DIR: (0o755, root),  # the harness's: the agent may read, never write
        EXEC_DIR: (0o700, root),  # exec pid files and staged writes: root's alone
        "/logs": (0o755, root),
        "/logs/agent": (0o755, owner),  # Harbor agents write their logs here
        "/logs/artifacts": (0o755, owner),  # what Harbor agents publish for a verifier
        # Harbor verifiers write their reward here: root's until the agent phase ends,
        # then made fresh for the verifier (`end_agent`)
        VERIFIER_LOGS: (0o755, root),
    }
    container.put_archive("/", tar_bytes([(k[1:], None, *v) for k, v in folders.items()]))


def _adopt_workspace(container: Any, workdir: str, owner: tuple[int, int]) -> None:
    """A task image's files in the workspace become the sandbox user's (a running container)."""
    owned = f"{owner[0]}:{owner[1]}"
    done = container.exec_run(["bash", "-c", _ADOPT, "adopt", owned, workdir], user="0")
    if done.exit_code == 3:
        raise SandboxError(
            "the task's image has neither setpriv (util-linux) nor python3, so "
            "evalrun cannot run commands in it as the sandbox user"
        )
    if done.exit_code != 0:
        raise SandboxError(f"could not hand {workdir} to the sandbox user: {done.output!r}")


def _resolve_user(container: Any, user: str) -> tuple[int, int]:
    """A task's user (a name in the image, a uid, or uid:gid) as (uid, gid)."""
    if _USER.match(user):
        uid, _, gid = user.partition(":")
        return int(uid), int(gid or uid)
    chunks, _ = container.get_archive("/etc/passwd")
    passwd = (first_file(chunks, PASSWD_BYTES) or b"").decode(errors="replace")
    for line in passwd.splitlines():
        fields = line.split(":")
        if len(fields) > 3 and fields[0] == user and fields[2].isdigit() and fields[3].isdigit():
            return int(fields[2]), int(fields[3])
    raise SandboxError(f"the task's user {user!r} is not in the image's /etc/passwd")
