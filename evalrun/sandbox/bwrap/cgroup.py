"""A memory limit over all of one sample's processes, from the kernel's memory cgroups.

RLIMIT_AS (`ulimit -v`) bounds each process on its own: three processes of 700 MiB each all fit
under a "1 GiB" limit. A memory cgroup bounds their sum; the kernel's OOM killer ends a process of
the sample when the sample as a whole goes over. Where a cgroup can be made:

```
cgroup v2   <unified mount>/evalrun/<owner>-<n>       the unified hierarchy's root is writable and
                                                       offers the memory controller; memory.max
cgroup v1   <memory mount>/<our own cgroup>/evalrun-<owner>-<n>
                                                       our memory cgroup is writable (root);
                                                       memory.limit_in_bytes (+ memsw when present)
```

A command joins its sample's cgroup by writing its own pid to `cgroup.procs` before it execs
into setpriv and bwrap (`join_argv`); its children inherit the group. Neither is usable when
evalrun does not run as root, or runs where the memory controller is not offered: `find` returns
None and the caller falls back to RLIMIT_AS per process (see `evalrun.sandbox.bwrap.backend`).

Every group is named after its owner token (`evalrun.sandbox.common.owner`), so `sweep` can remove
the groups of runs that no longer exist and never another live run's.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from evalrun.sandbox.common.owner import current_owner, owner_alive

PREFIX = "evalrun-"
V2_PARENT = "evalrun"


def _mounts() -> list[tuple[str, str, str]]:
    """(mount point, fstype, super options) from /proc/self/mountinfo."""
    found = []
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            left, _, right = line.partition(" - ")
            parts, rest = left.split(), right.split()
            if len(parts) > 4 and len(rest) >= 3:
                found.append((parts[4], rest[0], rest[2]))
    return found


def _own_path(controller: str | None) -> str | None:
    """Our cgroup path in the v1 hierarchy of `controller`, or in v2's (controller None)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            if (controller is None and names == "") or controller in names.split(","):
                return path
    return None


def _token_of(name: str) -> str:
    """The owner token in a group's name (':' is kept as is: cgroupfs accepts it)."""
    return name.removeprefix(PREFIX).rsplit("-", 1)[0]


@dataclass(frozen=True)
class MemoryCgroups:
    """Where this process makes its samples' memory cgroups, and which API they speak."""

    parent: Path
    version: int

    @property
    def describe(self) -> str:
        return f"cgroup v{self.version} ({self.parent})"

    def create(self, limit_mb: int, serial: int) -> Path:
        """A new group holding at most `limit_mb` MiB; raises OSError when it cannot be made."""
        group = self.parent / f"{PREFIX}{current_owner()}-{serial}"
        group.mkdir()
        limit = str(limit_mb * 1024 * 1024)
        try:
            if self.version == 2:
                (group / "memory.max").write_text(limit)
                with contextlib.suppress(OSError):
                    (group / "memory.swap.max").write_text("0")
            else:
                (group / "memory.limit_in_bytes").write_text(limit)
                with contextlib.suppress(OSError):
                    (group / "memory.memsw.limit_in_bytes").write_text(limit)
        except OSError:
            remove(group)
            raise
        return group

    def sweep(self) -> int:
        """Remove the groups of evalrun runs that no longer exist (killing what is left in them)."""
        removed = 0
        with contextlib.suppress(OSError):
            for group in self.parent.iterdir():
                ours = group.is_dir() and group.name.startswith(PREFIX)
                if ours and not owner_alive(_token_of(group.name)) and remove(group):
                    removed += 1
        return removed


def join_argv(group: Path) -> list[str]:
    """The argv prefix that moves the command into `group` before it execs the rest."""
    return ["/bin/sh", "-c", 'echo $$ >"$0/cgroup.procs" && exec "$@"', str(group)]


def pids(group: Path) -> list[int]:
    with contextlib.suppress(OSError):
        return [int(p) for p in (group / "cgroup.procs").read_text().split()]
    return []


def kill_all(group: Path, rounds: int = 50) -> bool:
    """SIGKILL every process in `group` until it is empty; True when it is."""
    for _ in range(rounds):
        members = pids(group)
        if not members:
            return True
        for pid in members:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    return not pids(group)


def remove(group: Path) -> bool:
    """Kill what is left in `group` and remove it; False when it is still busy."""
    kill_all(group)
    for _ in range(50):
        try:
            group.rmdir()
            return True
        except FileNotFoundError:
            return True
        except OSError:
            time.sleep(0.02)
    return False


def _writable(path: Path) -> bool:
    return path.is_dir() and os.access(path, os.W_OK)


def _v2() -> MemoryCgroups | None:
    mount = next((m for m, fstype, _ in _mounts() if fstype == "cgroup2"), None)
    if mount is None:
        return None
    root = Path(mount)
    try:
        if "memory" not in (root / "cgroup.controllers").read_text().split():
            return None
        if "memory" not in (root / "cgroup.subtree_control").read_text().split():
            (root / "cgroup.subtree_control").write_text("+memory")
        parent = root / V2_PARENT
        parent.mkdir(exist_ok=True)
        if "memory" not in (parent / "cgroup.subtree_control").read_text().split():
            (parent / "cgroup.subtree_control").write_text("+memory")
    except OSError:
        return None
    return MemoryCgroups(parent, 2) if _writable(parent) else None


def _v1() -> MemoryCgroups | None:
    mount = next(
        (m for m, fstype, opts in _mounts() if fstype == "cgroup" and "memory" in opts.split(",")),
        None,
    )
    own = _own_path("memory")
    if mount is None or own is None:
        return None
    parent = Path(mount) / own.lstrip("/")
    return MemoryCgroups(parent, 1) if _writable(parent) else None


_counter = itertools.count()


def find() -> MemoryCgroups | None:
    """The memory cgroups this process can make for its samples, or None (see the docstring).

    Proves it by making (and removing) one group.
    """
    if os.geteuid() != 0:
        return None
    for probe in (_v2, _v1):
        candidate = probe()
        if candidate is None:
            continue
        try:
            remove(candidate.create(64, next_serial()))
        except OSError:
            continue
        return candidate
    return None


def next_serial() -> int:
    return next(_counter)
