"""The run directory: the source of truth for a run, written as the run goes.

```
<run_dir>/
  config.yaml      the resolved config, secrets redacted
  overrides.yaml   the command-line overrides it was composed from (replayed by a resume)
  plan.json        tasks with fingerprints, cells, run id
  samples.jsonl    one SampleRecord per finished sample, appended, flushed and fsynced
  summary.json     metrics over samples.jsonl (rewritten at the end of a run)
  samples/<task>/<trial>/{setup,agent,verify}.log
```
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel

from evalrun.records import CellKey, SampleDigest, SampleRecord

SAMPLES_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
PLAN_FILE = "plan.json"
CONFIG_FILE = "config.yaml"
OVERRIDES_FILE = "overrides.yaml"


class RunStore:
    """Appends records crash-safely and reads them back, tolerating a half-written last line."""

    def __init__(self, run_dir: Path):
        self.run_dir = Path(run_dir)
        self.samples_path = self.run_dir / SAMPLES_FILE
        self._handle = None

    def create(self) -> None:
        self.run_dir.mkdir(parents=True, exist_ok=True)

    def write_json(self, name: str, data: Any) -> Path:
        path = self.run_dir / name
        tmp = path.with_suffix(path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=False, default=str) + "\n")
        os.replace(tmp, path)
        return path

    def write_config(self, config: dict[str, Any]) -> None:
        (self.run_dir / CONFIG_FILE).write_text(yaml.safe_dump(config, sort_keys=False))

    def write_overrides(self, overrides: list[str]) -> None:
        (self.run_dir / OVERRIDES_FILE).write_text(yaml.safe_dump(list(overrides)))

    def read_overrides(self) -> list[str]:
        path = self.run_dir / OVERRIDES_FILE
        return list(yaml.safe_load(path.read_text()) or []) if path.exists() else []

    def append(self, record: SampleRecord) -> None:
        if self._handle is None:
            _drop_torn_tail(self.samples_path)
            self._handle = self.samples_path.open("a", encoding="utf-8")
        self._handle.write(record.model_dump_json() + "\n")
        self._handle.flush()
        os.fsync(self._handle.fileno())

    def close(self) -> None:
        if self._handle is not None:
            self._handle.close()
            self._handle = None

    def write_log(self, key: CellKey, name: str, text: str) -> None:
        folder = self.run_dir / "samples" / key.task_id / str(key.trial)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8", errors="replace")

    def records(self) -> list[SampleRecord]:
        """Every complete record; a torn last line (a crash mid-write) is skipped."""
        return list(iter_records(self.samples_path, SampleRecord))

    def digests(self) -> list[SampleDigest]:
        """Every complete record, parsed only as far as metrics and resume need."""
        return list(iter_records(self.samples_path, SampleDigest))


def _drop_torn_tail(path: Path) -> None:
    """Cut a half-written last line left by a crash, so the next append starts a fresh line."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with path.open("rb+") as handle:
        data = handle.read()
        if data.endswith(b"\n"):
            return
        handle.truncate(data.rfind(b"\n") + 1)


M = TypeVar("M", bound=BaseModel)


def iter_records(path: Path, model: type[M]) -> Iterator[M]:
    if not path.exists():
        return
    with path.open("rb") as handle:
        for raw in handle:
            if not raw.endswith(b"\n") or not raw.strip():
                continue  # torn final line from a crash, or a blank line
            try:
                yield model.model_validate_json(raw)
            except ValueError:
                continue
