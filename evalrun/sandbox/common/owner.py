"""Who made a sandbox's host resources, and whether that run is still alive: what sweeps go by.

Several evalrun runs (and test suites) share one machine, and a run killed outright (SIGKILL, a
second Ctrl-C) cannot clean up after itself. So every resource a backend makes on the host - a
sample's temp root, its cgroup, its container, its processes - carries the *owner token* of the
evalrun process that made it:

```
<hostname>:<pid>:<start>      start: the process's start time in clock ticks since boot
                              (/proc/<pid>/stat field 22), so a reused pid never passes for it
```

A resource is an orphan when its owner is on this host and that process is gone; the next
`preflight()` of the same backend removes it. A live run's resources are never touched, and
nothing without evalrun's marker is looked at at all:

- temp roots: a folder `evalrun-*` in the temp dir holding `MARKER_FILE` ("<backend> <owner>",
  plus " keep" for `keep_workspaces`: its processes are killed but the folder stays);
- processes: a host process whose environment holds `PROCESS_MARKER=<its sample's temp root>`.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import socket
import stat
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

MARKER_FILE = ".evalrun-owner"
PROCESS_MARKER = "EVALRUN_SANDBOX"
ROOT_PREFIX = "evalrun-"
KILL_ROUNDS = 20
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC  # opened, never followed


def start_time(pid: int) -> str | None:
    """The process's start time (clock ticks since boot), None when it does not exist."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def current_owner() -> str:
    """This process's owner token (computed per call: a forked worker is an owner of its own)."""
    pid = os.getpid()
    return f"{socket.gethostname()}:{pid}:{start_time(pid) or '?'}"


def owner_alive(token: str) -> bool:
    """False only when `token` names a process on this host that is gone (or was replaced)."""
    host, _, rest = token.partition(":")
    pid, _, start = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return True  # another machine's, or not ours to judge
    now = start_time(int(pid))
    if now is None:
        return False
    return start in ("", "?") or now == start


def new_root(label: str, backend: str, keep: bool, prefix: str = ROOT_PREFIX) -> Path:
    """A fresh temp root for the sample `label` (its name made safe), stamped with its backend
    and owner (and whether to keep it)."""
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)
    root = Path(tempfile.mkdtemp(prefix=f"{prefix}{safe}-"))
    (root / MARKER_FILE).write_text(f"{backend} {current_owner()}{' keep' if keep else ''}\n")
    return root


def release_root(root: Path, keep: bool) -> None:
    """Kill a sample's processes, then remove its temp root - or, to `keep` it, only its marker
    (so that no sweep ever removes it)."""
    kill_marked(root)
    if keep:
        (root / MARKER_FILE).unlink(missing_ok=True)
    else:
        remove_tree(root)


def orphan_roots(backend: str) -> list[tuple[Path, bool]]:
    """This backend's temp roots whose owner is gone, each with its keep flag."""
    found = []
    base = Path(tempfile.gettempdir())
    with contextlib.suppress(OSError):
        for entry in base.iterdir():
            if not entry.name.startswith(ROOT_PREFIX) or entry.is_symlink():
                continue
            try:
                kind, token, *flags = (entry / MARKER_FILE).read_text().split()
            except (OSError, ValueError):
                continue
            if kind == backend and not owner_alive(token):
                found.append((entry, "keep" in flags))
    return found


def marked_pids(root: Path) -> list[int]:
    """Host processes started for the sample at `root` (their environment says so)."""
    needle = f"{PROCESS_MARKER}={root}\0".encode()
    found = []
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        with contextlib.suppress(OSError):
            if needle in (entry / "environ").read_bytes():
                found.append(int(entry.name))
    return found


def _state(pid: int) -> str | None:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[-1].split()[0]
    except (OSError, IndexError):
        return None


def kill_marked(root: Path) -> list[int]:
    """SIGKILL every process marked for `root`, round after round until none is left alive.

    Returns the pids still alive after the last round ([] when every one is gone; zombies count
    as gone).
    """
    alive: list[int] = []
    for _ in range(KILL_ROUNDS):
        alive = [pid for pid in marked_pids(root) if _state(pid) not in (None, "Z")]
        if not alive:
            return []
        for pid in alive:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)
    return [pid for pid in alive if _state(pid) not in (None, "Z")]


def remove_tree(root: Path) -> None:
    """Remove a sample's temp root whatever the agent left in it - folders without write or
    search permission, a chain of folders thousands deep (past Python's recursion limit and
    PATH_MAX), any bytes in names - and never raise: it runs where a sandbox closes.

    Iterative and by file descriptor: a folder that is not empty has its files removed and its
    subfolders moved up into the root (`_hoist`) before it is removed itself, so nothing is
    ever opened more than one level below the root and at most two folders are open at once.
    The root's marker file goes last: a root left half-removed is still found by the next sweep.
    """
    with contextlib.suppress(OSError):
        if stat.S_ISDIR(os.lstat(root).st_mode):
            os.chmod(root, 0o700)
    try:
        top = os.open(root, _FOLDER)
    except FileNotFoundError:
        return
    except OSError:  # not a folder (a symlink, a file): remove the name itself
        with contextlib.suppress(OSError):
            os.unlink(root)
        return
    try:
        _empty(top)
    finally:
        os.close(top)
    with contextlib.suppress(OSError):
        os.rmdir(root)


def _empty(top: int) -> None:
    """Remove everything in the folder open at `top` that can be removed."""
    try:
        taken = set(os.listdir(top))
    except OSError:
        return
    pending = sorted(taken - {MARKER_FILE}, reverse=True)
    if MARKER_FILE in taken:
        pending.insert(0, MARKER_FILE)  # popped last
    emptied: set[str] = set()
    fresh = (f".evalrun-rm-{n}" for n in itertools.count())
    while pending:
        name = pending.pop()
        if _remove(top, name) or name in emptied:
            continue  # removed, or still there after it was emptied: left
        emptied.add(name)
        pending.append(name)
        pending.extend(_hoist(top, name, taken, fresh))


def _remove(folder: int, name: str) -> bool:
    """Unlink `name` in `folder`, or remove it when it is an empty folder; False when it is
    still there."""
    try:
        os.unlink(name, dir_fd=folder)
    except FileNotFoundError:
        return True
    except IsADirectoryError:
        try:
            os.rmdir(name, dir_fd=folder)
        except FileNotFoundError:
            return True
        except OSError:
            return False
    except OSError:
        return False
    return True


def _hoist(top: int, name: str, taken: set[str], fresh: Iterator[str]) -> list[str]:
    """Empty the folder `name` under `top`: remove its files and move its subfolders up into
    `top` under fresh names (returned, to be removed in turn)."""
    with contextlib.suppress(OSError):
        os.chmod(name, 0o700, dir_fd=top)  # `name` is a folder: unlink said so
    try:
        folder = os.open(name, _FOLDER, dir_fd=top)
    except OSError:
        return []
    moved = []
    try:
        for child in os.listdir(folder):
            if _remove(folder, child):
                continue
            new = next(n for n in fresh if n not in taken)
            try:
                os.rename(child, new, src_dir_fd=folder, dst_dir_fd=top)
            except OSError:
                continue
            taken.add(new)
            moved.append(new)
    except OSError:
        pass
    finally:
        os.close(folder)
    return moved


def sweep_roots(backend: str) -> int:
    """Kill the processes of and remove every orphaned temp root of `backend`; how many."""
    roots = orphan_roots(backend)
    for root, keep in roots:
        release_root(root, keep)
    return len(roots)
