"""The per-sample workspace disk limit: measured, then enforced by stopping the agent.

No filesystem quota is available everywhere evalrun runs (Docker's `storage-opt size` needs
overlay2 on xfs with project quotas; a size-capped tmpfs would hold the workspace in RAM), so the
disk limit is two things together:

- RLIMIT_FSIZE at the limit for every process of the sample: one file can never grow past it
  (the writer gets EFBIG / SIGXFSZ, exactly at the limit);
- a watchdog: the engine asks the sandbox (`Sandbox.over_limit`) every `limit_poll_s` during the
  agent phase how much the sample has written - workspace, home and temp folders - and ends the
  agent with the reason when it is at or over the limit. Many smaller files can overshoot the
  limit by what is written in one poll interval.

The limit is the backend's `disk_mb`, or a task's own `storage_mb` (Harbor's `[environment]`),
which replaces it for that task's samples (`DiskLimit.of`).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from evalrun.errors import bad_value

MIB = 1024 * 1024

# Prints the KiB used under the given folders (one filesystem each, missing ones skipped).
DU_SCRIPT = (
    'total=0; for d in "$@"; do [ -d "$d" ] || continue; '
    'n=$(du -skx -- "$d" 2>/dev/null | cut -f1); total=$((total + ${n:-0})); done; echo $total'
)


def host_disk_usage(root: Path) -> int:
    """Bytes allocated under `root` on the host (sparse files count what they hold), without
    following symlinks or crossing into other filesystems.

    The agent shapes the tree, so the walk is iterative and by file descriptor: each folder is
    opened relative to an open ancestor (`_Anchor`) by a path kept under `ANCHOR_CHARS`, and a
    folder deeper than that becomes an anchor itself - a chain thousands of folders deep (past
    Python's recursion limit and PATH_MAX) is counted whole, holding a few descriptors. What
    cannot be opened (no permission, no descriptor left) is not counted; nothing raises."""
    try:
        top = _Anchor(os.open(root, _FOLDER))
    except OSError:
        return 0
    device = os.fstat(top.fd).st_dev
    total = 0
    stack = [top.lend(".")]
    while stack:
        anchor, rel = stack.pop()
        try:
            fd = os.open(rel, _FOLDER, dir_fd=anchor.fd)
        except OSError:
            anchor.give_back()
            continue
        here = _Anchor(fd)
        for name, info in _entries(fd):
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode) and info.st_dev == device:
                child = name if rel == "." else f"{rel}/{name}"
                stack.append(anchor.lend(child) if len(child) < ANCHOR_CHARS else here.lend(name))
        anchor.give_back()
        if not here.users:
            os.close(fd)
    return total


_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
ANCHOR_CHARS = 512  # a relative path longer than this opens a new anchor (PATH_MAX is 4096 bytes)


class _Anchor:
    """An open folder that queued subfolders are opened relative to; closed when the last of
    them has been opened."""

    def __init__(self, fd: int):
        self.fd = fd
        self.users = 0

    def lend(self, rel: str) -> tuple[_Anchor, str]:
        self.users += 1
        return self, rel

    def give_back(self) -> None:
        self.users -= 1
        if not self.users:
            os.close(self.fd)


def _entries(fd: int) -> list[tuple[str, os.stat_result]]:
    """Each entry of the open folder with its lstat; what cannot be read is left out."""
    try:
        names = os.listdir(fd)
    except OSError:
        return []
    found = []
    for name in names:
        try:
            found.append((name, os.stat(name, dir_fd=fd, follow_symlinks=False)))
        except OSError:
            continue
    return found


@dataclass(frozen=True)
class DiskLimit:
    """One sample's disk limit, and the knob it came from (its reason names it)."""

    mb: int
    knob: str  # "sandbox.disk_mb", or "the task's storage_mb"

    @classmethod
    def of(cls, configured_mb: int | None, task_mb: int | None) -> DiskLimit | None:
        """The task's `storage_mb` when it has one (it replaces the backend's), else the
        backend's `disk_mb`; None: no disk limit."""
        if task_mb is not None:
            return cls(task_mb, "the task's storage_mb")
        return cls(configured_mb, "sandbox.disk_mb") if configured_mb is not None else None

    def reason(self, used_bytes: int) -> str | None:
        """The watchdog's verdict: a reason when `used_bytes` is at or over the limit."""
        if used_bytes < self.mb * MIB:
            return None
        return (
            f"workspace disk limit: the sample wrote {used_bytes / MIB:.0f} MiB, at or over "
            f"{self.knob}={self.mb}"
        )


def check_positive(**knobs: float | None) -> None:
    """Each limit knob (`sandbox.<name>`) is a positive number or null (no limit)."""
    for knob, value in knobs.items():
        if value is not None and (isinstance(value, bool) or value <= 0):
            raise bad_value(f"sandbox.{knob}", "a positive number or null", value)
