"""What the container backends (`docker`, `modal`) share: killable exec sessions and tar archives.

A container API can start a process (`docker exec`, `modal.Sandbox.exec`) but cannot kill the
tree that process spawns, and it keeps no process group for us. So every command runs under a
small bash wrapper that makes it the leader of a session of its own and writes the session id to
a pid file in the harness's private folder:

```
env -i <allow-list> ... setsid --wait bash -c WRAPPER <pidfile> <cwd> <argv...>
```

When the command ends, the wrapper kills whatever it left running in its session (so a stray
`sleep &` cannot outlive the command, as with the `local` backend) and exits with the command's
status. On a timeout or cancellation the harness runs `KILLER`, which SIGKILLs the command's
process group (atomic in the kernel, so a fork bomb cannot outrun it) and then every process in
the container that does not belong to PID 1's session or to another command still running,
repeating until none is left: a child that left the session with `setsid` dies too.

The wrapper checks for a `<pidfile>.kill` flag right after writing its pid file and the killer
sets that flag before reading it, so a timeout that fires before the wrapper has started still
stops it.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# Kill every process (except zombies and $me) whose session id is $sid; repeat until none is
# left. Field 4 after the command name in /proc/<pid>/stat is the session id.
_KILL_SESSION = r"""
kill_session() {
  local sid=$1 me=$2 round pid line found
  for round in 1 2 3 4 5 6 7 8 9 10; do
    [ "$sid" = "$me" ] || kill -9 -- "-$sid" 2>/dev/null
    found=
    for st in /proc/[0-9]*/stat; do
      read -r line 2>/dev/null <"$st" || continue
      set -- ${line##*) }
      pid=${st#/proc/}; pid=${pid%/stat}
      if [ "$4" = "$sid" ] && [ "$pid" != "$me" ] && [ "$1" != Z ]; then
        kill -9 "$pid" 2>/dev/null && found=1
      fi
    done
    [ -z "$found" ] && return 0
  done
}
"""

WRAPPER = (
    _KILL_SESSION
    + r"""
exec 2>&3 3>&-
echo $$ >"$0"
[ -e "$0.kill" ] && exit 137
cd -- "$1" 2>/dev/null || { echo "evalrun: no such directory: $1" >&2; exit 127; }
shift
"$@"
status=$?
kill_session $$ $$
rm -f -- "$0"
exit $status
"""
)

# Kill the timed-out command's tree and whatever else is loose in the container, sparing only
# PID 1's session, the killer itself and the commands still running (their sessions, their
# ancestors, their descendants). Loose means an escapee: a child that left the session (setsid,
# a double fork) is reparented to PID 1 or still hangs below the dying command.
KILLER = r"""
: >"$0.kill"
sid=
read -r sid 2>/dev/null <"$0"
case $sid in ''|*[!0-9]*) sid= ;; esac
[ -n "$sid" ] && [ "$sid" -le 1 ] && sid=
for round in 1 2 3 4 5 6 7 8 9 10; do
  [ -n "$sid" ] && kill -9 -- "-$sid" 2>/dev/null
  running=" "
  for f in "${0%/*}"/exec-*.pid; do
    [ "$f" = "$0" ] && continue
    read -r s 2>/dev/null <"$f" && running+="$s "
  done
  unset parent session keep
  declare -A parent session keep
  pids=()
  for st in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$st" || continue
    pid=${st#/proc/}; pid=${pid%/stat}
    set -- ${line##*) }
    [ "$1" = Z ] && continue
    parent[$pid]=$2; session[$pid]=$4; pids+=("$pid")
  done
  init_sid=${session[1]:-1}
  for pid in "${pids[@]}"; do
    s=${session[$pid]}
    if [ "$pid" = $$ ] || [ "$s" = "$init_sid" ] || [[ $running == *" $s "* ]]; then
      p=$pid
      while [ -n "$p" ] && [ "$p" != 0 ] && [ -z "${keep[$p]}" ]; do
        keep[$p]=1; p=${parent[$p]}
      done
    fi
  done
  grow=1
  while [ -n "$grow" ]; do
    grow=
    for pid in "${pids[@]}"; do
      [ -n "${keep[$pid]}" ] && continue
      p=${parent[$pid]}
      if [ -n "${keep[$p]}" ] && [ "$p" != 1 ] && [ "${session[$p]}" != "$init_sid" ]; then
        keep[$pid]=1; grow=1
      fi
    done
  done
  killed=
  for pid in "${pids[@]}"; do
    [ -n "${keep[$pid]}" ] || [ "$pid" = 1 ] && continue
    kill -9 "$pid" 2>/dev/null && killed=1
  done
  [ -z "$killed" ] && break
done
rm -f -- "$0" "$0.kill"
"""


@dataclass(frozen=True)
class ExecSession:
    """One command's session inside a container, named by its pid file."""

    pidfile: str

    @classmethod
    def new(cls, folder: str) -> ExecSession:
        return cls(posixpath.join(folder, f"exec-{uuid.uuid4().hex}.pid"))

    def argv(self, argv: Sequence[str], *, cwd: str, env: Mapping[str, str]) -> list[str]:
        """The argv that runs `argv` in `cwd` with exactly `env`, as a session of its own."""
        assignments = [f"{key}={value}" for key, value in env.items()]
        # setsid's own complaint about a child we killed goes nowhere; the command's stderr is
        # handed to the wrapper on fd 3.
        quiet = ["bash", "-c", 'exec 3>&2 2>/dev/null; exec setsid --wait "$@"', "evalrun-exec"]
        wrapper = ["bash", "-c", WRAPPER, self.pidfile, cwd]
        return ["env", "-i", *assignments, *quiet, *wrapper, *argv]

    def kill_argv(self) -> list[str]:
        """The argv that kills this session's whole process tree (safe to run more than once)."""
        return ["bash", "-c", KILLER, self.pidfile]


# Archives for the container APIs. Every entry is owned by `owner` (the uid:gid commands run as
# inside the container), never by whoever owns the files on the host.


def _owned(info: tarfile.TarInfo, owner: tuple[int, int]) -> tarfile.TarInfo:
    info.uid, info.gid = owner
    info.uname = info.gname = ""
    return info


def tar_folder(folder: Path, prefix: str = "", owner: tuple[int, int] = (0, 0)) -> bytes:
    """The contents of `folder` as a tar, names under `prefix`, modes and symlinks kept.

    Raises `OSError` when `folder` is missing or cannot be read.
    """
    if not folder.is_dir():
        raise NotADirectoryError(f"not a folder: {folder}")
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for child in sorted(folder.iterdir()):
            name = posixpath.join(prefix, child.name)
            tar.add(child, arcname=name, filter=lambda info: _owned(info, owner))
    return buffer.getvalue()


def tar_file(name: str, data: bytes, owner: tuple[int, int] = (0, 0)) -> bytes:
    """A tar holding one regular file `name` (parents are created by whoever extracts it)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = _owned(tarfile.TarInfo(name), owner)
        info.size, info.mode = len(data), 0o644
        tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tar_dirs(modes: Mapping[str, int], owner: tuple[int, int] = (0, 0)) -> bytes:
    """A tar holding only folders: {name: mode}."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, mode in modes.items():
            info = _owned(tarfile.TarInfo(name), owner)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
    return buffer.getvalue()
