"""The harness's own file work on a workspace that is a host folder (local, bwrap), done in the
harness's process instead of by a command started in the sandbox: one process start less per
step of every sample (copying setup files and the verifier in, clearing planted paths).

Callers use it only while nothing of the sample runs - no command in flight, the agent's
processes ended or not yet started - so the tree cannot change underneath. Even so every step
goes through folder descriptors and never follows a symlink (`dir_fd`, `O_NOFOLLOW`): a link the
agent planted stays a link and is never followed to the host. Whatever is out of the ordinary
- a link or a file where a folder is needed, a folder where a file goes, a special file, an
absolute path or one outside the workspace, a tree too deep to remove here - raises `NotHere`
before or instead of the step, and the caller does it the sandboxed way, which handles all of
it; each step can be repeated, so whatever was done here before `NotHere` does no harm.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import stat
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class NotHere(Exception):
    """This step is not for the host side: do it with a command in the sandbox."""


def parts_of(rel: str) -> list[str]:
    """The components of a workspace-relative path; `NotHere` for one that leaves it."""
    norm = posixpath.normpath(rel)
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise NotHere(rel)
    return [] if norm == "." else norm.split("/")


@contextmanager
def _folder(root: Path, parts: Sequence[str], *, create: bool, uid: int | None) -> Iterator[int]:
    """A descriptor of the folder at `parts` under `root`, each step without following a link;
    missing folders are made (owned by `uid`) when `create`, else `FileNotFoundError`."""
    fd = os.open(root, _DIR)
    try:
        for name in parts:
            fd_next = _enter(fd, name, create=create, uid=uid)
            os.close(fd)
            fd = fd_next
        yield fd
    finally:
        os.close(fd)


def _enter(parent: int, name: str, *, create: bool, uid: int | None) -> int:
    if create:
        try:
            os.mkdir(name, 0o777, dir_fd=parent)  # the umask applies, as to `mkdir -p`
            if uid is not None:
                os.chown(name, uid, uid, dir_fd=parent, follow_symlinks=False)
        except FileExistsError:
            pass
    try:
        return os.open(name, _DIR, dir_fd=parent)
    except FileNotFoundError:
        raise
    except OSError as exc:  # a link (ELOOP), a file (ENOTDIR), no rights: not here
        raise NotHere(f"{name}: {exc.strerror}") from exc


def copy_in(src: Path, root: Path, rel: str, uid: int | None) -> None:
    """Copy the contents of host folder `src` into `rel` under `root`, as `tar -x -p` run by
    `uid` would: modes, mtimes and symlinks kept, entries owned by `uid` (None: by us), a file
    or link already there replaced."""
    with _folder(root, parts_of(rel), create=True, uid=uid) as dest:
        _copy_folder(src, dest, uid)


def _copy_folder(src: Path, dest: int, uid: int | None) -> None:
    with os.scandir(src) as entries:
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                sub = _enter(dest, entry.name, create=True, uid=uid)
                try:
                    _copy_folder(Path(entry.path), sub, uid)
                    os.fchmod(sub, stat.S_IMODE(info.st_mode))
                finally:
                    os.close(sub)
                continue
            _make_room(dest, entry.name)
            if stat.S_ISLNK(info.st_mode):
                os.symlink(os.readlink(entry.path), entry.name, dir_fd=dest)
                if uid is not None:
                    os.chown(entry.name, uid, uid, dir_fd=dest, follow_symlinks=False)
            elif stat.S_ISREG(info.st_mode):
                _copy_file(entry.path, dest, entry.name, info, uid)
            else:
                raise NotHere(f"{entry.path}: not a file, folder or link")


def _make_room(folder: int, name: str) -> None:
    """Remove the file or link at `name`; a folder there is not ours to replace."""
    try:
        there = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(there.st_mode):
        raise NotHere(f"{name}: a folder where a file goes")
    os.unlink(name, dir_fd=folder)


def _copy_file(path: str, folder: int, name: str, info: os.stat_result, uid: int | None) -> None:
    fd = os.open(name, _NEW_FILE, 0o600, dir_fd=folder)
    try:
        with open(path, "rb") as source:
            size = info.st_size
            while size > 0:
                sent = os.sendfile(fd, source.fileno(), None, min(size, 1 << 30))
                if sent == 0:
                    break
                size -= sent
        if uid is not None:
            os.fchown(fd, uid, uid)
        os.fchmod(fd, stat.S_IMODE(info.st_mode))
        os.utime(fd, ns=(info.st_atime_ns, info.st_mtime_ns))
    finally:
        os.close(fd)


def clear_in(places: Mapping[str, Path], paths: Sequence[str]) -> list[str]:
    """`clear` for absolute in-sandbox `paths`, each under one of `places` (an in-sandbox
    folder -> its host folder; `NotHere` for a path under none). Returns the folders restored,
    as in-sandbox paths."""
    restored = []
    for path in paths:
        for inside, host in places.items():
            rel = posixpath.relpath(path, inside)
            if rel != ".." and not rel.startswith("../"):
                done = clear(host, [rel])
                restored += [posixpath.normpath(posixpath.join(inside, r)) for r in done]
                break
        else:
            raise NotHere(path)
    return restored


def clear(root: Path, rels: Sequence[str]) -> list[str]:
    """`evalrun.sandbox.common.clear`'s script, done here: remove whatever is at each path under
    `root`, restoring the owner's rwx on its parent folder first where the agent removed it.
    Returns the parents restored, relative to `root` ("." for `root` itself)."""
    restored: list[str] = []
    wanted = [parts_of(rel) for rel in rels]
    for parts in wanted:
        if not parts:
            raise NotHere("the workspace itself")
        try:
            with _folder(root, parts[:-1], create=False, uid=None) as parent:
                if _restore_rights(parent):
                    restored.append("/".join(parts[:-1]) or ".")
                _remove(parent, parts[-1])
        except FileNotFoundError:
            continue  # a parent folder is missing: nothing there to clear
    return restored


def _restore_rights(folder: int) -> bool:
    mode = os.fstat(folder).st_mode
    if mode & stat.S_IRWXU == stat.S_IRWXU:
        return False
    os.fchmod(folder, stat.S_IMODE(mode) | stat.S_IRWXU)
    return True


def _remove(folder: int, name: str) -> None:
    try:
        there = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return
    if not stat.S_ISDIR(there.st_mode):
        os.unlink(name, dir_fd=folder)
        return
    try:  # descriptor-based: never follows a link inside the tree
        shutil.rmtree(name, dir_fd=folder)
    except (OSError, RecursionError) as exc:  # no rights inside, too deep: the script does it
        raise NotHere(f"{name}: {exc}") from exc
