"""The run directory: the source of truth for a run, written as the run goes.

This module is its one writer; `evalrun.rundir.log.RunLog` is its one reader (every report, `ls`,
`show`, `diff`, `gate`, `push`, the sweep summary). The file names below are spelled only in
these two modules.

```
<run_dir>/
  writer.lock      flock-ed by the one process writing the directory (its pid and start time)
  config.yaml      the resolved config, secrets redacted
  overrides.yaml   the command-line overrides it was composed from (replayed by a resume)
  plan.json        tasks with fingerprints, cells, run id
  samples.jsonl    one SampleRecord per finished sample, appended, flushed and fsynced
  summary.json     metrics over samples.jsonl and the run's state (rewritten at the end of a run)
  samples/<task>/<trial>/{setup,agent,verify}.log
  samples/<task>/<trial>/workspace.tar.gz   the final workspace, kept for `evalrun regrade`
  samples/<task>/<trial>/trajectory.json   the sample as ATIF (evalrun.rundir.trajectory)
```

One run, one directory, one writer:

- `claim_new_run_dir` creates a new run's directory with an exclusive mkdir; a name already
  taken (two runs started in the same second) gets `-2`, `-3`, ...: a directory is never reused.
- `RunLock` is held by every process that writes a run directory (a run, a resume, `evalrun
  push`, `evalrun report`) for as long as it writes. A second writer is refused (`RunBusy`, exit
  2) naming the holder's pid and start time. The lock is an `flock` on `writer.lock`, which the
  kernel drops when its holder dies, so the lock of a killed run is simply taken over. Readers
  never take it (`current_writer` reads who holds it, as a hint).
- Everything the store writes is scrubbed of the run's secret values (`evalrun.rundir.redact`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import yaml

from evalrun.errors import UsageError
from evalrun.models.records import CellKey, SampleRecord, minimal, writable
from evalrun.models.writable import escape_surrogates, tail_text
from evalrun.rundir.redact import SecretValues, redact, redact_overrides
from evalrun.rundir.trajectory import Session, trajectory_of

if TYPE_CHECKING:
    from evalrun.models.plan import PlanFile
    from evalrun.models.summary import Summary

SAMPLES_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
PLAN_FILE = "plan.json"
CONFIG_FILE = "config.yaml"
OVERRIDES_FILE = "overrides.yaml"
LOCK_FILE = "writer.lock"
FINAL_WORKSPACE_FILE = "workspace.tar.gz"  # in a sample's folder (evalrun.run.final_workspace)
TRAJECTORY_FILE = "trajectory.json"  # a sample's ATIF document, beside its logs
MAX_SUFFIX = 1000
LOG_CHARS = 8_000_000  # a per-sample log keeps its last this many characters


class RunStore:
    """Writes a run directory: appends records crash-safely (a half-written last line left by a
    crash is cut before the next append), writes the config, plan, summary and logs.

    Everything written goes through `secrets` first: a record's text, a log, a JSON file, the
    config (masked by name and scrubbed by value) and the overrides.

    Nothing an agent put in a record or a log can stop it being written, nor cost another
    sample its record (DESIGN.md, threat model rule 2): a record is made writable
    (`evalrun.models.writable`) and must read back before it is written, else its cell's minimal
    record is written instead; a line whose write fails is cut off again, so the next record
    still starts a line of its own; a log is escaped and kept to its last `LOG_CHARS`."""

    def __init__(self, run_dir: Path, secrets: SecretValues | None = None):
        self.run_dir = Path(run_dir)
        self.samples_path = self.run_dir / SAMPLES_FILE
        self.secrets = secrets or SecretValues()
        self._handle: IO[bytes] | None = None

    def create(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def begin(self, config: dict[str, Any], overrides: list[str] | None, plan: PlanFile) -> None:
        """Create the directory and write what precedes the first sample: config.yaml,
        overrides.yaml (None: not written) and plan.json."""
        self.create()
        self.write_config(config)
        if overrides is not None:
            self.write_overrides(overrides)
        self.write_plan(plan)

    def write_json(self, name: str, data: Any) -> Path:
        path = self.run_dir / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        text = json.dumps(self.secrets.scrub_data(data), indent=2, sort_keys=False, default=str)
        tmp.write_text(text + "\n")
        os.replace(tmp, path)
        return path

    def write_config(self, config: dict[str, Any]) -> None:
        safe = redact(config, self.secrets)
        (self.run_dir / CONFIG_FILE).write_text(yaml.safe_dump(safe, sort_keys=False))

    def write_plan(self, plan: PlanFile) -> Path:
        """plan.json, before the first sample (`evalrun.rundir.log.PlanFile`)."""
        return self.write_json(PLAN_FILE, plan.model_dump(mode="json", exclude_none=True))

    def write_summary(self, summary: Summary) -> Path:
        """summary.json, when the run ends or stops (docs/summary-schema.md)."""
        return self.write_json(SUMMARY_FILE, summary.model_dump(mode="json"))

    def write_overrides(self, overrides: list[str]) -> None:
        safe = redact_overrides(overrides, self.secrets)
        (self.run_dir / OVERRIDES_FILE).write_text(yaml.safe_dump(safe))

    def append(self, record: SampleRecord) -> SampleRecord:
        """Write `record` (made writable, scrubbed) durably; return what was written, for the
        trackers. Only the file system failing raises (`OSError`)."""
        written, line = self._line(record)
        if self._handle is None:
            _drop_torn_tail(self.samples_path)
            self._handle = self.samples_path.open("ab", buffering=0)
        _append_whole(self._handle, line)
        return written

    def _line(self, record: SampleRecord) -> tuple[SampleRecord, bytes]:
        """The record to write and its line; the cell's minimal record when the full one cannot
        be serialised or would not read back."""
        try:
            clean = self.secrets.scrub_record(writable(record))
            return clean, _serialised(clean)
        except Exception as exc:  # whatever it is, the cell still gets its record
            why = f"{type(exc).__name__}: {exc}"
        fallback = self.secrets.scrub_record(minimal(record, why))
        return fallback, _serialised(fallback)

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def write_log(self, key: CellKey, name: str, text: str) -> None:
        folder = sample_dir(self.run_dir, key)
        folder.mkdir(parents=True, exist_ok=True)
        text = escape_surrogates(tail_text(text, LOG_CHARS))
        (folder / name).write_text(self.secrets.scrub(text), encoding="utf-8", errors="replace")

    def write_trajectory(self, record: SampleRecord, session: Session) -> Path:
        """The sample's trajectory.json (ATIF, `evalrun.rundir.trajectory`), from its record as
        written (already scrubbed), scrubbed again with the rest of the document."""
        return write_trajectory(sample_dir(self.run_dir, record.key), record, session, self.secrets)


def sample_dir(root: Path, key: CellKey) -> Path:
    """The folder of one sample's files: `<root>/samples/<task>/<trial>`."""
    return root / "samples" / key.task_id / str(key.trial)


def write_trajectory(
    folder: Path, record: SampleRecord, session: Session, secrets: SecretValues | None = None
) -> Path:
    """Write `record`'s ATIF trajectory as `folder`/trajectory.json (atomically); return it."""
    folder.mkdir(parents=True, exist_ok=True)
    document = trajectory_of(record, session).to_json()
    if secrets is not None:
        document = secrets.scrub_data(document)
    path = folder / TRAJECTORY_FILE
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)
    return path


def final_workspace_path(run_dir: Path, key: CellKey) -> Path:
    """Where a sample's final workspace is kept (`evalrun.run.final_workspace`)."""
    return sample_dir(Path(run_dir), key) / FINAL_WORKSPACE_FILE


def _serialised(record: SampleRecord) -> bytes:
    """`record`'s line, proven to read back (`RunLog` skips a line it cannot parse, and a
    resume would run that cell again)."""
    line = record.model_dump_json()
    SampleRecord.model_validate_json(line)
    return line.encode() + b"\n"


def _append_whole(handle: IO[bytes], line: bytes) -> None:
    """Append `line` and fsync it; when that fails, cut the file back to where it was, so no
    torn line is left for the next record to be glued to."""
    start = os.fstat(handle.fileno()).st_size
    try:
        view = memoryview(line)
        while view:
            took = handle.write(view)
            if not took:
                raise OSError(errno.EIO, f"{handle.name}: the write took no bytes")
            view = view[took:]
        os.fsync(handle.fileno())
    except OSError:
        with contextlib.suppress(OSError):
            os.ftruncate(handle.fileno(), start)
        raise


def _drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line left by a crash, so the next append starts a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return
        handle.truncate(data.rfind(b"\n") + 1)


# --- one directory, one writer -----------------------------------------------------------------
_FOLDERS_MADE: dict[Path, list[Path]] = {}  # a claimed run directory -> parents made for it


def claim_new_run_dir(path: Path) -> Path:
    """Create a new run's directory exclusively: `path`, or `path-2`, `path-3`, ... when that
    name is taken. Never returns a directory that existed before. The parent folders it had to
    make (`runs/`) go again with the directory when it stays unused (`remove_if_unused`)."""
    path = Path(path)
    made = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
    for n in range(1, MAX_SUFFIX):
        candidate = path if n == 1 else path.with_name(f"{path.name}-{n}")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            candidate.mkdir()  # (the parent may vanish in between: an unused run's cleanup)
        except (FileExistsError, FileNotFoundError):
            continue
        _FOLDERS_MADE[candidate.absolute()] = made
        return candidate
    raise UsageError(f"run_dir: {path} and {MAX_SUFFIX - 2} suffixed names are all taken")


def remove_if_unused(run_dir: Path) -> None:
    """Remove a run directory that holds nothing but its lock file (a dry run, a refused run),
    and the parent folders claiming it made, while they are empty: nothing is left behind."""
    run_dir = Path(run_dir)
    if not run_dir.is_dir() or any(p.name != LOCK_FILE for p in run_dir.iterdir()):
        return
    (run_dir / LOCK_FILE).unlink(missing_ok=True)
    run_dir.rmdir()
    for folder in _FOLDERS_MADE.pop(run_dir.absolute(), []):  # the deepest first
        try:
            folder.rmdir()
        except OSError:  # another run's directory is in it now
            break


class RunBusy(UsageError):
    """Another live process is writing this run directory."""


@dataclass(frozen=True)
class Writer:
    """Who holds a run directory's lock, as written into writer.lock by the holder."""

    pid: int
    started: str  # local time, to the second
    what: str  # run, push, report

    def alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # someone else's process
            return True
        return True


def _read_writer(path: Path) -> Writer | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "null")
        return Writer(int(data["pid"]), str(data["started"]), str(data.get("what", "run")))
    except (OSError, ValueError, TypeError, KeyError):
        return None


def current_writer(run_dir: Path) -> Writer | None:
    """The live process writing `run_dir`, read from its lock file without taking the lock (a
    hint for readers such as `evalrun ls`; a dead holder's leftover reads as None)."""
    writer = _read_writer(Path(run_dir) / LOCK_FILE)
    return writer if writer is not None and writer.alive() else None


class RunLock:
    """`with RunLock(run_dir, "run"):` - this process is the one writer of `run_dir`.

    Raises `RunBusy` (a `UsageError`, exit 2) when another live process holds it. The directory
    is created if missing (an explicit `run_dir=`); the lock file stays, emptied, on release
    (removing it would let two processes lock two different files of the same name)."""

    def __init__(self, run_dir: Path, what: str = "run"):
        self.run_dir = Path(run_dir)
        self.path = self.run_dir / LOCK_FILE
        self.what = what
        self._fd: int | None = None

    def acquire(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise UsageError(f"{self.path}: cannot take the writer lock: {exc}") from exc
            raise RunBusy(self._busy_message()) from None
        me = {
            "pid": os.getpid(),
            "started": datetime.now().astimezone().isoformat(timespec="seconds"),
            "what": self.what,
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        self._fd = fd

    def _busy_message(self) -> str:
        writer = _read_writer(self.path)
        for _ in range(10):  # the holder may be between taking the lock and writing its pid
            if writer is not None:
                break
            time.sleep(0.02)
            writer = _read_writer(self.path)
        who = (
            f"pid {writer.pid} (started {writer.started}, {writer.what})"
            if writer
            else "another process"
        )
        return (
            f"run {self.run_dir} is being written by {who}; one writer at a time - wait for it "
            "to end (or stop it) and try again. Reading it (ls, show, diff, gate) needs no lock."
        )

    def release(self) -> None:
        if self._fd is None:
            return
        fd, self._fd = self._fd, None
        try:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def __enter__(self) -> RunLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
