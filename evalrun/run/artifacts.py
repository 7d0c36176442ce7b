"""Carrying a separate verifier's artifacts from the agent's sandbox into the verifier's own.

```
collect   in the agent's sandbox, after `Sandbox.end_agent`: the task's collect commands, best
          effort (one that fails or times out is a line of the log, not a verdict), then each
          artifact copied out (`Sandbox.get`) into a staging folder on the host
restore   in the verifier's fresh sandbox: each artifact copied in at the path it came from
```

Nothing else of the agent's sandbox travels: not its processes, not the rest of its workspace,
not a file it planted where the verifier's tests or python hooks would be looked for.
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from evalrun.models.writable import tail_text
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.base import SeparateVerifier


@dataclass(frozen=True)
class Carried:
    """One artifact on its way: its absolute path in both sandboxes, its copy on the host."""

    path: str
    copy: Path


async def collect(
    box: Sandbox, apart: SeparateVerifier, staging: Path
) -> tuple[list[Carried], str]:
    """Run `apart`'s collect commands in `box`, then copy its artifacts out into `staging` (an
    empty folder); return what was copied and the log. Raises `OSError` when an artifact is too
    large to copy (the agent's doing), `SandboxError` when the sandbox fails."""
    log = [
        await _run_collect(box, command.command, command.timeout_s, command.user)
        for command in apart.collect
    ]
    carried = []
    for index, artifact in enumerate(apart.artifacts):
        path = posixpath.normpath(posixpath.join(box.workdir, artifact.path))
        folder = staging / str(index)
        folder.mkdir()
        if not await box.get(path, folder, artifact.exclude):
            log.append(f"artifact {path}: nothing there")
            continue
        copy = folder / (posixpath.basename(path) or "root")
        if os.path.lexists(copy):
            carried.append(Carried(path, copy))
        else:
            log.append(f"artifact {path}: refused (a link leading out of it, or a device)")
    return carried, "".join(f"{line}\n" for line in log if line)


async def _run_collect(box: Sandbox, command: str, timeout_s: float, user: str | None) -> str:
    """Run one collect command; "" when it succeeded, else a line saying how it failed."""
    result = await box.exec(command, timeout_s=timeout_s, user=user if box.switches_users else None)
    if result.ok:
        return ""
    why = f"timed out after {timeout_s:g}s" if result.timed_out else f"exit {result.exit_code}"
    detail = tail_text((result.stdout + result.stderr).strip(), 500)
    return f"collect command failed ({why}): {command}: {detail}"


async def restore(judge: Sandbox, carried: list[Carried]) -> None:
    """Put each artifact back in the verifier's sandbox `judge` at the path it came from,
    replacing what its image had there. Only after `judge.end_agent()`."""
    for item in carried:
        await judge.clear([item.path])
        if item.copy.is_dir() and not item.copy.is_symlink():
            await judge.put(item.copy, item.path)
        else:  # a file: its staging folder holds it alone
            await judge.put(item.copy.parent, posixpath.dirname(item.path))
