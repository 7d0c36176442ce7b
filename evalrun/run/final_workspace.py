"""A sample's final workspace, kept: what the agent left once its phase ended, before any verifier
file went in, as a gzip-compressed tar in the sample's folder of the run directory - what
`evalrun regrade` grades again when a verifier is fixed later (`unpack` opens it there).

```
pack      (after `Sandbox.end_agent`, while the workspace is still the agent's)
  host folder (local; bwrap while no command runs)   tarfile on the host, entries as they are
  a container that copies out (docker)                `tar -czf` inside, then `Sandbox.get`
  otherwise (modal)                                   not kept, with the reason
unpack    (a regrade, on the host)                    tarfile's data filter
```

What the agent planted stays inert. A symlink is archived as a link, never followed, wherever it
points; FIFOs, sockets and devices are left out. Unpacking goes through tarfile's data filter
(no absolute names, nothing written outside the folder, no devices, no set-uid bits), with one
exception on purpose: a symlink whose target lies outside is made as the link it was (a regrade
must see the workspace the agent left), and nothing is ever written through it - the filter
still refuses any later entry whose path leads through a link out of the folder.

Caps. An archive over `KeepCaps.sample_bytes` is not kept; nor is one that would take the run's
archives over `KeepCaps.run_bytes` (a resume counts what earlier attempts kept). Packing stops
as soon as its output passes the cap or the deadline; the record says why
(`evalrun.models.records.KeptWorkspace`).
"""

from __future__ import annotations

import asyncio
import os
import shlex
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, cast

from evalrun.config.schema import FinalWorkspacesConf
from evalrun.models.records import CellKey, KeptWorkspace
from evalrun.rundir.store import FINAL_WORKSPACE_FILE, final_workspace_path
from evalrun.sandbox.base import Sandbox

MIB = 1024 * 1024
KEEPABLE = (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE)


class NotKept(Exception):
    """Why a workspace is not kept (past the deadline, the sandbox could not pack it)."""


class OverCap(NotKept):
    """The archive grew past the cap it was packed under."""


@dataclass(frozen=True)
class KeepCaps:
    """How much may be kept: per sample and per run, in bytes of compressed archive."""

    sample_bytes: int
    run_bytes: int

    @classmethod
    def of(cls, conf: FinalWorkspacesConf) -> KeepCaps | None:
        """The caps `final_workspaces` sets (None: keeping is off)."""
        if not conf.keep:
            return None
        return cls(int(conf.max_mb_per_sample * MIB), int(conf.max_mb_per_run * MIB))


@dataclass
class WorkspaceKeeper:
    """Keeps the final workspaces of one run directory's samples within `caps`."""

    run_dir: Path
    caps: KeepCaps
    kept: dict[CellKey, int] = field(default_factory=dict)  # bytes per sample, this run's

    def __post_init__(self) -> None:
        self._earlier = sum(  # archives a run being resumed kept before
            path.stat().st_size for path in self.run_dir.glob(f"samples/*/*/{FINAL_WORKSPACE_FILE}")
        )

    @property
    def used(self) -> int:
        return self._earlier + sum(self.kept.values())

    async def keep(self, box: Sandbox, key: CellKey, deadline_s: float) -> KeptWorkspace:
        """Pack `box`'s workspace into the sample's folder, within the caps and `deadline_s`
        seconds. Only after `Sandbox.end_agent`; never raises for the workspace's state."""
        quota = f"the run's quota (final_workspaces.max_mb_per_run: {_mb(self.caps.run_bytes)})"
        room = self.caps.run_bytes - self.used
        if room <= 0:
            return self._not(f"{quota} is used up")
        cap = min(self.caps.sample_bytes, room)
        dest = final_workspace_path(self.run_dir, key)
        dest.parent.mkdir(parents=True, exist_ok=True)
        part = dest.with_name(dest.name + ".part")
        try:
            size = await pack(box, part, cap, deadline_s)
        except OverCap:
            part.unlink(missing_ok=True)
            if cap < self.caps.sample_bytes:
                return self._not(f"its archive would pass {quota}; {_mb(room)} was left")
            limit = f"final_workspaces.max_mb_per_sample: {_mb(cap)}"
            return self._not(f"its archive is over the cap ({limit})")
        except Exception as exc:  # the workspace's state (or a harness bug): never the run's end
            part.unlink(missing_ok=True)
            said = str(exc) if isinstance(exc, NotKept) else f"{type(exc).__name__}: {exc}"
            return self._not(said)
        if size > self.caps.run_bytes - self.used:  # samples packed side by side took the room
            part.unlink(missing_ok=True)
            return self._not(f"its archive would pass {quota}")
        os.replace(part, dest)
        self.kept[key] = size
        return KeptWorkspace(kept=True, bytes=size)

    @staticmethod
    def _not(reason: str) -> KeptWorkspace:
        return KeptWorkspace(kept=False, reason=reason)


async def pack(box: Sandbox, dest: Path, cap: int, deadline_s: float) -> int:
    """Write `box`'s workspace as a tar.gz to `dest`; its size. Raises `NotKept` past `cap`
    bytes or `deadline_s` seconds, or where the sandbox cannot hand its files out."""
    root = box.host_workspace
    if root is not None:
        deadline = time.monotonic() + deadline_s
        return await asyncio.to_thread(_pack_folder, root, dest, cap, deadline)
    return await _pack_inside(box, dest, cap, deadline_s)


def _pack_folder(root: Path, dest: Path, cap: int, deadline: float) -> int:
    """Tar `root`'s entries into `dest` on the host: links as links, special files left out.
    The tree is walked with a stack of its own, so a chain of folders thousands deep packs like
    any other."""
    with dest.open("wb") as raw:
        sink = cast("IO[bytes]", _Capped(raw, cap))
        with tarfile.open(fileobj=sink, mode="w|gz", format=tarfile.PAX_FORMAT) as tar:
            todo = [""]
            while todo:
                folder = todo.pop()
                for entry in sorted(os.scandir(root / folder), key=lambda e: e.name):
                    if time.monotonic() > deadline:
                        raise NotKept("packing it took longer than the verifier's timeout")
                    name = f"{folder}/{entry.name}" if folder else entry.name
                    info = tar.gettarinfo(entry.path, arcname=name)
                    if info.type not in KEEPABLE:
                        continue
                    if info.isreg():
                        with open(entry.path, "rb") as data:
                            tar.addfile(info, data)
                    else:
                        tar.addfile(info)
                    if info.isdir():
                        todo.append(name)
    return dest.stat().st_size


async def _pack_inside(box: Sandbox, dest: Path, cap: int, deadline_s: float) -> int:
    """`tar -czf` in the sandbox (links as links, sockets left out: GNU tar), the archive
    copied out (`Sandbox.get`)."""
    name = "evalrun-final-workspace.tar.gz"
    script = (
        f'out="${{TMPDIR:-/tmp}}/{name}"; tar --create --gzip --file "$out" '
        f'--directory {shlex.quote(box.workdir)} . && printf %s "$out"'
    )
    made = await box.exec(["bash", "-c", script], timeout_s=deadline_s)
    if made.timed_out:
        raise NotKept("packing it took longer than the verifier's timeout")
    if not made.ok:
        raise NotKept(f"tar in the sandbox failed: {made.stderr.strip()[-300:]}")
    inside = made.stdout.strip()
    try:
        with tempfile.TemporaryDirectory(prefix="evalrun-keep-", dir=dest.parent) as staging:
            if not await box.get(inside, Path(staging)):
                raise NotKept(f"the archive {inside} vanished from the sandbox")
            got = Path(staging) / name
            size = got.stat().st_size
            if size > cap:
                raise OverCap(f"its archive is {_mb(size)}, over the cap of {_mb(cap)}")
            os.replace(got, dest)
            return size
    finally:
        await box.exec(["rm", "-f", inside], timeout_s=deadline_s)


class _Capped:
    """A binary file that refuses to grow past `cap` bytes (raises `NotKept`)."""

    def __init__(self, raw: IO[bytes], cap: int):
        self.raw, self.cap, self.written = raw, cap, 0

    def write(self, data: bytes) -> int:
        self.written += len(data)
        if self.written > self.cap:
            raise OverCap(f"its archive passed the cap of {_mb(self.cap)}")
        return self.raw.write(data)

    def flush(self) -> None:
        self.raw.flush()

    def close(self) -> None:
        pass  # the caller closes `raw`


def unpack(archive: Path, dest: Path) -> None:
    """Unpack a kept workspace into the empty folder `dest` (see the module docstring): through
    tarfile's data filter, a symlink that points outside made as a link, special files left out.
    Raises `tarfile.TarError` or `OSError` for an archive that cannot be unpacked safely."""
    with tarfile.open(archive, mode="r:gz") as tar:
        tar.extractall(dest, filter=_inert)


def _inert(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    if member.type not in KEEPABLE:
        return None
    try:
        return tarfile.data_filter(member, dest)
    except (tarfile.AbsoluteLinkError, tarfile.LinkOutsideDestinationError):
        if not member.issym():
            raise
        # the link itself stays inside `dest` (data_filter checked its name before its target)
        return member.replace(mode=None, uid=None, gid=None, uname=None, gname=None, deep=False)  # type: ignore[arg-type]


def _mb(size: int) -> str:
    return f"{size / MIB:.1f} MB" if size >= MIB // 10 else f"{size:,} bytes"
