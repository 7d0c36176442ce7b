"""Harbor's dataset registry: which tasks `<name>@<version>` means.

The registry is a JSON list of datasets, as Harbor 0.26 reads it:

```
[{"name": "terminal-bench", "version": "2.0", "description": "...",
  "tasks": [{"name": "hello-world", "git_url": "https://...", "git_commit_id": "<sha>",
             "path": "tasks/hello-world"}, ...]}, ...]
```

A task without `git_url` is a folder on disk (relative to a registry file on disk); one without
`git_commit_id` follows its repository's default branch. The file is read from a path or an
http(s) URL (`tasks_ref.registry`); a URL's last good copy is kept in the cache and used, with a
note, when the URL cannot be reached.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from evalrun.errors import UsageError
from evalrun.tasks.remote.reference import RegistryReference

FETCH_TIMEOUT_S = 60.0


class RegistryTask(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    git_url: str | None = None
    git_commit_id: str | None = None
    path: str


class RegistryDataset(BaseModel):
    model_config = ConfigDict(extra="ignore")

    name: str
    version: str
    description: str = ""
    tasks: list[RegistryTask]


@dataclass(frozen=True)
class Registry:
    """The datasets of one registry file; `note` says when a cached copy stood in for it."""

    location: str
    datasets: list[RegistryDataset]
    note: str | None = None

    def dataset(self, ref: RegistryReference) -> RegistryDataset:
        """The dataset `ref` names, or a `UsageError` with the names (versions) there are."""
        names = sorted({d.name for d in self.datasets})
        versions = [d.version for d in self.datasets if d.name == ref.name]
        if not versions:
            close = difflib.get_close_matches(ref.name, names, n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise UsageError(
                f"tasks_dir: {ref.text}: no dataset {ref.name!r} in the registry "
                f"{self.location}{hint}",
                hint=f"its datasets: {', '.join(names) or '(none)'}",
            )
        for found in self.datasets:
            if found.name == ref.name and found.version == ref.version:
                return found
        raise UsageError(
            f"tasks_dir: {ref.text}: the registry {self.location} has no version "
            f"{ref.version!r} of {ref.name}",
            hint=f"its versions: {', '.join(sorted(versions))}",
        )

    def local_root(self) -> Path | None:
        """The folder a task without git_url is relative to (None: a registry at a URL)."""
        return None if _is_url(self.location) else Path(self.location).parent


def load_registry(location: str, cache_root: Path) -> Registry:
    """Read and check the registry at `location` (a path or an http(s) URL)."""
    if not _is_url(location):
        path = Path(location).expanduser().resolve()
        try:
            text = path.read_text()
        except OSError as exc:
            raise UsageError(
                f"tasks_ref.registry: cannot read {path}: {exc.strerror or exc}"
            ) from exc
        return Registry(str(path), _parse(text, str(path)))
    import urllib.error  # here: a run of a folder never pays for the HTTP client's import
    import urllib.request

    copy = cache_root / "registries" / f"{hashlib.sha256(location.encode()).hexdigest()[:16]}.json"
    note = None
    try:
        with urllib.request.urlopen(location, timeout=FETCH_TIMEOUT_S) as response:
            text = response.read().decode()
    except (urllib.error.URLError, OSError, UnicodeDecodeError) as exc:
        if not copy.is_file():
            raise UsageError(
                f"tasks_ref.registry: cannot fetch {location} ({exc}) and no copy is cached"
            ) from exc
        text = copy.read_text()
        note = f"registry {location} not reachable ({exc}); using its copy from the cache"
    else:
        copy.parent.mkdir(parents=True, exist_ok=True)
        tmp = copy.with_suffix(f".{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, copy)
    return Registry(location, _parse(text, location), note)


def _parse(text: str, where: str) -> list[RegistryDataset]:
    try:
        rows = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"tasks_ref.registry: {where} is not JSON: {exc}") from exc
    if not isinstance(rows, list):
        raise UsageError(f"tasks_ref.registry: {where}: expected a JSON list of datasets")
    datasets = []
    for index, row in enumerate(rows):
        try:
            datasets.append(RegistryDataset.model_validate(row))
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise UsageError(
                f"tasks_ref.registry: {where}: dataset [{index}] field {field!r}: {first['msg']}"
            ) from exc
    return datasets


def _is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))
