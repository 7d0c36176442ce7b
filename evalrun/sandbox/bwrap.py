"""The `bwrap` backend: every command runs in fresh bubblewrap namespaces on the host.

What a sandboxed command sees (and nothing else):

```
/usr /bin /lib* /sbin     the host's system tools, read-only (bash, python3, git, sqlite3, ...)
/etc                      a few read-only host files (ld.so.cache, alternatives, localtime,
                          python3*) plus a generated passwd/group/hosts naming uid 1000 "agent"
/workspace                this sample's workspace, read-write          (`workdir`)
/evalrun                  this sample's private harness folder, read-write (`private_dir`)
/home/agent  /tmp         this sample's own home and temp folders, read-write
/dev /proc                minimal devices; a proc of its own pid namespace
```

The root is read-only; there is no network (only a loopback of its own) unless
`network: host` shares the host's, no view of other processes, no capabilities, and only an
allow-listed environment. The tasks folder, the run
directory, the user's home and every other host path are simply not mounted. Each sample's folders
live in a host temp root that is removed when the sandbox closes.

Files move in and out by running `tar`, `cat` and `base64` inside the sandbox, never by host-side
path arithmetic: a symlink the agent planted (`verify.sh -> /host/file`) is then resolved inside
the sandbox, where it can only reach the sample's own folders, so the harness cannot be tricked
into reading or writing the host.

Limits, applied with `ulimit` inside the namespaces, so they count only this sample's processes:
- `max_processes`: RLIMIT_NPROC. The kernel never enforces it for host root, so when evalrun runs
  as root each sample's namespace maps to its own unprivileged host uid (via `setpriv`), which
  also keeps concurrent samples apart on the host.
- `memory_mb`: RLIMIT_AS, the virtual address space of each process (not a total across
  processes; runtimes that reserve large ranges - JVM, node - need it raised or `null`).
What a task may ask (`SandboxSpec`): its workspace at another absolute path (`/app`: bound there
instead of /workspace), no network (always honoured, also with `network: host`), the network
(only with `network: host`), and variables every command sees. A task image cannot be given;
the task's CPU and memory limits and users are not enforced (the limits above apply).
Every command's whole process tree dies with it: killing `bwrap` (timeout, cancellation) tears
down its pid namespace, and background processes end when the command ends.
"""

from __future__ import annotations

import asyncio
import base64
import errno
import io
import itertools
import os
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import cached_property
from pathlib import Path

from evalrun.errors import SandboxError, SandboxUnavailable, UsageError
from evalrun.sandbox.base import (
    DEFAULT_SPEC,
    Command,
    ExecResult,
    Network,
    SandboxSpec,
    bad_workdir,
    sandbox_env,
)
from evalrun.sandbox.process import run_process

WORKDIR = "/workspace"
PRIVATE_DIR = "/evalrun"
HOME_DIR = "/home/agent"
SANDBOX_UID = 1000
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
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

# Transfer scripts: `$1` is the in-sandbox path. Exit 3/4/5 mean not found / a directory /
# refused, so the caller can raise the matching OSError; anything else is a sandbox failure.
_READ = (
    '[ -e "$1" ] || exit 3; [ -d "$1" ] && exit 4; [ -p "$1" ] && exit 5; [ -r "$1" ] || exit 5; '
    f'set -o pipefail; head -c {MAX_READ_BYTES + 1} -- "$1" | base64 -w0 || exit 5'
)
_WRITE = (
    '[ -d "$1" ] && exit 4; [ -p "$1" ] && exit 5; '
    'mkdir -p -- "$(dirname -- "$1")" && cat > "$1" || exit 5'
)
_UNTAR = 'mkdir -p -- "$1" && tar -x -p -f - -C "$1" || exit 5'


class BwrapSandbox:
    """One sample: a host temp root whose folders are bound into every command's namespaces."""

    private_dir = PRIVATE_DIR

    def __init__(
        self,
        backend: BwrapBackend,
        root: Path,
        host_uid: int | None,
        spec: SandboxSpec = DEFAULT_SPEC,
    ):
        self.root = root
        self.workdir = spec.workdir or WORKDIR
        self._backend = backend
        self._host_uid = host_uid
        self._share_net = backend.network == "host" and spec.network is not Network.none
        self._env = dict(spec.env)

    def _argv(self, argv: Sequence[str], cwd: str) -> list[str]:
        return self._backend.command(
            self.root, self._host_uid, argv, cwd, workdir=self.workdir, share_net=self._share_net
        )

    def _cwd(self, cwd: str | None) -> str:
        return os.path.normpath(os.path.join(self.workdir, cwd or "."))

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
    ) -> ExecResult:
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        return await self._run(argv, cwd=self._cwd(cwd), env=env, timeout_s=timeout_s)

    async def _run(
        self,
        argv: Sequence[str],
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None,
        stdin: bytes | None = None,
        output_limit: int | None = None,
    ) -> ExecResult:
        cwd = cwd or self.workdir
        extra = {**self._env, **(env or {})}
        full_env = sandbox_env(home=HOME_DIR, tmpdir="/tmp", path=SANDBOX_PATH, extra=extra)
        try:
            return await run_process(
                self._argv(argv, cwd),
                cwd=str(self.root),
                env=full_env,
                timeout_s=timeout_s,
                output_limit=output_limit or self._backend.output_limit,
                stdin=stdin,
            )
        except OSError as exc:
            raise SandboxError(f"could not start bubblewrap: {exc}") from exc

    async def _transfer(
        self, script: str, path: str, stdin: bytes | None = None, output_limit: int | None = None
    ) -> ExecResult:
        """Run a transfer script; map its exit code to the OSError a local file call would raise."""
        result = await self._run(
            ["bash", "-c", script, "evalrun-transfer", path],
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

    async def write_file(self, path: str, data: bytes | str) -> None:
        payload = data.encode() if isinstance(data, str) else data
        await self._transfer(_WRITE, path, stdin=payload)

    async def read_file(self, path: str) -> bytes:
        limit = 2 * (MAX_READ_BYTES * 4 // 3 + 16)  # room for all of the base64 text
        result = await self._transfer(_READ, path, output_limit=limit)
        data = base64.b64decode(result.stdout)
        if len(data) > MAX_READ_BYTES:
            raise OSError(errno.EFBIG, f"larger than {MAX_READ_BYTES} bytes, not read", path)
        return data

    async def put(self, host_dir: Path, path: str = ".") -> None:
        try:
            archive = await asyncio.to_thread(_tar_folder, Path(host_dir))
        except OSError as exc:
            raise SandboxError(f"reading {host_dir} to copy it in failed: {exc}") from exc
        try:
            await self._transfer(_UNTAR, path, stdin=archive)
        except PermissionError as exc:
            raise SandboxError(f"copying {host_dir} into the sandbox failed: {exc}") from exc


def _tar_folder(folder: Path) -> bytes:
    """The contents of `folder` as an uncompressed tar, modes and symlinks kept, owners dropped."""

    def anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = ""
        return info

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for child in sorted(folder.iterdir()):
            tar.add(child, arcname=child.name, filter=anonymous)
    return buffer.getvalue()


class BwrapBackend:
    """`sandbox=bwrap`: see the module docstring."""

    name = "bwrap"
    isolated = True

    def __init__(
        self,
        keep_workspaces: bool = False,
        output_limit_bytes: int = 256 * 1024,
        memory_mb: int | None = 8192,
        max_processes: int | None = 512,
        extra_ro_paths: Sequence[str] = (),
        network: str = "none",
    ):
        if network not in ("none", "host"):
            raise UsageError(f"sandbox.network: expected none or host, got {network!r}")
        for knob, value in (("memory_mb", memory_mb), ("max_processes", max_processes)):
            if value is not None and value < 1:
                raise UsageError(f"sandbox.{knob}: expected a positive number or null, got {value}")
        for extra in extra_ro_paths:
            if not os.path.isabs(extra):
                raise UsageError(
                    f"sandbox.extra_ro_paths: expected absolute host paths, got {extra!r}"
                )
        self.keep_workspaces = keep_workspaces
        self.output_limit = output_limit_bytes
        self.memory_mb = memory_mb
        self.max_processes = max_processes
        self.extra_ro_paths = tuple(extra_ro_paths)
        self.network = network
        self._as_root = os.geteuid() == 0
        self._uids = itertools.count()
        self._ready = False

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
        args += ["--die-with-parent", "--new-session"]
        help_text = subprocess.run(
            [self._bwrap, "--help"], capture_output=True, text=True, check=False
        ).stdout
        if "--disable-userns" in help_text:  # bubblewrap >= 0.8: no nested namespaces either
            args.append("--disable-userns")
        return args

    def _limits(self) -> str:
        lines = []
        if self.max_processes is not None:
            lines.append(f"ulimit -u {self.max_processes}")
        if self.memory_mb is not None:
            lines.append(f"ulimit -v {self.memory_mb * 1024}")
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
    ) -> list[str]:
        """The host argv that runs `argv` at in-sandbox `cwd` inside sample `root`'s sandbox,
        whose workspace is bound at `workdir`; `share_net` keeps the host's network."""
        prefix = []
        if host_uid is not None:
            uid = str(host_uid)
            prefix = [self._setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups"]
        binds = [
            ("etc/passwd", "/etc/passwd", "--ro-bind"),
            ("etc/group", "/etc/group", "--ro-bind"),
            ("etc/hosts", "/etc/hosts", "--ro-bind"),
            ("tmp", "/tmp", "--bind"),
            ("home", HOME_DIR, "--bind"),
            ("workspace", workdir, "--bind"),
            ("private", PRIVATE_DIR, "--bind"),
        ]
        mounts = [arg for rel, dest, how in binds for arg in (how, str(root / rel), dest)]
        for extra in self.extra_ro_paths:  # last, so a path under /tmp is not hidden by it
            mounts += ["--ro-bind", extra, extra]
        if share_net:  # the host's network, and what resolves names on it
            mounts += ["--share-net", "--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
        wrapper = ["bash", "-c", self._limits(), "evalrun-limits"]
        return [
            *prefix,
            self._bwrap,
            *self._fixed_args,
            *mounts,
            "--remount-ro",
            "/",
            "--chdir",
            cwd,
            *wrapper,
            *argv,
        ]

    # --- the SandboxBackend contract ----------------------------------------------------------
    def preflight(self) -> None:
        """Run `bash -c true` in a throwaway sandbox once; say plainly why it cannot run."""
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
            _remove_tree(root)
        if done.returncode != 0:
            raise SandboxUnavailable(
                f"sandbox=bwrap: bubblewrap could not start a trial sandbox "
                f"(`{shlex.join(argv[:3])} ...` exited {done.returncode}): "
                f"{done.stderr.strip() or 'no message'}. bubblewrap needs to create user "
                "namespaces (unprivileged user namespaces enabled, or root), and every mounted "
                "path must be readable by the sandbox's uid."
            )
        self._ready = True

    def _next_uid(self) -> int | None:
        return HOST_UID_BASE + next(self._uids) % HOST_UID_SPAN if self._as_root else None

    def cannot_host(self, spec: SandboxSpec) -> str | None:
        if spec.image is not None:
            return (
                f"needs {spec.image.describe()}; sandbox=bwrap cannot run task images "
                "(use sandbox=docker)"
            )
        if spec.workdir is not None and bad_workdir(spec.workdir):
            return f"its workspace path cannot be used: {bad_workdir(spec.workdir)}"
        if spec.network is Network.public and self.network != "host":
            return (
                "needs the network; sandbox=bwrap has none (sandbox.network=host shares the "
                "host's, or use sandbox=docker with a network)"
            )
        return None

    @asynccontextmanager
    async def open(
        self, label: str, spec: SandboxSpec = DEFAULT_SPEC
    ) -> AsyncIterator[BwrapSandbox]:
        problem = self.cannot_host(spec)
        if problem:
            raise SandboxError(problem)
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
        root = Path(tempfile.mkdtemp(prefix=f"evalrun-bwrap-{safe}-"))
        try:
            uid = self._next_uid()
            await asyncio.to_thread(_make_root, root, uid)
            yield BwrapSandbox(self, root, uid, spec)
        finally:
            if not self.keep_workspaces:
                await asyncio.to_thread(_remove_tree, root)


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


def _remove_tree(root: Path) -> None:
    """Remove a sample root even when the agent left folders without write or search permission."""
    try:
        shutil.rmtree(root)
    except FileNotFoundError:
        return
    except OSError:
        for dirpath, dirnames, _ in os.walk(root):
            for name in dirnames:
                path = os.path.join(dirpath, name)
                if not os.path.islink(path):
                    os.chmod(path, 0o700)
        shutil.rmtree(root, ignore_errors=True)
