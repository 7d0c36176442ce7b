"""`Sandbox.clear` as one shell script, run with the harness's rights by every backend.

For each path (relative to the workspace, or absolute): if its parent folder lacks the owner's
rwx (an agent's `chmod 555 .`), restore it and say so on stdout; then remove whatever is at the
path - file, symlink (never followed), FIFO, or a folder tree with read-only or unsearchable
folders inside - and exit 5 when something is still there.
"""

from __future__ import annotations

from collections.abc import Sequence

CLEAR_SCRIPT = r"""
status=0
checked=
for p in "$@"; do
  case "$p" in  # dirname without a process per path; a parent is checked once in a row
    */) parent=$(dirname -- "$p") ;;
    */*) parent=${p%/*}; parent=${parent:-/} ;;
    *) parent=. ;;
  esac
  if [ "$parent" != "$checked" ] && [ -d "$parent" ] && [ ! -L "$parent" ] \
     && [ -n "$(find "$parent" -maxdepth 0 ! -perm -u=rwx 2>/dev/null)" ]; then
    chmod u+rwx -- "$parent" 2>/dev/null && printf 'restored\t%s\n' "$parent"
  fi
  checked=$parent
  if [ -e "$p" ] || [ -L "$p" ]; then
    if [ -d "$p" ] && [ ! -L "$p" ]; then chmod -R u+rwX -- "$p" 2>/dev/null; fi
    rm -rf -- "$p" 2>/dev/null
    if [ -e "$p" ] || [ -L "$p" ]; then echo "could not remove $p" >&2; status=5; fi
  fi
done
exit $status
"""


def clear_argv(paths: Sequence[str]) -> list[str]:
    return ["bash", "-c", CLEAR_SCRIPT, "evalrun-clear", *paths]


def clear_notes(stdout: str, workdir: str) -> list[str]:
    """One note per permission the script restored, naming the folder as the agent knows it."""
    lines = (line.partition("\t") for line in stdout.splitlines())
    return restored_notes([folder for kind, _, folder in lines if kind == "restored"], workdir)


def cleared(
    paths: Sequence[str], code: int | None, stdout: str, stderr: str, workdir: str
) -> list[str]:
    """The notes of a finished `clear_argv` command (exit `code`, None: timed out); `OSError`
    naming `paths` when it failed."""
    if code != 0:
        detail = stderr.strip() or f"exit {code}"
        raise OSError(f"could not clear {', '.join(paths)}: {detail}")
    return clear_notes(stdout, workdir)


def restored_notes(folders: Sequence[str], workdir: str) -> list[str]:
    """One note per folder whose owner's rwx the harness restored before clearing."""
    return [
        f"the harness restored the owner's rwx on {where} (the agent removed it)"
        for where in ("the workspace root" if f in (".", workdir) else f for f in folders)
    ]
