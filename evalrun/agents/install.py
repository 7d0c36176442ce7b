"""Agent CLIs installed once into a host cache, from the registry each ships in, offline after.

    evalrun agents install claude_code        # or automatically on the first run that needs it

An install is a folder `<cache>/<name>-<version>/` holding exactly what the sample needs, read
only: the CLI's files (and the runtime it needs), plus `installed.json` saying what is there.
Every backend shows that folder at the same absolute path (`SandboxBackend.add_read_only`), so
commands name it the same way on local, bwrap and docker.

Where things come from (the package registries' ordinary clients, pinned versions):
- a single-binary CLI (Claude Code, codex, opencode): `npm pack` of its linux platform package,
  unpacked - no node needed, no install scripts run;
- a node CLI (gemini-cli): `npm install --ignore-scripts` into the folder, plus node itself from
  the `node-linux-<arch>` package on npm (a pinned build, the same in every sandbox, rather than
  the host's node, which the sandboxes do not have);
- a Python CLI (mini-swe-agent, aider): `pip install --target` of binary wheels for CPython 3.11
  on manylinux, run by the sandbox's own python3 (the base image's and bookworm's are 3.11).

The cache is `$EVALRUN_AGENT_CACHE`, else `~/.cache/evalrun/agents`; as root it is
`/var/cache/evalrun/agents`, because bwrap samples run as an unprivileged uid that cannot enter
root's home. Installs are atomic (a partial folder is renamed into place) and serialised by a
lock file, so concurrent runs install once.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from pathlib import Path

from evalrun.errors import UsageError

MARKER = "installed.json"
NPM_TIMEOUT_S = 900
PYTHON_TAG = "3.11"
WHEEL_PLATFORMS = ("manylinux2014_{m}", "manylinux_2_17_{m}", "manylinux_2_28_{m}", "linux_{m}")


def cache_root() -> Path:
    configured = os.environ.get("EVALRUN_AGENT_CACHE")
    if configured:
        return Path(configured).expanduser()
    if os.geteuid() == 0:
        return Path("/var/cache/evalrun/agents")
    return Path("~/.cache/evalrun/agents").expanduser()


def npm_arch() -> str:
    machine = platform.machine().lower()
    return {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        machine, machine
    )


@dataclass(frozen=True)
class Package:
    """What to fetch. `kind`: `npm-binary` (npm pack, unpack), `npm` (npm install; needs node),
    `pypi` (pip install --target). `{arch}` in `name` is npm's arch (x64, arm64); `{version}` the
    version. `node`: the node version an `npm` package runs on."""

    kind: str
    name: str
    version: str
    node: str | None = None

    @property
    def spec(self) -> str:
        name = self.name.format(arch=npm_arch(), version=self.version)
        if self.kind == "pypi":
            return f"{name}=={self.version}"
        return name if "@" in name.lstrip("@") else f"{name}@{self.version}"


@dataclass(frozen=True)
class Installed:
    """An install folder; `ready` once its marker is written."""

    name: str
    version: str
    root: Path

    @property
    def ready(self) -> bool:
        return (self.root / MARKER).is_file()

    def folders(self) -> list[Path]:
        """The host folders a sandbox needs: this one and the runtime's, if any."""
        info = json.loads((self.root / MARKER).read_text())
        return [self.root, *(Path(p) for p in info.get("runtime_folders", []))]


def installed(name: str, package: Package) -> Installed:
    return Installed(name, package.version, cache_root() / f"{name}-{package.version}")


@contextmanager
def _locked(root: Path) -> Iterator[None]:
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    with open(root / ".lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _run(argv: list[str], what: str, cwd: Path | None = None) -> None:
    try:
        done = subprocess.run(
            argv, cwd=cwd, capture_output=True, text=True, timeout=NPM_TIMEOUT_S, check=False
        )
    except FileNotFoundError as exc:
        raise UsageError(f"installing {what} needs {argv[0]}, which is not installed") from exc
    except subprocess.TimeoutExpired as exc:
        raise UsageError(f"installing {what}: `{' '.join(argv[:3])} ...` timed out") from exc
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-1200:]
        raise UsageError(f"installing {what}: `{' '.join(argv[:4])} ...` failed: {tail}")


def _unpack(tarball: Path, dest: Path) -> None:
    with tarfile.open(tarball) as tar:
        tar.extractall(dest, filter="data")


def _npm_pack(spec: str, dest: Path, what: str) -> None:
    """Fetch one npm package's tarball (no install scripts) and unpack it into `dest`."""
    download = dest.parent / f".{dest.name}.download"
    shutil.rmtree(download, ignore_errors=True)
    download.mkdir(parents=True)
    _run(["npm", "pack", "--silent", "--pack-destination", str(download), spec], what)
    for tarball in download.glob("*.tgz"):
        _unpack(tarball, dest)
    shutil.rmtree(download, ignore_errors=True)


def _fill(package: Package, dest: Path, what: str) -> list[str]:
    """Put the package's files into `dest`; return the runtime folders it needs besides."""
    if package.kind == "npm-binary":
        _npm_pack(package.spec, dest, what)
        return []
    if package.kind == "npm":
        if not package.node:
            raise UsageError(f"{what}: an npm CLI needs a pinned node version (node=...)")
        node = installed("node", _node(package.node))
        dest.mkdir(parents=True)
        argv = ["npm", "install", "--prefix", str(dest), "--ignore-scripts", "--no-audit"]
        _run([*argv, "--no-fund", "--omit=dev", package.spec], what)
        return [str(node.root)]
    if package.kind == "pypi":
        machine = platform.machine().lower()
        platforms = [arg for p in WHEEL_PLATFORMS for arg in ("--platform", p.format(m=machine))]
        argv = [*_pip(what), "install", "-q", "--disable-pip-version-check"]
        argv += ["--no-compile", "--target", str(dest / "site"), "--only-binary=:all:"]
        argv += ["--implementation", "cp", "--python-version", PYTHON_TAG, *platforms]
        _run([*argv, package.spec], what)
        return []
    raise UsageError(f"{what}: unknown package kind {package.kind!r}")


def _readable(folder: Path) -> None:
    """Everyone may read (and enter) it: sandboxes run as other uids."""
    for path in (folder, *folder.rglob("*")):
        if path.is_symlink():
            continue
        path.chmod(path.stat().st_mode | (0o555 if path.is_dir() else 0o444))


def _node(version: str) -> Package:
    return Package("npm-binary", "node-linux-{arch}", version)


def _pip(what: str) -> list[str]:
    """This interpreter's pip, else the pip3 on PATH (a uv-made venv has no pip of its own)."""
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip"]
    found = shutil.which("pip3") or shutil.which("pip")
    if found is None:
        raise UsageError(f"installing {what} needs pip (python3 -m pip or pip3 on PATH)")
    return [found]


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def ensure_installed(name: str, package: Package, *, force: bool = False) -> Installed:
    """The install of `package`, fetching it first when the cache does not have it.

    Raises `UsageError` naming what failed (registry unreachable, unknown version, ...).
    """
    target = installed(name, package)
    if target.ready and not force:
        return target
    what = f"{name} {package.version} ({package.spec})"
    if package.kind == "npm" and package.node:  # its runtime first: the lock is not re-entrant
        ensure_installed("node", _node(package.node))
    with _locked(target.root.parent):
        if target.ready and not force:
            return target
        partial = target.root.with_name(f".{target.root.name}.partial-{os.getpid()}")
        shutil.rmtree(partial, ignore_errors=True)
        started = time.monotonic()
        try:
            runtime = _fill(package, partial, what)
            info = {
                "name": name,
                **asdict(package),
                "spec": package.spec,
                "runtime_folders": runtime,
                "install_seconds": round(time.monotonic() - started, 1),
                "bytes": _size(partial),
            }
            (partial / MARKER).write_text(json.dumps(info, indent=2) + "\n")
            _readable(partial)
            shutil.rmtree(target.root, ignore_errors=True)
            partial.rename(target.root)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
    return target


def describe(target: Installed) -> dict:
    return json.loads((target.root / MARKER).read_text()) if target.ready else {}
