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

MIB = 1024 * 1024

# Prints the KiB used under the given folders (one filesystem each, missing ones skipped).
DU_SCRIPT = (
    'total=0; for d in "$@"; do [ -d "$d" ] || continue; '
    'n=$(du -skx -- "$d" 2>/dev/null | cut -f1); total=$((total + ${n:-0})); done; echo $total'
)


def host_disk_usage(root: Path) -> int:
    """Bytes allocated under `root` on the host (sparse files count what they hold), without
    following symlinks or crossing into other filesystems."""
    total = 0
    try:
        device = os.lstat(root).st_dev
    except OSError:
        return 0
    stack = [str(root)]
    while stack:
        folder = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            total += info.st_blocks * 512
            if stat.S_ISDIR(info.st_mode) and info.st_dev == device:
                stack.append(entry.path)
    return total


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


def check_positive(knob: str, value: float | None) -> None:
    """A limit knob is a positive number or null (no limit)."""
    from evalrun.errors import bad_value

    if value is not None and (isinstance(value, bool) or value <= 0):
        raise bad_value(f"sandbox.{knob}", "a positive number or null", value)
