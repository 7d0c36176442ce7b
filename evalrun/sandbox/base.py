"""The sandbox contract every backend implements and the conformance suite checks.

A backend opens one sandbox per sample. Most tasks take the backend as configured; a task that
asks for more - its own image, its workspace at a given path, no network or the network, CPU and
memory of its own (Harbor's `[environment]`) - says so in a `SandboxSpec`. A backend tells
planning which specs it cannot honour (`cannot_host`, with the reason a user can act on) and
honours the rest in `open`; planning skips or refuses the tasks it cannot host.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from enum import StrEnum
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
    # Where the workspace stays once the sandbox closes, with keep_workspaces=true, as a user
    # would open it (a host folder; `docker container <id>`; `modal sandbox <id>`); None: it
    # goes with the sandbox. Set by the backend that opened it.
    kept_at: str | None

    # What this kind of sandbox can do, declared by each backend's sandbox class (never probed
    # with getattr): formats ask these instead of the backend's name.
    @property
    def is_container(self) -> bool:
        """Absolute paths (`/tests`, `/logs`) are the sandbox's own (docker, modal); on local and
        bwrap they are the host's or read-only, so formats must not write there."""
        ...

    @property
    def switches_users(self) -> bool:
        """`exec(..., user=...)` runs a command as another user; elsewhere every command runs
        as the sandbox's one user and `user` is not honoured."""
        ...

    @property
    def host_workspace(self) -> Path | None:
        """The workspace's host folder, when the harness may read and change it there directly
        right now (local; bwrap while no command runs) - never following a link the agent
        planted (`evalrun.sandbox.common.hostfs`). None: only through commands (containers)."""
        ...

    async def exec(
        self,
        cmd: Command,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout_s: float | None = None,
        user: str | None = None,
    ) -> ExecResult:
        """Run `cmd` (cwd defaults to `workdir`); on timeout kill its whole process tree.

        `user` (a name in the image, a uid, or uid:gid) runs it as that user where
        `switches_users`; None: the sandbox's own user."""
        ...

    async def write_file(self, path: str, data: bytes | str) -> None:
        """Create or replace a file (parents created)."""
        ...

    async def read_file(self, path: str) -> bytes:
        """Read a file's bytes; raises FileNotFoundError when it does not exist."""
        ...

    async def put(self, host_dir: Path, path: str = ".") -> None:
        """Copy the contents of a host folder into the sandbox at `path`, overwriting files.

        A harness operation (setup, overlays, hidden files), streamed: the harness never holds a
        whole folder in memory.
        """
        ...

    async def get(self, path: str, host_dir: Path, exclude: Sequence[str] = ()) -> bool:
        """Copy the file or folder at `path` out of the sandbox to `host_dir/<its name>`, leaving
        out what matches an `exclude` pattern (as `tar --exclude`); False when nothing is there.

        Only where the backend `copies_out` (elsewhere it raises `SandboxError`). Streamed and
        bounded; what comes out is the agent's, so links leading out of `host_dir` and special
        files are skipped. Raises `OSError` when it is too large: the agent's doing.
        """
        ...

    async def end_agent(self) -> None:
        """End the agent phase: kill every process the agent left and check that none is left.

        From then on `exec` runs verifiers: as the agent's user, but with a fresh, empty HOME and
        TMPDIR the agent never saw, a fixed PATH and no python user site (`PYTHONNOUSERSITE`);
        `write_file` and `clear` act with the harness's own rights. Raises `SandboxError` when a
        process of the agent cannot be ended (the harness failed, not the agent).
        """
        ...

    async def begin_agent(self) -> None:
        """Give the sandbox back to the agent after a grading (a multi-step task's next turn):
        its own HOME and TMPDIR, its own rights. A fresh sandbox starts in the agent's phase."""
        ...

    async def clear(self, paths: Sequence[str]) -> list[str]:
        """Remove whatever is at each path (relative to `workdir`, or absolute), whatever its type
        or permissions, so that what the harness copies there next is all that is there.

        Only after `end_agent`. Restores the owner's rwx on a path's parent folder when the agent
        took it away, and returns one note per such repair (for the sample's reason). Raises
        `OSError` when a path cannot be cleared: the workspace's state, hence the agent's doing.
        """
        ...

    async def over_limit(self) -> str | None:
        """Why the sample is over one of its resource limits right now (e.g. workspace disk), or
        None. The engine asks every `limit_poll_s` seconds during the agent phase and stops the
        agent with this reason."""
        ...

    @property
    def limit_poll_s(self) -> float | None:
        """How often `over_limit` is worth asking (None: this sandbox has no limit to watch)."""
        ...


@dataclass(frozen=True)
class TaskImage:
    """A task that must run in a container image of its own.

    `context_dir` is a Docker build context holding a `Dockerfile` (built as written, see
    `evalrun.sandbox.docker.images`); `prebuilt` names an image to run in, local or pulled. A
    task may have both: the prebuilt image is used unless the backend is told to build
    (`force_build`), as in Harbor.
    """

    task_id: str
    context_dir: Path | None
    prebuilt: str | None = None
    build_timeout_s: float = 600.0

    def describe(self) -> str:
        if self.prebuilt is not None:
            return f"the prebuilt image {self.prebuilt!r}"
        return f"its own image ({self.context_dir}/Dockerfile)"


class Network(StrEnum):
    """What a task says about the network its samples get."""

    unspecified = "unspecified"  # nothing: the backend's own setting (no network on bwrap/docker)
    none = "none"  # no network at all, on every backend
    public = "public"  # the task needs the network
    allowlist = "allowlist"  # only the hosts of its `allowed_hosts` (elsewhere: as `public`)

    @property
    def reaches_out(self) -> bool:
        """Whether a phase with this policy gets a network at all."""
        return self in (Network.public, Network.allowlist)


@dataclass(frozen=True)
class SandboxSpec:
    """What one task asks of its samples' sandboxes beyond the backend's configuration.

    `workdir`: the absolute path of the workspace inside the sandbox (None: the backend's own).
    `cpus` / `memory_mb` / `storage_mb`: the task's own limits, replacing the backend's where it
    enforces them (`SandboxBackend.task_limits`); elsewhere the backend's own limits apply.
    `gpus`: how many GPUs its samples need (docker alone gives them, through the engine's device
    requests; every other backend, and an engine without a GPU runtime, cannot host it).
    `env`: variables every command in the sandbox sees (already resolved on the host).
    `user`: the user commands run as (None: the backend's sandbox user).
    `network` is the network of the setup and the agent's phase; `verifier_network` that of the
    verifier's phase where it differs (None: the same) - `networks` gives both. A phase whose
    network is `allowlist` may reach only `allowed_hosts` (the agent's phase) or
    `verifier_allowed_hosts` (the verifier's, None: the same) - `hosts` gives both: hostnames,
    `*.suffix` patterns, IP addresses and CIDR ranges, as Harbor's `allowed_hosts`.
    `compose_file`: a compose file of further containers the sample runs with (Harbor's
    environment/docker-compose.yaml): its service `main` is the sandbox, built from `image`,
    and the others reach it - and it them - by service name (None: one container).
    """

    image: TaskImage | None = None
    workdir: str | None = None
    network: Network = Network.unspecified
    verifier_network: Network | None = None
    allowed_hosts: tuple[str, ...] = ()
    verifier_allowed_hosts: tuple[str, ...] | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    gpus: int | None = None
    env: tuple[tuple[str, str], ...] = field(default=())
    user: str | None = None
    compose_file: Path | None = None

    @property
    def is_default(self) -> bool:
        return self == SandboxSpec()

    @property
    def networks(self) -> tuple[Network, Network]:
        """The network of the agent's phase (and setup), and of the verifier's phase."""
        return self.network, self.verifier_network or self.network

    @property
    def hosts(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The hosts the agent's phase and the verifier's may reach, where theirs is `allowlist`."""
        verifier = self.verifier_allowed_hosts
        return self.allowed_hosts, self.allowed_hosts if verifier is None else verifier

    def limits_asked(self) -> list[str]:
        """The names of the task limits this spec sets (`cpus`, `memory_mb`, `storage_mb`, and
        `allowed_hosts` when a phase may reach only some hosts)."""
        asked = {"cpus": self.cpus, "memory_mb": self.memory_mb, "storage_mb": self.storage_mb}
        names = [name for name, value in asked.items() if value is not None]
        return names + ["allowed_hosts"] * (Network.allowlist in self.networks)


DEFAULT_SPEC = SandboxSpec()


def needs_docker(spec: SandboxSpec, backend: str, images: str = "task images") -> str | None:
    """Why a backend other than docker cannot host `spec`: GPUs, several containers, or an image
    of its own, which the backend says it cannot run `images` (None: it asks for none of them)."""
    if spec.gpus:
        return (
            f"needs {spec.gpus} GPU(s); sandbox={backend} has none (sandbox=docker gives them on "
            "a host whose engine has a GPU runtime)"
        )
    if spec.compose_file is not None:
        return (
            f"needs several containers (environment/{spec.compose_file.name}); "
            f"sandbox={backend} runs one (use sandbox=docker)"
        )
    if spec.image is not None:
        return (
            f"needs {spec.image.describe()}; sandbox={backend} cannot run {images} "
            "(use sandbox=docker)"
        )
    return None


class SandboxBackend(Protocol):
    """Makes sandboxes. Instantiated from the `sandbox` config group."""

    name: str
    isolated: bool
    task_limits: frozenset[str]
    """Which of a task's own limits (`SandboxSpec.limits_asked`) this backend enforces;
    planning warns once about the rest."""
    copies_out: bool
    """Its sandboxes copy files out to the host (`Sandbox.get`), so a task's verifier can run in
    a sandbox of its own with the agent's artifacts (Harbor's separate verifier)."""

    def preflight(self) -> None:
        """Raise `SandboxUnavailable` (a usage error) when this backend cannot run here; then
        remove what runs of evalrun that no longer exist left behind (temp folders, processes,
        containers), recognised by a marker only evalrun writes and an owner that is dead."""
        ...

    def cannot_host(self, spec: SandboxSpec) -> str | None:
        """Why this backend cannot give a sandbox what `spec` asks (None: it can)."""
        ...

    def open(
        self, label: str, spec: SandboxSpec = DEFAULT_SPEC
    ) -> AbstractAsyncContextManager[Sandbox]:
        """A fresh sandbox as `spec` asks; closing it removes everything it made."""
        ...

    def add_read_only(self, paths: Sequence[Path], *, live: bool) -> None:
        """Show these host folders read-only, at the same absolute path, in every sandbox opened
        after this call (agent installs, the model gateway's socket folder).

        `live`: changes made on the host later must show inside (a bind mount); otherwise a
        snapshot taken now will do (docker bakes it into a derived image layer). `local` sees
        the host anyway. Raises `SandboxUnavailable` when the backend cannot.
        """
        ...

    def abandon(self) -> None:
        """On a forced exit (a second Ctrl-C): synchronously and quickly end every sandbox still
        open - its processes, its container - or leave it marked for the next `preflight`."""
        ...


# Where every isolated backend (bwrap, docker, modal) puts things inside a sample's sandbox.
WORKDIR = "/workspace"  # the workspace, unless a task's SandboxSpec names another
PRIVATE_DIR = "/evalrun"  # the harness's own files; not writable by the agent
HOME_DIR = "/home/agent"  # the agent's HOME
# Every sandboxed command's PATH (a verifier's too: fixed, never the agent's).
SANDBOX_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

RESERVED_PATHS: tuple[str, ...] = ("/bin", "/dev", "/etc", PRIVATE_DIR, HOME_DIR, "/lib")
RESERVED_PATHS += ("/lib32", "/lib64")
RESERVED_PATHS += ("/libx32", "/proc", "/sbin", "/sys", "/tmp", "/usr")


def bad_workdir(path: str) -> str | None:
    """Why `path` cannot be a sandbox's workspace (None: it can): it must be an absolute, normal
    path that is not `/` and not in or above a folder the sandboxes themselves provide."""
    if not path.startswith("/") or posixpath.normpath(path) != path.rstrip("/") or path == "/":
        return f"expected an absolute path like /app, got {path!r}"
    for reserved in RESERVED_PATHS:
        if path == reserved or path.startswith(reserved + "/") or reserved.startswith(path + "/"):
            return f"{path!r} is or holds {reserved}, which the sandbox itself provides"
    return None


GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "evalrun agent",
    "GIT_AUTHOR_EMAIL": "agent@evalrun.invalid",
    "GIT_COMMITTER_NAME": "evalrun agent",
    "GIT_COMMITTER_EMAIL": "agent@evalrun.invalid",
}


IMAGE_USER = ":image"
"""`exec(user=IMAGE_USER)` where `switches_users`: the user the sandbox's image names (its USER;
root when it names none) - for the task author's own preparation (a Harbor task's setup.sh);
before the agent's phase, what it leaves in the workspace is handed to the sandbox's user."""


# What a verifier's environment adds once the agent phase is over: no python user site, so a
# usercustomize.py or .pth file the agent left under a home cannot run inside the verifier.
VERIFIER_ENV = {"PYTHONNOUSERSITE": "1"}
# In the private folder: the harness's start-up hook for a verifier's python
# (`evalrun.verifier.hardening`
# writes its sitecustomize.py there after the agent phase); first on every verifier PYTHONPATH.
VERIFIER_SITE_DIR = "verifier-site"


def verifier_python_env(private_dir: str, tmpdir: str, pythonpath: str | None) -> dict[str, str]:
    """What a verifier's python is started with beyond `VERIFIER_ENV`: the hook folder first on
    PYTHONPATH (before `pythonpath`, the caller's own), and a bytecode cache in its fresh TMPDIR,
    so bytecode planted in the workspace's `__pycache__` folders is never read."""
    site = posixpath.join(private_dir, VERIFIER_SITE_DIR)
    return {
        "PYTHONPATH": f"{site}:{pythonpath}" if pythonpath else site,
        "PYTHONPYCACHEPREFIX": posixpath.join(tmpdir, "pycache"),
    }


def sandbox_env(
    *,
    home: str,
    tmpdir: str,
    path: str,
    extra: Mapping[str, str] | None = None,
    verifier: bool = False,
    private_dir: str = PRIVATE_DIR,
) -> dict[str, str]:
    """The whole environment a sandboxed command sees: an allow-list, never the host's.

    `extra` (the caller's variables) may add anything but a verifier's HOME, TMPDIR and PATH;
    `verifier` adds `VERIFIER_ENV` and `verifier_python_env` (the hook folder in `private_dir`,
    the sandbox's private folder as its commands see it, put before any PYTHONPATH of `extra`).
    """
    own = {"PATH": path, "HOME": home, "TMPDIR": tmpdir}
    env = {**own, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update({**GIT_IDENTITY, **(extra or {})})
    if verifier:
        env.update({**own, **VERIFIER_ENV})
        env.update(verifier_python_env(private_dir, tmpdir, env.get("PYTHONPATH")))
    return env
