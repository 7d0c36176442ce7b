"""A stand-in for the slice of the modal SDK that `evalrun.sandbox.modal` uses. Tests only.

Modal's cloud cannot be reached from the machines evalrun is developed and tested on, so the modal
backend is exercised ONLY against this stand-in, never against Modal itself. It imitates exactly
the calls the backend makes, with the real SDK's names and signatures (a test checks them against
the installed `modal` package):

- `modal.App.lookup.aio(name, create_if_missing=...)`
- `modal.Image.debian_slim(python_version=...)`, `.apt_install(*packages)`, `Image.from_registry`
- `modal.Sandbox.create.aio(*entrypoint, app=, image=, timeout=, block_network=, workdir=, cpu=,
  memory=, tags=)`, `sb.exec.aio(*argv, text=, timeout=)` returning a process with `.stdout` /
  `.stderr` (async-iterable, `.read.aio()`), `.stdin` (`write`, `write_eof`, `drain.aio()`),
  `.wait.aio()` and `.returncode`, `sb.filesystem.read_bytes.aio` / `write_bytes.aio`,
  `sb.terminate.aio()`, `sb.get_tags.aio()`
- `modal.Sandbox.list.aio(app_id=, tags=)`: the app's running sandboxes having at least those
  tags (the orphan sweep); `App.app_id`
- `modal.exception.Error` and the `SandboxFilesystem*Error` classes those calls raise; tags are
  checked by Modal's rule (letters, digits, `.`, `-`, `_`; at most 63 characters), an
  `InvalidError` otherwise.

A stand-in sandbox is a small container made of local processes: a temp folder bound as the root
of a bubblewrap namespace (host /usr and /etc read-only, its own /proc), with a pid namespace of
its own (`terminate` kills its init, and with it every process inside) and, when
`block_network=True`, a network namespace with nothing in it. `exec` enters those namespaces with
nsenter. Images are not built: every image is the host's userland. Needs bwrap, nsenter and root.

Unlike Modal, the "cloud" here is this test process: a sandbox lives as long as the process that
made it (bwrap `--die-with-parent`), and `STATE` is what `Sandbox.list` sees. A sandbox made on
one event loop can be terminated from another (its bwrap is a plain `subprocess.Popen`), as a
real Modal sandbox can from any client: the sweep and `abandon` run on loops of their own.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from evalrun.sandbox.common.owner import remove_tree

SYSTEM_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
IMAGE_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def available() -> bool:
    """Whether this machine can run stand-in sandboxes."""
    return bool(shutil.which("bwrap") and shutil.which("nsenter") and os.geteuid() == 0)


class _Aio:
    """A method exposed like synchronicity's wrappers; the stand-in only offers `.aio`."""

    def __init__(self, fn: Any):
        self.aio = fn

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("the modal stand-in implements only the .aio variants evalrun uses")


# --- modal.exception ----------------------------------------------------------------------------
class Error(Exception):
    pass


class InvalidError(Error):
    pass


class NotFoundError(Error):
    pass


class SandboxFilesystemError(Error):
    pass


class SandboxFilesystemNotFoundError(SandboxFilesystemError):
    pass


class SandboxFilesystemIsADirectoryError(SandboxFilesystemError):
    pass


# --- modal.App / modal.Image --------------------------------------------------------------------
@dataclass
class App:
    name: str

    @property
    def app_id(self) -> str:
        return f"ap-standin-{self.name}"

    @staticmethod
    async def _lookup(name: str, *, create_if_missing: bool = False) -> App:
        if name not in STATE.apps and not create_if_missing:
            raise NotFoundError(f"App '{name}' not found")
        STATE.apps.add(name)
        return App(name)


def _check_tags(tags: dict[str, str]) -> None:
    for text in (*tags, *tags.values()):
        if not re.fullmatch(r"[A-Za-z0-9._-]{1,63}", text):
            raise InvalidError(f"Invalid tag {text!r}: letters, digits, '.', '-', '_', <= 63")


App.lookup = _Aio(App._lookup)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Image:
    recipe: tuple[str, ...]

    @staticmethod
    def debian_slim(python_version: str | None = None) -> Image:
        return Image((f"debian_slim(python_version={python_version})",))

    @staticmethod
    def from_registry(tag: str) -> Image:
        return Image((f"from_registry({tag})",))

    def apt_install(self, *packages: str) -> Image:
        return Image((*self.recipe, f"apt_install{packages}"))


# --- processes ----------------------------------------------------------------------------------
class _Stream:
    def __init__(self, reader: asyncio.StreamReader, text: bool):
        self._reader = reader
        self._text = text
        self.read = _Aio(self._read)

    async def _read(self) -> Any:
        data = await self._reader.read()
        return data.decode() if self._text else data

    async def __aiter__(self):
        while chunk := await self._reader.read(1 << 16):
            yield chunk.decode(errors="replace") if self._text else chunk


class _StreamWriter:
    """modal's `StreamWriter`: `write` buffers, `drain.aio()` flushes, `write_eof` ends it."""

    def __init__(self, writer: asyncio.StreamWriter):
        self._writer = writer

    @property
    def drain(self) -> _Aio:
        return _Aio(self._drain)

    def write(self, data: bytes | str) -> None:
        self._writer.write(data.encode() if isinstance(data, str) else data)

    def write_eof(self) -> None:
        self._writer.write_eof()

    async def _drain(self) -> None:
        await self._writer.drain()


class _ContainerProcess:
    def __init__(self, proc: asyncio.subprocess.Process, text: bool, timeout: int | None):
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        self._proc = proc
        self._timeout = timeout
        self._returncode: int | None = None
        self.stdin = _StreamWriter(proc.stdin)
        self.stdout = _Stream(proc.stdout, text)
        self.stderr = _Stream(proc.stderr, text)
        self.wait = _Aio(self._wait)

    @property
    def returncode(self) -> int:
        if self._returncode is None:
            raise InvalidError("You must call wait() before accessing the returncode.")
        return self._returncode

    async def _wait(self) -> int:
        if self._returncode is None:
            try:
                code = await asyncio.wait_for(self._proc.wait(), self._timeout)
                self._returncode = 128 - code if code < 0 else code  # signals: 128 + n
            except TimeoutError:  # Modal's exec timeout: the process is killed, returncode -1
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self._proc.pid, signal.SIGKILL)
                await self._proc.wait()
                self._returncode = -1
        return self._returncode


# --- modal.Sandbox ------------------------------------------------------------------------------
class Sandbox:
    """One stand-in sandbox: see the module docstring."""

    def __init__(self, root: Path, init: subprocess.Popen, init_pid: int, spec: dict):
        self.root = root
        self.spec = spec
        self.object_id = f"sb-standin-{len(STATE.sandboxes)}"
        self._init = init
        self.init_pid = init_pid
        self._terminated = False
        self.exec = _Aio(self._exec)
        self.terminate = _Aio(self._terminate)
        self.get_tags = _Aio(self._get_tags)
        self.filesystem = types.SimpleNamespace(
            read_bytes=_Aio(self._read_bytes), write_bytes=_Aio(self._write_bytes)
        )

    @staticmethod
    async def _create(
        *args: str,
        app: App | None = None,
        image: Image | None = None,
        timeout: int | None = 300,
        block_network: bool = False,
        workdir: str | None = None,
        cpu: float | None = None,
        memory: int | None = None,
        tags: dict[str, str] | None = None,
    ) -> Sandbox:
        if app is None:
            raise InvalidError("App must be provided when creating a Sandbox outside a container")
        _check_tags(tags or {})
        spec = dict(
            args=args, app=app.name, image=image, timeout=timeout, block_network=block_network,
            workdir=workdir, cpu=cpu, memory=memory, tags=dict(tags or {}),
        )  # fmt: skip
        root = Path(tempfile.mkdtemp(prefix="evalrun-modal-standin-"))
        for rel in ("tmp", (workdir or "/").lstrip("/")):
            (root / rel).mkdir(parents=True, exist_ok=True)
        (root / "tmp").chmod(0o1777)
        read_end, write_end = os.pipe()
        argv = ["bwrap", "--bind", str(root), "/", "--ro-bind", "/usr", "/usr"]
        for name in SYSTEM_DIRS:
            top = Path("/", name)
            if top.is_symlink():
                argv += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                argv += ["--ro-bind", str(top), str(top)]
        argv += ["--ro-bind", "/etc", "/etc", "--dev", "/dev", "--proc", "/proc"]
        argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--hostname", "modal"]
        argv += ["--unshare-net"] if block_network else []
        argv += ["--die-with-parent", "--info-fd", str(write_end), *(args or ("sleep", "inf"))]
        init = subprocess.Popen(  # not asyncio's: that would tie the sandbox to this event loop
            argv,
            pass_fds=(write_end,),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        os.close(write_end)
        with os.fdopen(read_end) as info:
            raw = await asyncio.to_thread(info.read)
        if not raw:
            remove_tree(root)
            raise Error("the stand-in sandbox did not start (bwrap failed)")
        sandbox = Sandbox(root, init, json.loads(raw)["child-pid"], spec)
        STATE.sandboxes.append(sandbox)
        await sandbox._until_ready()
        return sandbox

    async def _until_ready(self) -> None:
        """bwrap reports its child's pid before it has finished mounting; it starts the
        entrypoint only when the mounts are done, so wait for the entrypoint process."""
        children = Path(f"/proc/{self.init_pid}/task/{self.init_pid}/children")
        for _ in range(500):
            with contextlib.suppress(OSError):
                for pid in children.read_text().split():
                    if Path(f"/proc/{pid}/comm").read_text().strip() != "bwrap":
                        return
            await asyncio.sleep(0.01)
        await self._terminate()
        raise Error("the stand-in sandbox did not become ready")

    def _check_running(self) -> None:
        if not self.running:
            raise Error("Sandbox has already terminated")

    @property
    def running(self) -> bool:
        return not self._terminated and self._init.poll() is None

    async def _get_tags(self) -> dict[str, str]:
        return dict(self.spec["tags"])

    @staticmethod
    async def _list(*, app_id: str | None = None, tags: dict[str, str] | None = None):
        """The running sandboxes (of app `app_id`) having at least `tags`, newest first."""
        for sandbox in reversed(STATE.sandboxes):
            if app_id is not None and App(sandbox.spec["app"]).app_id != app_id:
                continue
            if sandbox.running and (tags or {}).items() <= sandbox.spec["tags"].items():
                yield sandbox

    async def _spawn(self, argv: list[str], *, workdir: str | None, stdin: bool = False):
        self._check_running()
        namespaces = ["--pid", "--mount", "--uts", "--ipc"]
        namespaces += ["--net"] if self.spec["block_network"] else []
        cwd = workdir or self.spec["workdir"] or "/"
        return await asyncio.create_subprocess_exec(
            "nsenter", f"--target={self.init_pid}", *namespaces, "--root",
            "sh", "-c", 'cd -- "$0" && exec "$@"', cwd, *argv,
            env={"PATH": IMAGE_PATH, "HOME": "/root", "LANG": "C.UTF-8"},
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip

    async def _exec(
        self,
        *args: str,
        timeout: int | None = None,
        workdir: str | None = None,
        env: dict[str, str | None] | None = None,
        text: bool = True,
    ) -> _ContainerProcess:
        if workdir is not None and not workdir.startswith("/"):
            raise InvalidError(f"workdir must be an absolute path, got: {workdir}")
        extra = [f"{k}={v}" for k, v in (env or {}).items() if v is not None]
        argv = ["env", *extra, *args] if extra else list(args)
        STATE.execs.append(list(args))
        return _ContainerProcess(
            await self._spawn(argv, workdir=workdir, stdin=True), text, timeout
        )

    async def _fs_tool(self, script: str, path: str, data: bytes | None = None) -> bytes:
        if not path.startswith("/"):
            raise InvalidError(f"{path} must be an absolute path")
        proc = await self._spawn(["bash", "-c", script, "fs", path], workdir="/", stdin=True)
        out, err = await proc.communicate(data)
        if proc.returncode == 3:
            raise SandboxFilesystemNotFoundError(f"{path}: No such file or directory")
        if proc.returncode == 4:
            raise SandboxFilesystemIsADirectoryError(f"{path}: Is a directory")
        if proc.returncode != 0:
            raise SandboxFilesystemError(f"{path}: {err.decode(errors='replace').strip()}")
        return out

    async def _read_bytes(self, remote_path: str) -> bytes:
        script = '[ -e "$1" ] || exit 3; [ -d "$1" ] && exit 4; cat -- "$1"'
        return await self._fs_tool(script, remote_path)

    async def _write_bytes(self, data: bytes, remote_path: str) -> None:
        script = '[ -d "$1" ] && exit 4; mkdir -p -- "$(dirname -- "$1")" && cat >"$1"'
        await self._fs_tool(script, remote_path, bytes(data))

    async def _terminate(self) -> None:
        if self._terminated:
            return
        self._terminated = True
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.init_pid, signal.SIGKILL)  # pid 1 of the namespace: all inside die
        try:  # bwrap reaps its child and exits
            await asyncio.to_thread(self._init.wait, 5)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self._init.pid, signal.SIGKILL)
            await asyncio.to_thread(self._init.wait)
        await asyncio.to_thread(remove_tree, self.root)  # any depth the agent made


Sandbox.create = _Aio(Sandbox._create)  # type: ignore[attr-defined]
Sandbox.list = _Aio(Sandbox._list)  # type: ignore[attr-defined]


# --- installing it ------------------------------------------------------------------------------
@dataclass
class StandinState:
    """What tests can look at: every sandbox created and every argv exec'd."""

    apps: set[str] = field(default_factory=set)
    sandboxes: list[Sandbox] = field(default_factory=list)
    execs: list[list[str]] = field(default_factory=list)


STATE = StandinState()


def install_modal_standin(monkeypatch: pytest.MonkeyPatch) -> StandinState:
    """Make `import modal` return the stand-in for this test and give it fake credentials."""
    global STATE
    STATE = StandinState()
    exception = types.ModuleType("modal.exception")
    for cls in (
        Error,
        InvalidError,
        NotFoundError,
        SandboxFilesystemError,
        SandboxFilesystemNotFoundError,
        SandboxFilesystemIsADirectoryError,
    ):
        setattr(exception, cls.__name__, cls)
    module = types.ModuleType("modal")
    module.__doc__ = "evalrun's test stand-in for the modal SDK (tests/sandbox/modal_standin.py)"
    module.App, module.Image, module.Sandbox, module.exception = App, Image, Sandbox, exception
    monkeypatch.setitem(sys.modules, "modal", module)
    monkeypatch.setitem(sys.modules, "modal.exception", exception)
    monkeypatch.setenv("MODAL_TOKEN_ID", "ak-standin")
    monkeypatch.setenv("MODAL_TOKEN_SECRET", "as-standin")
    return STATE
