"""Moving files across the sandbox boundary as streams: the harness never holds a whole folder.

A folder goes in as a tar written by a thread into a pipe (`TarPipe`); the other end feeds
whatever unpacks it - a `tar -x` inside bubblewrap (the read end as its stdin), Docker's
`put_archive` (chunks), a `tar -x` in a Modal exec (its stdin) - so the harness's memory stays the
same whatever the size of the files. Every entry is owned by `owner` (the uid:gid the sandbox's
commands run as), never by whoever owns the files on the host; modes and symlinks are kept.

Files come out the same way (`unpack`: Docker's `get_archive` chunks, a member at a time, up to
a byte limit), through tarfile's `data` filter: what a sandbox hands out is the agent's, so
nothing in it may land outside the folder it is unpacked into, be a device, or keep a setuid bit.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import fnmatch
import io
import os
import posixpath
import tarfile
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from evalrun.errors import SandboxError

CHUNK = 1 << 20
F_SETPIPE_SZ = getattr(fcntl, "F_SETPIPE_SZ", 1031)  # Linux


def owned_by(info: tarfile.TarInfo, owner: tuple[int, int]) -> tarfile.TarInfo:
    """`info` as owned by `owner` (uid, gid), without names (a tar filter's body)."""
    info.uid, info.gid = owner
    info.uname = info.gname = ""
    return info


class TarPipe:
    """`folder`'s contents as a tar stream on `read_fd`, written by a thread of its own.

    `close()` ends the read side and waits for the writer (`streamed` does both). Names go
    under `prefix`.
    """

    def __init__(self, folder: Path, prefix: str = "", owner: tuple[int, int] = (0, 0)):
        if not folder.is_dir():
            raise NotADirectoryError(f"not a folder: {folder}")
        self.folder = folder
        self.prefix = prefix
        self.owner = owner
        self.read_fd, self._write_fd = os.pipe()
        with contextlib.suppress(OSError):  # a larger pipe buffer: fewer, larger writes
            fcntl.fcntl(self._write_fd, F_SETPIPE_SZ, CHUNK)
        self._error: OSError | None = None
        self._thread = threading.Thread(target=self._write, name="evalrun-tar", daemon=True)
        self._thread.start()

    def _write(self) -> None:
        try:
            with (
                os.fdopen(self._write_fd, "wb", buffering=CHUNK) as sink,
                tarfile.open(fileobj=sink, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            ):
                tar.copybufsize = CHUNK  # type: ignore[attr-defined]  # large reads (not in stubs)
                for child in sorted(self.folder.iterdir()):
                    name = posixpath.join(self.prefix, child.name)
                    tar.add(child, arcname=name, filter=lambda i: owned_by(i, self.owner))
        except BrokenPipeError:
            pass  # the reader went away; it reports its own failure
        except OSError as exc:
            self._error = exc

    def chunks(self) -> Iterator[bytes]:
        """The stream in chunks of up to CHUNK bytes (for APIs that take an iterable body; a
        pipe read returns at most the pipe's buffer, so reads are gathered)."""
        pending = bytearray()
        while piece := os.read(self.read_fd, CHUNK - len(pending)):
            pending += piece
            if len(pending) >= CHUNK:
                yield bytes(pending)
                pending.clear()
        if pending:
            yield bytes(pending)

    def close(self) -> OSError | None:
        """Close the read end and wait for the writer; the `OSError` it met reading the host
        folder, if any."""
        os.close(self.read_fd)
        self._thread.join()
        return self._error


@contextlib.contextmanager
def streamed(
    folder: Path, prefix: str = "", owner: tuple[int, int] = (0, 0), what: str = "to copy it in"
) -> Iterator[TarPipe]:
    """A `TarPipe` of `folder` for the `with` block, whose writer is waited for at its end. An
    `OSError` reading the host folder is the harness's failure: `SandboxError` ("reading
    <folder> <what> failed"); errors of the block itself pass through unchanged."""
    try:
        pipe = TarPipe(folder, prefix, owner)
    except OSError as exc:
        raise SandboxError(f"reading {folder} {what} failed: {exc}") from exc
    try:
        yield pipe
    finally:
        error = pipe.close()
    if error is not None:
        raise SandboxError(f"reading {folder} {what} failed: {error}") from error


def tar_bytes(entries: Iterable[tuple[str, bytes | None, int, tuple[int, int]]]) -> bytes:
    """A tar of folders and regular files, each (name, its bytes or None for a folder, mode,
    (uid, gid)); parents not listed are created by whoever extracts it."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode, owner in entries:
            info = owned_by(tarfile.TarInfo(name), owner)
            info.mode = mode
            if data is None:
                info.type = tarfile.DIRTYPE
            else:
                info.size = len(data)
            tar.addfile(info, None if data is None else io.BytesIO(data))
    return buffer.getvalue()


class _ChunkReader(io.RawIOBase):
    """A read-only file over an iterable of byte chunks."""

    def __init__(self, chunks: Iterable[bytes]):
        self._chunks = iter(chunks)
        self._pending = b""

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:  # type: ignore[no-untyped-def]
        while not self._pending:
            try:
                self._pending = next(self._chunks)
            except StopIteration:
                return 0
        size = min(len(buffer), len(self._pending))
        buffer[:size] = self._pending[:size]
        self._pending = self._pending[size:]
        return size


def first_file(chunks: Iterable[bytes], limit: int) -> bytes | None:
    """The first regular file of a tar stream, reading at most `limit + 1` of its bytes (so a
    caller can tell "too large" without holding more); None when the archive holds no file."""
    stream = io.BufferedReader(_ChunkReader(chunks), CHUNK)
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            extracted = tar.extractfile(member)
            if extracted is not None:
                return extracted.read(limit + 1)
    return None


def unpack(
    chunks: Iterable[bytes],
    dest: Path,
    limit: int,
    exclude: Sequence[str] = (),
    max_entries: int = 100_000,
) -> list[str]:
    """Extract a tar stream into `dest` through tarfile's `data` filter, one member at a time;
    return the names the filter refused (links out of `dest`, devices: skipped, not fatal).

    Members matching an `exclude` pattern (as `tar --exclude`: against any trailing part of the
    path below the archive's top entry, a folder taking its contents along) are skipped. Raises
    `OSError` (EFBIG) once the files' sizes pass `limit` bytes or the entries `max_entries`.
    """
    refused: list[str] = []
    skipped: set[str] = set()  # excluded folders: their contents go with them
    total = entries = 0
    stream = io.BufferedReader(_ChunkReader(chunks), CHUNK)
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            if exclude and _excluded(member.name, exclude, skipped):
                continue
            total += member.size if member.isfile() else 0
            entries += 1
            if total > limit or entries > max_entries:
                too_much = f"more than {limit} bytes or {max_entries} entries, not copied"
                raise OSError(errno.EFBIG, too_much, member.name)
            try:
                tar.extract(member, dest, filter="data")
            except tarfile.FilterError:
                refused.append(member.name)
    return refused


def _excluded(name: str, patterns: Sequence[str], skipped: set[str]) -> bool:
    """Whether `name` (its first part the archive's top entry) matches one of `patterns` by
    any trailing part of its path below the top, or lies in a folder that did (`skipped`,
    which a matching folder joins). A name pattern costs linear time in the path's depth,
    however deep the agent made it."""
    path = name.strip("/")
    parts = path.split("/")
    if skipped:
        cuts = [i for i, c in enumerate(path) if c == "/"][1:]  # each folder below the top
        if any(path[:cut] in skipped for cut in cuts):
            return True
    below = parts[1:]
    for pattern in patterns:
        if "/" in pattern:  # a path pattern: against each trailing part of the path
            hit = any(fnmatch.fnmatchcase("/".join(below[i:]), pattern) for i in range(len(below)))
        else:  # a name pattern: against the entry's name and each folder's on the way
            hit = any(fnmatch.fnmatchcase(part, pattern) for part in below)
        if hit:
            skipped.add(path)
            return True
    return False
