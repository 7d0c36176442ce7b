"""What the container backends (`docker`, `modal`) share: killable exec sessions and their
environment, the end of the agent phase, a teardown never cut short by cancellation.

A container API can start a process (`docker exec`, `modal.Sandbox.exec`) but cannot kill the
tree that process spawns, and it keeps no process group for us. So every command runs under a
small bash wrapper, started as root, that makes it the leader of a session of its own and writes
the session id to a pid file in the harness's private folder (root's alone: nothing the agent
plants there can mislead or block the harness):

```
env -i <allow-list> ... setsid --wait bash -c WRAPPER <pidfile> <cwd> <launcher> <shield> \
    <uid> <gid> <argv...>
```

The wrapper stays root and runs the command as the sandbox's user (`setpriv`, else the python3
`LAUNCHER`); a verifier's command is also shielded (`evalrun.sandbox.common.seccomp`: the launcher
installs the no-trace filter first). So the processes that report a command's exit status -
setsid and the wrapper - belong to another user than any code the command runs, and a
verifier's tree cannot trace anything. When the command ends, the wrapper kills whatever it left
running in its session (so a stray `sleep &` cannot outlive the command, as with the `local`
backend) and exits with the command's status. On a timeout or cancellation the harness runs
`KILLER`, which SIGKILLs the command's process group (atomic in the kernel, so a fork bomb
cannot outrun it) and then every process in the container that does not belong to PID 1's
session or to another command still running, repeating until none is left: a child that left
the session with `setsid` dies too.

The wrapper checks for a `<pidfile>.kill` flag right after writing its pid file and the killer
sets that flag before reading it, so a timeout that fires before the wrapper has started still
stops it.

At the end of the agent phase the harness runs `END_AGENT` as root: it kills every process in
the container outside PID 1's session and its own - pid files are not consulted, an agent could
forge one - until none is left, and checks; then it makes the verifier's fresh HOME and TMPDIR,
and the folders the verifier writes its results into (Harbor's /logs/verifier), which the agent
could not write.
"""

from __future__ import annotations

import asyncio
import posixpath
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar

from evalrun.sandbox.base import HOME_DIR, PRIVATE_DIR, SANDBOX_PATH, sandbox_env
from evalrun.sandbox.common.seccomp import LAUNCHER, NO_TRACE_FILTER

T = TypeVar("T")

EXEC_DIR = f"{PRIVATE_DIR}/exec"  # the sessions' pid files
VERIFIER_HOME = f"{PRIVATE_DIR}/verifier-home"  # made by `END_AGENT`, as is
VERIFIER_TMP = f"{PRIVATE_DIR}/verifier-tmp"
VERIFIER_LOGS = "/logs/verifier"  # Harbor verifiers write their reward here

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

# as_user LAUNCHER SHIELD UID GID CMD...: run CMD as UID:GID (SHIELD: the no-trace filter as hex,
# or empty); from root, by setpriv when the image has it, else by the python3 launcher (which the
# shield needs anyway). Empty UID: stay who we are.
AS_USER = r"""
as_user() {
  local launcher=$1 shield=$2 uid=$3 gid=$4 groups=--clear-groups
  shift 4
  if [ -n "$shield" ] && command -v python3 >/dev/null 2>&1; then
    python3 -I -S -c "$launcher" "$shield" "$uid" "$gid" "$@"
  elif [ -z "$uid" ]; then
    "$@"
  elif command -v setpriv >/dev/null 2>&1; then
    getent passwd "$uid" >/dev/null 2>&1 && groups=--init-groups
    setpriv --reuid="$uid" --regid="$gid" "$groups" -- "$@"
  elif command -v python3 >/dev/null 2>&1; then
    python3 -I -S -c "$launcher" "" "$uid" "$gid" "$@"
  else
    echo "evalrun: this image has neither setpriv nor python3 to run commands as uid $uid" >&2
    return 126
  fi
}
"""

WRAPPER = (
    _KILL_SESSION
    + AS_USER
    + r"""
exec 2>&3 3>&-
echo $$ >"$0"
[ -e "$0.kill" ] && exit 137
cd -- "$1" 2>/dev/null || { echo "evalrun: no such directory: $1" >&2; exit 127; }
shift
as_user "$@"
status=$?
kill_session $$ $$
rm -f -- "$0"
exit $status
"""
)

# Pid files are read only when they are regular files: where the agent can write the folder
# (modal: everything runs as root) a FIFO planted there would block the killer.
# Kill the timed-out command's tree and whatever else is loose in the container, sparing only
# PID 1's session, the killer itself and the commands still running (their sessions, their
# ancestors, their descendants). Loose means an escapee: a child that left the session (setsid,
# a double fork) is reparented to PID 1 or still hangs below the dying command.
KILLER = r"""
rm -f -- "$0.kill"; : >"$0.kill"
sid=
[ -f "$0" ] && [ ! -L "$0" ] && read -r sid 2>/dev/null <"$0"
case $sid in ''|*[!0-9]*) sid= ;; esac
[ -n "$sid" ] && [ "$sid" -le 1 ] && sid=
for round in 1 2 3 4 5 6 7 8 9 10; do
  [ -n "$sid" ] && kill -9 -- "-$sid" 2>/dev/null
  running=" "
  for f in "${0%/*}"/exec-*.pid; do
    [ "$f" = "$0" ] && continue
    [ -f "$f" ] && [ ! -L "$f" ] && read -r s 2>/dev/null <"$f" && running+="$s "
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


def as_user_args(user: tuple[int, int] | None, shield: bool) -> list[str]:
    """The four arguments of `as_user` before the command."""
    uid, gid = (str(user[0]), str(user[1])) if user else ("", "")
    return [LAUNCHER, NO_TRACE_FILTER.hex() if shield else "", uid, gid]


@dataclass(frozen=True)
class ExecSession:
    """One command's session inside a container, named by its pid file."""

    pidfile: str

    @classmethod
    def new(cls) -> ExecSession:
        return cls(posixpath.join(EXEC_DIR, f"exec-{uuid.uuid4().hex}.pid"))

    def argv(
        self,
        argv: Sequence[str],
        *,
        cwd: str,
        env: Mapping[str, str],
        user: tuple[int, int] | None = None,
        shield: bool = False,
    ) -> list[str]:
        """The argv that runs `argv` in `cwd` with exactly `env`, as a session of its own.

        Started as root, the session's wrapper (which reports the command's exit status) stays
        root; the command runs as `user` (uid, gid) when given, and `shield`ed when asked (a
        verifier's command: `evalrun.sandbox.common.seccomp`; needs python3 in the image, else the
        command runs unshielded)."""
        assignments = [f"{key}={value}" for key, value in env.items()]
        # setsid's own complaint about a child we killed goes nowhere; the command's stderr is
        # handed to the wrapper on fd 3.
        quiet = ["bash", "-c", 'exec 3>&2 2>/dev/null; exec setsid --wait "$@"', "evalrun-exec"]
        wrapper = ["bash", "-c", WRAPPER, self.pidfile, cwd, *as_user_args(user, shield)]
        return ["env", "-i", *assignments, *quiet, *wrapper, *argv]

    def kill_argv(self) -> list[str]:
        """The argv (run as root) that kills this session's whole process tree (safe to run more
        than once), ended by `timeout` if it ever hangs."""
        return ["timeout", str(KILL_TIMEOUT_S), "bash", "-c", KILLER, self.pidfile]


async def uncancelled(work: Awaitable[T]) -> T:
    """Await `work` to its end even when the caller is cancelled meanwhile (the cancellation is
    raised once it is done): a sandbox's teardown is never cut short."""
    task = asyncio.ensure_future(work)
    try:
        return await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


def command_env(verifying: bool, extra: Mapping[str, str]) -> dict[str, str]:
    """The environment of a command in a container, `extra` added: the agent's HOME and
    TMPDIR, or once the agent phase is over (`verifying`) the verifier's fresh ones."""
    home, tmp = (VERIFIER_HOME, VERIFIER_TMP) if verifying else (HOME_DIR, "/tmp")
    return sandbox_env(home=home, tmpdir=tmp, path=SANDBOX_PATH, extra=extra, verifier=verifying)


# $1 owner (uid:gid) of $2 (the verifier's HOME), $3 (its TMPDIR) and $4... (folders it writes
# results into, made fresh and writable by anyone: only the verifier runs from now on). Exit 0:
# every process but PID 1's session and ours is gone and the folders are fresh; exit 1: something
# survived 5 s.
END_AGENT = r"""
owner=$1 home=$2 tmp=$3
shift 3
results=("$@")
session_of() {
  local line; read -r line 2>/dev/null <"/proc/$1/stat" || return 1
  set -- ${line##*) }; echo "$4"
}
init_sid=$(session_of 1); my_sid=$(session_of $$)
for round in $(seq 100); do
  found=
  for st in /proc/[0-9]*/stat; do
    read -r line 2>/dev/null <"$st" || continue
    pid=${st#/proc/}; pid=${pid%/stat}
    set -- ${line##*) }
    [ "$1" = Z ] || [ "$pid" = 1 ] || [ "$4" = "$init_sid" ] || [ "$4" = "$my_sid" ] && continue
    kill -9 "$pid" 2>/dev/null
    found=1
  done
  [ -z "$found" ] && break
  sleep 0.05
done
[ -n "$found" ] && { echo "processes of the agent survived SIGKILL" >&2; exit 1; }
rm -rf -- "$home" "$tmp" "${results[@]}" && mkdir -m 0755 -- "$home" && mkdir -m 1777 -- "$tmp" \
  && chown -- "$owner" "$home" "$tmp" || exit 2
for d in "${results[@]}"; do
  mkdir -p -m 0777 -- "$d" && chmod 0777 -- "$d" && chown -- "$owner" "$d" || exit 2
done
"""


def end_agent_argv(owner: tuple[int, int]) -> list[str]:
    """The argv (run as root, under `timeout`) of `END_AGENT` for a verifier running as
    `owner`: its HOME `VERIFIER_HOME`, its TMPDIR `VERIFIER_TMP`, its results in `VERIFIER_LOGS`."""
    folders = [f"{owner[0]}:{owner[1]}", VERIFIER_HOME, VERIFIER_TMP, VERIFIER_LOGS]
    script = ["bash", "-c", END_AGENT, "evalrun-end-agent", *folders]
    return ["timeout", str(END_AGENT_TIMEOUT_S), *script]


END_AGENT_TIMEOUT_S = 60  # the end of the agent phase, as root: killing, then fresh folders
KILL_TIMEOUT_S = 60  # the killer of a timed-out command, as root
