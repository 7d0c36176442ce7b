"""Files coming out of a sandbox (`unpack`): only what stays inside the target folder, never
more than the limit, and what an exclude pattern names left behind."""

from __future__ import annotations

import errno
import io
import tarfile
from pathlib import Path

import pytest

from evalrun.sandbox.common.transfer import unpack


def archive(entries: dict[str, bytes | str]) -> list[bytes]:
    """A tar as docker's get_archive streams it: {name: file bytes, or "->target" for a link}."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for name, body in entries.items():
            info = tarfile.TarInfo(name)
            if isinstance(body, str):
                info.type, info.linkname = tarfile.SYMTYPE, body.removeprefix("->")
                tar.addfile(info)
            else:
                info.size = len(body)
                tar.addfile(info, io.BytesIO(body))
    data = buffer.getvalue()
    return [data[i : i + 1000] for i in range(0, len(data), 1000)]


def test_files_arrive_and_excluded_names_and_folders_stay_behind(tmp_path: Path):
    chunks = archive(
        {
            "artifacts/keep.txt": b"kept",
            "artifacts/scratch.tmp": b"x",
            "artifacts/cache/deep/file": b"x",
            "artifacts/sub/also.txt": b"kept too",
        }
    )
    assert unpack(chunks, tmp_path, 1 << 20, exclude=("*.tmp", "cache")) == []
    got = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert got == ["artifacts/keep.txt", "artifacts/sub/also.txt"]


def test_links_leading_out_are_refused_and_the_rest_still_arrives(tmp_path: Path):
    target = tmp_path / "out"
    target.mkdir()
    chunks = archive({"artifacts/evil": "->/etc/passwd", "artifacts/ok.txt": b"fine"})
    assert unpack(chunks, target, 1 << 20) == ["artifacts/evil"]
    assert not (target / "artifacts" / "evil").is_symlink()
    assert (target / "artifacts" / "ok.txt").read_text() == "fine"


def test_more_bytes_or_entries_than_the_limits_is_an_oserror_the_agent_caused(tmp_path: Path):
    chunks = archive({"artifacts/a": b"x" * 600, "artifacts/b": b"x" * 600})
    with pytest.raises(OSError) as raised:
        unpack(chunks, tmp_path, 1000)
    assert raised.value.errno == errno.EFBIG
    many = archive({f"artifacts/{n}": b"" for n in range(20)})
    with pytest.raises(OSError, match="10 entries"):
        unpack(many, tmp_path / "many", 1 << 20, max_entries=10)
