"""The `bwrap` backend: every command runs in fresh bubblewrap namespaces on the host.

What a sandboxed command sees (and nothing else):

```
/usr /bin /lib* /sbin     the host's system tools, read-only (bash, python3, git, sqlite3, ...)
/etc                      a few read-only host files (ld.so.cache, alternatives, localtime,
                          python3*) plus a generated passwd/group/hosts naming uid 1000 "agent"
/workspace                this sample's workspace, read-write          (`workdir`)
/evalrun                  this sample's private harness folder (`private_dir`): read-only to the
                          agent and the verifier, writable only by the harness's own commands
/home/agent  /tmp         this sample's home and temp folders, read-write; a verifier gets new,
                          empty ones the agent never saw
/dev /proc                minimal devices; a proc of its own pid namespace
```

The root is read-only; there is no network (only a loopback of its own) unless
`network: host` shares the host's, no view of other processes, no capabilities, and only an
allow-listed environment. The tasks folder, the run
directory, the user's home and every other host path are simply not mounted. Each sample's folders
live in a host temp root that is removed when the sandbox closes.

Since mounts are made per command, each command is run in one of three roles (`Role`): the
agent's (private folder read-only), the harness's (private folder writable: copying files in,
the answer file, clearing paths before the hidden verifier goes in) and, after `end_agent`, the
verifier's (the agent's user, a fresh HOME and TMPDIR, private folder read-only, and shielded:
a seccomp filter refuses ptrace and cross-process memory calls and /proc is read-only, so the
agent's code a verifier runs cannot reach bubblewrap's init, which reports the exit status, or
any process of the verifier - `evalrun.sandbox.common.seccomp`).

Files move in and out by running `tar`, `cat` and `base64` inside the sandbox while anything of
the sample may run: a symlink the agent planted (`verify.sh -> /host/file`) is then resolved
inside the sandbox, where it can only reach the sample's own folders, so the harness cannot be
tricked into reading or writing the host. A folder goes in as a tar stream through a pipe. While
no command runs - and then nothing of the sample runs at all, since every command's processes
end with it - the harness copies folders in, clears paths and lists the workspace on the host
itself, one bubblewrap start less per step (`host_workspace`): through folder descriptors that
never follow a link (`evalrun.sandbox.common.hostfs`), handing anything unusual back to the
commands above. The harness writes files into its private folder after the agent phase (the
answer file, the verifier's hook) on the host directly too: no command but the harness's own
ever had that folder writable, so nothing in it was planted.

What a task may ask (`SandboxSpec`): its workspace at another absolute path (`/app`: bound there
instead of /workspace), no network (always honoured, also with `network: host`), the network
(only with `network: host`), variables every command sees, and its own `memory_mb` and
`storage_mb`, which replace `memory_mb` and `disk_mb` below for its samples. A task image cannot
be given; the task's CPU limit and users are not enforced.

Limits, counted only for this sample's processes:
- `max_processes`: RLIMIT_NPROC inside the namespaces. The kernel never enforces it for host
  root, so when evalrun runs as root each sample's namespace maps to its own unprivileged host
  uid (via `setpriv`), which also keeps concurrent samples apart on the host.
- `memory_mb`: the sum over all of the sample's processes, by a memory cgroup of its own when
  evalrun runs as root on a machine that offers one (`evalrun.sandbox.bwrap.cgroup`, v2 or v1). The
  fallback - not root, or no memory controller - is RLIMIT_AS per process: each process's own
  virtual address space (runtimes that reserve large ranges - JVM, node - need it raised or null).
- `disk_mb`: what the sample writes (workspace, home, temp): RLIMIT_FSIZE at the limit for every
  file, and a watchdog that ends the agent when the total reaches it
  (`evalrun.sandbox.common.limits`).
Every command's whole process tree dies with it: killing `bwrap` (timeout, cancellation) tears
down its pid namespace, and background processes end when the command ends. `end_agent` kills
every bwrap process of the sample still running (their environment carries the sample's marker,
`evalrun.sandbox.common.owner`) and checks the sample's cgroup is empty.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import itertools
import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from enum import Enum
from functools import cached_property
from pathlib import Path

from evalrun.config.schema import BwrapSandboxConf, EvalConfig
from evalrun.errors import SandboxError, SandboxUnavailable, bad_value
from evalrun.sandbox.base import (
    DEFAULT_SPEC,
    HOME_DIR,
    PRIVATE_DIR,
    SANDBOX_PATH,
    WORKDIR,
    Command,
    ExecResult,
    Network,
    SandboxSpec,
    bad_workdir,
    needs_docker,
    sandbox_env,
)
from evalrun.sandbox.bwrap import cgroup
from evalrun.sandbox.common import hostfs
from evalrun.sandbox.common.clear import clear_argv, cleared, restored_notes
from evalrun.sandbox.common.limits import DiskLimit, check_positive, host_disk_usage
from evalrun.sandbox.common.owner import (
    MARKER_FILE,
    PROCESS_MARKER,
    kill_marked,
    new_root,
    remove_tree,
    sweep_roots,
)
from evalrun.sandbox.common.process import run_process
from evalrun.sandbox.common.seccomp import NO_TRACE_FILTER
from evalrun.sandbox.common.transfer import streamed

SANDBOX_UID = 1000
INSTALL_HINT = "install bubblewrap (apt-get install bubblewrap)"

# Host /etc entries the system tools need; each is bound read-only when it exists.
HOST_ETC = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
# Top-level system folders: bound read-only, or recreated as the symlinks they are (merged /usr).
SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# When evalrun runs as root, sample n runs as host uid HOST_UID_BASE + n (mod HOST_UID_SPAN).
HOST_UID_BASE = 1_800_000_000
HOST_UID_SPAN = 1_000_000
# File transfers are harness plumbing: bounded, so a FIFO or /dev/zero cannot hang or flood it.
TRANSFER_TIMEOUT_S = 300.0
MAX_READ_BYTES = 64 * 1024 * 1024
CLEAR_TIMEOUT_S = 120.0
DISK_POLL_S = 1.0

# Transfer scripts: `$1` is the in-sandbox path. Exit 3/4/5 mean not found / a directory /
# refused, so the caller can raise the matching OSError; anything else is a sandbox failure.
_READ = (
    '[ -e "$1" ] || exit 3; [ -d "$1" ] && exit 4; [ -p "$1" ] && exit 5; [ -r "$1" ] || exit 5; '
    f'set -o pipefail; head -c {MAX_READ_BYTES + 1} -- "$1" | base64 -w0 || exit 5'
)
# (Paths are absolute and normal: the parent is `${1%/*}`, no `dirname` process; `mkdir` only
# runs when a folder is missing - each process started in the sandbox costs the sample time.)
_WRITE = (
    '[ -d "$1" ] && exit 4; [ -p "$1" ] && exit 5; parent=${1%/*}; '
    '{ [ -d "${parent:-/}" ] || mkdir -p -- "${parent:-/}"; } && cat > "$1" || exit 5'
)
_UNTAR = '{ [ -d "$1" ] || mkdir -p -- "$1"; } && tar -x -p -f - -C "$1" || exit 5'


@dataclass(frozen=True)
class SampleLimits:
    """What one sample's processes are held to: the task's own `memory_mb` and `storage_mb`
    where it gives them, else the backend's `memory_mb` and `disk_mb`."""

    memory_mb: int | None
    disk: DiskLimit | None


class Role(Enum):
    """Whose command it is: decides the private folder's mount, HOME and TMPDIR."""

    agent = "agent"
    harness = "harness"
    verifier = "verifier"


class BwrapSandbox:
    """One sample: a host temp root whose folders are bound into every command's namespaces."""

    is_container = False  # absolute paths are the host's (or read-only)
    switches_users = False  # every command runs as the sandbox's one user

    private_dir = PRIVATE_DIR

    def __init__(
        self,
        backend: BwrapBackend,
        root: Path,
        host_uid: int | None,
        spec: SandboxSpec = DEFAULT_SPEC,
        group: Path | None = None,
    ):
        self.root = root
        self.limits = backend.limits_for(spec)
        self.workdir = spec.workdir or WORKDIR
        self.kept_at = str(root / "workspace") if backend.keep_workspaces else None
        self._backend = backend
        self._host_uid = host_uid
        agent, verifier = spec.networks  # the host's network, where given, per phase
        shared = [backend.network == "host" and n is not Network.none for n in (agent, verifier)]
        self._share_net = {Role.agent: shared[0], Role.harness: False, Role.verifier: shared[1]}
        self._env = dict(spec.env)
        self._group = group
        self._home, self._tmp = "home", "tmp"  # folders under root, bound at HOME_DIR and /tmp
        self._agent_done = False
        self._running = 0  # commands in flight; none: nothing of the sample runs
        self.limit_poll_s = DISK_POLL_S if self.limits.disk is not None else None

    @property
    def host_workspace(self) -> Path | None:
        """The workspace's host folder while no command runs: every command's processes end
        with it (its own pid namespace), so then nothing of the sample can change the tree."""
        return self.root / "workspace" if self._running == 0 else None

    @property
    def _file_role(self) -> Role:
        """The role of `write_file` / `read_file`: the agent's, then the harness's."""
        return Role.harness if self._agent_done else Role.agent

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
        role = Role.verifier if self._agent_done else Role.agent
        return await self._run(argv, role, cwd=self._abs(cwd or "."), env=env, timeout_s=timeout_s)

    async def _run(
        self,
        argv: Sequence[str],
        role: Role,
        *,
        cwd: str,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None,
        stdin: bytes | int | None = None,
        output_limit: int | None = None,
    ) -> ExecResult:
        full_env = sandbox_env(
            home=HOME_DIR,
            tmpdir="/tmp",
            path=SANDBOX_PATH,
            extra={**self._env, **(env or {})},
            verifier=role is Role.verifier,
        )
        full_env[PROCESS_MARKER] = str(self.root)
        shield = _shield_fd() if role is Role.verifier else None
        host_argv = self._backend.command(
            self.root,
            self._host_uid,
            argv,
            cwd,
            workdir=self.workdir,
            share_net=self._share_net[role],
            private_rw=role is Role.harness,
            home=self._home,
            tmp=self._tmp,
            group=self._group,
            limits=self.limits,
            shield_fd=shield,
        )
        self._running += 1
        try:
            return await run_process(
                host_argv,
                cwd=str(self.root),
                env=full_env,
                timeout_s=timeout_s,
                output_limit=output_limit or self._backend.output_limit,
                stdin=stdin,
                pass_fds=() if shield is None else (shield,),
            )
        except OSError as exc:
            raise SandboxError(f"could not start bubblewrap: {exc}") from exc
        finally:
            self._running -= 1
            if shield is not None:
                os.close(shield)

    async def _transfer(
        self,
        script: str,
        path: str,
        role: Role,
        stdin: bytes | int | None = None,
        output_limit: int | None = None,
    ) -> ExecResult:
        """Run a transfer script; map its exit code to the OSError a local file call would raise."""
        result = await self._run(
            ["bash", "-c", script, "evalrun-transfer", path],
            role,
            cwd=self.workdir if role is Role.agent else "/",
            timeout_s=TRANSFER_TIMEOUT_S,
            stdin=stdin,
            output_limit=output_limit,
        )
        if result.ok:
            return result
        detail = result.stderr.strip() or f"exit {result.exit_code}"
        if result.timed_out:
            raise SandboxError(f"{path}: file transfer timed out after {TRANSFER_TIMEOUT_S:g}s")
        if result.exit_code == 3:
            raise FileNotFoundError(f"no such file in the sandbox: {path}")
        if result.exit_code == 4:
            raise IsADirectoryError(f"is a directory in the sandbox: {path}")
        if result.exit_code == 5:
            raise PermissionError(f"{path}: {detail}")
        raise SandboxError(f"bubblewrap failed on {path}: {detail}")

    def _abs(self, path: str) -> str:
        return os.path.normpath(os.path.join(self.workdir, path))

    async def write_file(self, path: str, data: bytes | str) -> None:
        payload = data.encode() if isinstance(data, str) else data
        target = self._abs(path)
        inside = os.path.relpath(target, PRIVATE_DIR)
        if self._file_role is Role.harness and not inside.startswith(".."):
            private = self.root / "private"
            await asyncio.to_thread(_write_private, private, inside, payload, self._host_uid)
            return
        await self._transfer(_WRITE, target, self._file_role, stdin=payload)

    async def read_file(self, path: str) -> bytes:
        limit = 2 * (MAX_READ_BYTES * 4 // 3 + 16)  # room for all of the base64 text
        result = await self._transfer(_READ, self._abs(path), self._file_role, output_limit=limit)
        data = base64.b64decode(result.stdout)
        if len(data) > MAX_READ_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_READ_BYTES} bytes, not read", path)
        return data

    async def put(self, host_dir: Path, path: str = ".") -> None:
        workspace, inside = self.host_workspace, self._inside(path)
        if workspace is not None and inside is not None:
            try:
                return await asyncio.to_thread(
                    hostfs.copy_in, Path(host_dir), workspace, inside, self._host_uid
                )
            except (hostfs.NotHere, OSError):
                pass  # the sandboxed way below handles (or reports) what is there
        with streamed(Path(host_dir)) as pipe:
            await self._transfer(_UNTAR, self._abs(path), Role.harness, stdin=pipe.read_fd)

    async def get(self, path: str, host_dir: Path, exclude: Sequence[str] = ()) -> bool:
        raise SandboxError("sandbox=bwrap does not copy files out of its sandboxes")

    async def end_agent(self) -> None:
        survivors = await asyncio.to_thread(kill_marked, self.root)
        if self._group is not None and not await asyncio.to_thread(cgroup.kill_all, self._group):
            survivors += cgroup.pids(self._group)
        if survivors:
            raise SandboxError(f"processes of the agent survived SIGKILL: {survivors}")
        self._home, self._tmp = await asyncio.to_thread(_fresh_dirs, self.root, self._host_uid)
        self._agent_done = True

    async def begin_agent(self) -> None:
        self._home, self._tmp = "home", "tmp"
        self._agent_done = False

    def _inside(self, path: str) -> str | None:
        """`path` relative to the workspace, or None when it is outside."""
        inside = os.path.relpath(self._abs(path), self.workdir)
        return None if inside == ".." or inside.startswith("../") else inside

    async def clear(self, paths: Sequence[str]) -> list[str]:
        absolute = [self._abs(p) for p in paths]
        if self.host_workspace is not None:
            places = {self.workdir: self.root / "workspace", PRIVATE_DIR: self.root / "private"}
            try:
                restored = await asyncio.to_thread(hostfs.clear_in, places, absolute)
                return restored_notes(restored, self.workdir)
            except (hostfs.NotHere, OSError):
                pass  # the script below handles (or reports) what is there
        result = await self._run(
            clear_argv(absolute), Role.harness, cwd="/", timeout_s=CLEAR_TIMEOUT_S
        )
        return cleared(paths, result.exit_code, result.stdout, result.stderr, self.workdir)

    async def over_limit(self) -> str | None:
        if self.limits.disk is None:
            return None
        used = await asyncio.to_thread(host_disk_usage, self.root)
        return self.limits.disk.reason(used)


_CONF = BwrapSandboxConf()


class BwrapBackend:
    """`sandbox=bwrap`: see the module docstring."""

    name = "bwrap"
    isolated = True
    task_limits: frozenset[str] = frozenset({"memory_mb", "storage_mb"})  # no CPU limit
    copies_out = False  # no `Sandbox.get`

    def __init__(  # defaults: evalrun.config.schema.BwrapSandboxConf, their one home
        self,
        keep_workspaces: bool = EvalConfig.keep_workspaces,
        output_limit_bytes: int = _CONF.output_limit_bytes,
        memory_mb: int | None = _CONF.memory_mb,
        max_processes: int | None = _CONF.max_processes,
        disk_mb: int | None = _CONF.disk_mb,
        extra_ro_paths: Sequence[str] = tuple(_CONF.extra_ro_paths),
        network: str = _CONF.network,
    ):
        if network not in ("none", "host"):
            raise bad_value("sandbox.network", "none or host", network)
        check_positive(memory_mb=memory_mb, max_processes=max_processes, disk_mb=disk_mb)
        for extra in extra_ro_paths:
            if not os.path.isabs(extra):
                raise bad_value("sandbox.extra_ro_paths", "absolute host paths", extra)
        self.keep_workspaces = keep_workspaces
        self.output_limit = output_limit_bytes
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.disk_mb = disk_mb
        self.extra_ro_paths = tuple(extra_ro_paths)
        self.network = network
        self._as_root = os.geteuid() == 0
        self._uids = itertools.count()
        self._ready = False
        self._open: dict[Path, Path | None] = {}  # open sample roots -> their cgroup

    # --- the bwrap command line ---------------------------------------------------------------
    @cached_property
    def _bwrap(self) -> str:
        found = shutil.which("bwrap")
        if found is None:
            raise SandboxUnavailable(f"sandbox=bwrap needs bubblewrap: {INSTALL_HINT}")
        return found

    @cached_property
    def _setpriv(self) -> str:
        found = shutil.which("setpriv")
        if found is None:
            raise SandboxUnavailable(
                "sandbox=bwrap as root needs setpriv (util-linux) to run samples unprivileged"
            )
        return found

    @cached_property
    def memory_cgroups(self) -> cgroup.MemoryCgroups | None:
        """Where samples' memory cgroups go; None: a memory limit falls back to RLIMIT_AS."""
        return cgroup.find()

    def limits_for(self, spec: SandboxSpec) -> SampleLimits:
        """The limits of a sample of a task asking `spec` (its own replace the backend's)."""
        memory = spec.memory_mb if spec.memory_mb is not None else self.memory_mb
        return SampleLimits(memory, DiskLimit.of(self.disk_mb, spec.storage_mb))

    @property
    def memory_enforcement(self) -> str:
        """How `memory_mb` is enforced on this machine, for docs and messages."""
        if self.memory_mb is None:
            return "no memory limit"
        if self.memory_cgroups is not None:
            return f"{self.memory_mb} MiB per sample, {self.memory_cgroups.describe}"
        return f"{self.memory_mb} MiB per process (RLIMIT_AS fallback: no usable memory cgroup)"

    @cached_property
    def _fixed_args(self) -> list[str]:
        """The mounts and namespace flags every sample shares (host layout probed once)."""
        args = ["--ro-bind", "/usr", "/usr"]
        for name in SYSTEM_DIRS:
            top = Path("/", name)
            if top.is_symlink():
                args += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                args += ["--ro-bind", str(top), str(top)]
        etc = [f"/etc/{name}" for name in HOST_ETC]
        etc += sorted(str(p) for p in Path("/etc").glob("python3*"))
        for path in etc:
            args += ["--ro-bind-try", path, path]
        args += ["--dev", "/dev", "--proc", "/proc"]
        args += ["--unshare-all", "--unshare-user", "--uid", str(SANDBOX_UID)]
        args += ["--gid", str(SANDBOX_UID), "--hostname", "evalrun", "--cap-drop", "ALL"]
        args += ["--die-with-parent", "--new-session", "--unsetenv", PROCESS_MARKER]
        help_text = subprocess.run(
            [self._bwrap, "--help"], capture_output=True, text=True, check=False
        ).stdout
        if "--disable-userns" in help_text:  # bubblewrap >= 0.8: no nested namespaces either
            args.append("--disable-userns")
        return args

    def _limits(self, group: Path | None, limits: SampleLimits) -> str:
        lines = []
        if self.max_processes is not None:
            lines.append(f"ulimit -u {self.max_processes}")
        if limits.memory_mb is not None and group is None:
            lines.append(f"ulimit -v {limits.memory_mb * 1024}")
        if limits.disk is not None:
            lines.append(f"ulimit -f {limits.disk.mb * 1024}")  # bash counts 1024-byte blocks
        return "; ".join([*lines, 'exec "$@"'])

    def command(
        self,
        root: Path,
        host_uid: int | None,
        argv: Sequence[str],
        cwd: str,
        *,
        workdir: str = WORKDIR,
        share_net: bool = False,
        private_rw: bool = False,
        home: str = "home",
        tmp: str = "tmp",
        group: Path | None = None,
        limits: SampleLimits | None = None,
        shield_fd: int | None = None,
    ) -> list[str]:
        """The host argv that runs `argv` at in-sandbox `cwd` inside sample `root`'s sandbox,
        whose workspace is bound at `workdir`; `share_net` keeps the host's network; `home` and
        `tmp` name the folders under `root` bound at HOME_DIR and /tmp; `private_rw` makes the
        private folder writable (the harness's own commands); `group` is the sample's cgroup;
        `limits` the sample's (None: the backend's own). `shield_fd` (a verifier's command) is a
        file descriptor holding `evalrun.sandbox.common.seccomp`'s filter: no process of the command
        may then trace another, and /proc is read-only (no writing another's memory)."""
        prefix = cgroup.join_argv(group) if group is not None else []
        if host_uid is not None:
            uid = str(host_uid)
            prefix += [self._setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        binds = [
            ("etc/passwd", "/etc/passwd", "--ro-bind"),
            ("etc/group", "/etc/group", "--ro-bind"),
            ("etc/hosts", "/etc/hosts", "--ro-bind"),
            (tmp, "/tmp", "--bind"),
            (home, HOME_DIR, "--bind"),
            ("workspace", workdir, "--bind"),
            ("private", PRIVATE_DIR, "--bind" if private_rw else "--ro-bind"),
        ]
        mounts = [arg for rel, dest, how in binds for arg in (how, str(root / rel), dest)]
        for extra in self.extra_ro_paths:  # last, so a path under /tmp is not hidden by it
            mounts += ["--ro-bind", extra, extra]
        if share_net:  # the host's network, and what resolves names on it
            mounts += ["--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        if shield_fd is not None:
            mounts += ["--remount-ro", "/proc", "--seccomp", str(shield_fd)]
        limits = limits or self.limits_for(DEFAULT_SPEC)
        wrapper = ["bash", "-c", self._limits(group, limits), "evalrun-limits", *argv]
        namespaces = [*self._fixed_args, *mounts, "--remount-ro", "/", "--chdir", cwd]
        return [*prefix, self._bwrap, *namespaces, *wrapper]

    # --- the SandboxBackend contract ----------------------------------------------------------
    def add_read_only(self, paths: Sequence[Path], *, live: bool) -> None:
        """Bind them read-only at the same path, like `extra_ro_paths` (always live)."""
        self.extra_ro_paths += tuple(str(p) for p in paths if str(p) not in self.extra_ro_paths)

    def preflight(self) -> None:
        """Run `bash -c true` in a throwaway sandbox once; say plainly why it cannot run.
        Then remove the sample roots and cgroups of evalrun runs that no longer exist."""
        if self._ready:
            return
        _ = self._bwrap, self._setpriv if self._as_root else None  # each raises when missing
        root = Path(tempfile.mkdtemp(prefix="evalrun-bwrap-preflight-"))
        try:
            uid = self._next_uid()
            _make_root(root, uid)
            env = sandbox_env(home=HOME_DIR, tmpdir="/tmp", path=SANDBOX_PATH)
            argv = self.command(root, uid, ["bash", "-c", "true"], WORKDIR)
            done = subprocess.run(
                argv, env=env, capture_output=True, text=True, timeout=60, check=False
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SandboxUnavailable(f"sandbox=bwrap could not start bubblewrap: {exc}") from exc
        finally:
            remove_tree(root)
        if done.returncode != 0:
            raise SandboxUnavailable(
                f"sandbox=bwrap: bubblewrap could not start a trial sandbox "
                f"(`{shlex.join(argv[:3])} ...` exited {done.returncode}): "
                f"{done.stderr.strip() or 'no message'}. bubblewrap needs to create user "
                "namespaces (unprivileged user namespaces enabled, or root), and every mounted "
                "path must be readable by the sandbox's uid."
            )
        sweep_roots(self.name)
        if self.memory_cgroups is not None:
            self.memory_cgroups.sweep()
        self._ready = True

    def _next_uid(self) -> int | None:
        return HOST_UID_BASE + next(self._uids) % HOST_UID_SPAN if self._as_root else None

    def cannot_host(self, spec: SandboxSpec) -> str | None:
        if reason := needs_docker(spec, self.name):
            return reason
        if spec.workdir is not None and bad_workdir(spec.workdir):
            return f"its workspace path cannot be used: {bad_workdir(spec.workdir)}"
        if any(n.reaches_out for n in spec.networks) and self.network != "host":
            return (
                "needs the network; sandbox=bwrap has none (sandbox.network=host shares the "
                "host's, or use sandbox=docker with a network)"
            )
        return None

    def _new_group(self, memory_mb: int | None) -> Path | None:
        if memory_mb is None or self.memory_cgroups is None:
            return None
        try:
            return self.memory_cgroups.create(memory_mb, cgroup.next_serial())
        except OSError as exc:
            raise SandboxError(f"could not make the sample's memory cgroup: {exc}") from exc

    @asynccontextmanager
    async def open(
        self, label: str, spec: SandboxSpec = DEFAULT_SPEC
    ) -> AsyncIterator[BwrapSandbox]:
        if problem := self.cannot_host(spec):
            raise SandboxError(problem)
        root = new_root(label, self.name, self.keep_workspaces, prefix="evalrun-bwrap-")
        group = None
        self._open[root] = None
        try:
            uid = self._next_uid()
            await asyncio.to_thread(_make_root, root, uid)
            memory_mb = self.limits_for(spec).memory_mb
            group = self._open[root] = await asyncio.to_thread(self._new_group, memory_mb)
            yield BwrapSandbox(self, root, uid, spec, group)
        finally:
            await asyncio.to_thread(self._close, root, group)

    def _close(self, root: Path, group: Path | None) -> None:
        kill_marked(root)
        if group is not None:
            cgroup.remove(group)
        if self.keep_workspaces:
            (root / MARKER_FILE).unlink(missing_ok=True)
        else:
            remove_tree(root)
        self._open.pop(root, None)

    def abandon(self) -> None:
        for root, group in list(self._open.items()):
            self._close(root, group)


def _shield_fd() -> int:
    """A file descriptor reading the verifier's seccomp filter from its start (bwrap reads it
    once, as the command starts); the caller closes it."""
    fd = os.memfd_create("evalrun-no-trace", os.MFD_CLOEXEC)
    os.write(fd, NO_TRACE_FILTER)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_private(private: Path, inside: str, payload: bytes, host_uid: int | None) -> None:
    """Write `payload` at `inside` (relative) in the sample's private folder on the host, as the
    in-sandbox `cat` would: missing folders made, owned by the sample's host uid (as root), a
    folder at the path refused; no symlink is followed (none can be there: only the harness ever
    writes this folder)."""
    if inside == ".":
        raise IsADirectoryError(f"is a directory in the sandbox: {PRIVATE_DIR}")
    folder = private
    for part in Path(inside).parent.parts:
        folder = folder / part
        try:
            folder.mkdir()
        except FileExistsError:
            continue
        if host_uid is not None:
            os.chown(folder, host_uid, host_uid)
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_NONBLOCK  # (were a FIFO there after all: refused at once, never a hang)
    fd = os.open(private / inside, flags, 0o666)
    try:
        if host_uid is not None:
            os.fchown(fd, host_uid, host_uid)
        view = memoryview(payload)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _make_root(root: Path, host_uid: int | None) -> None:
    """Create a sample's host folders; owned by its host uid when evalrun runs as root."""
    for rel in ("workspace", "private", "home", "tmp", "etc"):
        (root / rel).mkdir()
    (root / "tmp").chmod(0o1777)
    name = "agent"
    (root / "etc/passwd").write_text(
        f"{name}:x:{SANDBOX_UID}:{SANDBOX_UID}:{name}:{HOME_DIR}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    )
    (root / "etc/group").write_text(f"{name}:x:{SANDBOX_UID}:\nnogroup:x:65534:\n")
    (root / "etc/hosts").write_text("127.0.0.1 localhost\n::1 localhost\n127.0.1.1 evalrun\n")
    if host_uid is not None:
        for path in (root, *(root / rel for rel in ("workspace", "private", "home", "tmp"))):
            os.chown(path, host_uid, host_uid)


def _fresh_dirs(root: Path, host_uid: int | None) -> tuple[str, str]:
    """A new, empty home and temp folder under `root` for the verifier (relative names)."""
    home = Path(tempfile.mkdtemp(prefix="verifier-home-", dir=root))
    tmp = Path(tempfile.mkdtemp(prefix="verifier-tmp-", dir=root))
    home.chmod(0o755)
    tmp.chmod(0o1777)
    if host_uid is not None:
        for path in (home, tmp):
            os.chown(path, host_uid, host_uid)
    return home.name, tmp.name
