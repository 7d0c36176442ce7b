"""Suites by reference: `tasks_dir=git+<url>@<ref>#<sub>` and a registry's `name@version`,
resolved to a folder of verified, cached checkouts before anything runs.

`resolve` turns a `tasks_dir` value into the folder the loader reads and, for a reference, the
`TasksSource` the run records (URL, commit, sub-folder, registry dataset). A git reference is
one checkout (`gitcache`); a registry dataset (`registry`) is a folder of links, one per task,
into the checkouts its tasks come from, kept under `<cache>/datasets/`. Every mistake - an
unknown dataset or version, a ref the remote lacks, a remote out of reach with nothing cached, a
missing sub-folder, a changed checkout - is a `UsageError` naming what was asked.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from evalrun.config.schema import TasksRefConf
from evalrun.errors import UsageError
from evalrun.models.plan import Checkout, TasksSource
from evalrun.tasks.remote.gitcache import RepoCache
from evalrun.tasks.remote.reference import GitReference, RegistryReference, parse
from evalrun.tasks.remote.registry import RegistryDataset, load_registry


@dataclass(frozen=True)
class Resolved:
    """The folder to load tasks from; what it came from (None: a folder given by path); and
    what the resolution wants said (a branch served from the cache, a cached registry)."""

    folder: Path
    source: TasksSource | None = None
    notes: list[str] = field(default_factory=list)


def cache_root(conf: TasksRefConf) -> Path:
    """`tasks_ref.cache_dir`, else `$XDG_CACHE_HOME/evalrun/suites` (~/.cache/evalrun/suites)."""
    if conf.cache_dir:
        return Path(conf.cache_dir).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "evalrun" / "suites"


def resolve(value: str, conf: TasksRefConf) -> Resolved:
    """The folder `value` means (see `evalrun.tasks.remote.reference`)."""
    ref = parse(value)
    if ref is None:
        return Resolved(Path(value).expanduser().resolve())
    if isinstance(ref, GitReference):
        return resolve_git(ref, cache_root(conf))
    return resolve_dataset(ref, conf.registry, cache_root(conf))


def resolve_git(ref: GitReference, root: Path) -> Resolved:
    served = RepoCache(root, ref.url).serve(ref.ref, ref.text)
    folder = subfolder(served.folder, ref.subdir, ref.text, served.checkout)
    checkout = served.checkout.model_copy(update={"subdir": ref.subdir})
    source = TasksSource(reference=ref.text, checkouts=[checkout])
    return Resolved(folder, source, [served.note] if served.note else [])


def subfolder(checkout_dir: Path, subdir: str, asked: str, checkout: Checkout) -> Path:
    """`checkout_dir/subdir`, or a `UsageError` naming the commit and what is there (or that
    `subdir` leaves the checkout)."""
    folder = checkout_dir / subdir if subdir else checkout_dir
    if Path(subdir).is_absolute() or ".." in Path(subdir).parts:
        raise UsageError(f"tasks_dir: {asked}: the folder {subdir!r} is outside its repository")
    if folder.is_dir():
        return folder
    top = sorted(p.name + "/" for p in checkout_dir.iterdir() if p.is_dir() and p.name != ".git")
    raise UsageError(
        f"tasks_dir: {asked}: commit {checkout.commit[:12]} of {checkout.url} has no folder "
        f"{subdir!r}",
        hint=f"its top-level folders: {', '.join(top) or '(none)'}",
    )


def resolve_dataset(ref: RegistryReference, location: str, root: Path) -> Resolved:
    registry = load_registry(location, root)
    dataset = registry.dataset(ref)
    notes = [registry.note] if registry.note else []
    links: dict[str, Path] = {}
    checkouts: dict[tuple[str, str], Checkout] = {}
    for task in dataset.tasks:
        if task.git_url is None:
            base = registry.local_root()
            if base is None:
                raise UsageError(
                    f"tasks_dir: {ref.text}: task {task.name!r} has no git_url, and a registry "
                    f"read from a URL ({location}) cannot point at local folders"
                )
            target = (base / task.path).resolve()
        else:
            served = RepoCache(root, task.git_url).serve(task.git_commit_id, ref.text)
            notes += [served.note] if served.note and served.note not in notes else []
            checkouts[(served.checkout.url, served.checkout.commit)] = served.checkout
            target = subfolder(served.folder, task.path.strip("/"), ref.text, served.checkout)
        if not target.is_dir():
            raise UsageError(f"tasks_dir: {ref.text}: task {task.name!r}: no folder {target}")
        links[_task_name(task.name, ref, links)] = target
    source = TasksSource(
        reference=ref.text,
        checkouts=list(checkouts.values()),
        registry=f"{dataset.name}@{dataset.version}",
        registry_file=registry.location,
    )
    return Resolved(dataset_folder(root, dataset, links), source, notes)


def _task_name(name: str, ref: RegistryReference, taken: dict[str, Path]) -> str:
    if not name or "/" in name or name.startswith(".") or name in taken:
        problem = "appears twice" if name in taken else "cannot be a folder name"
        raise UsageError(f"tasks_dir: {ref.text}: the registry's task name {name!r} {problem}")
    return name


def dataset_folder(root: Path, dataset: RegistryDataset, links: dict[str, Path]) -> Path:
    """`<root>/datasets/<name>@<version>-<digest>/`: a link per task, named as the registry
    names it. The digest covers every link, so a registry entry that changes gets a new folder;
    the folder is made under a temporary name and renamed, so a reader never sees half of it."""
    digest = hashlib.sha256(
        json.dumps(sorted((k, str(v)) for k, v in links.items())).encode()
    ).hexdigest()[:12]
    folder = root / "datasets" / f"{dataset.name}@{dataset.version}-{digest}"
    if folder.is_dir():
        return folder
    tmp = folder.with_name(f".{folder.name}-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name, target in links.items():
        (tmp / name).symlink_to(target, target_is_directory=True)
    try:
        os.rename(tmp, folder)
    except OSError:  # another run made it first: the same links
        shutil.rmtree(tmp, ignore_errors=True)
    return folder
