"""A user's evalrun project: their own config and tasks, extending the packaged config.

```
my-evals/                      the folder `evalrun` runs from (`evalrun init` writes one)
  conf/
    evalrun.yaml               the project's primary config: its defaults list pulls in evalrun's
                               packaged `config` (put on Hydra's search path with
                               `hydra.searchpath: [pkg://evalrun.bundled.conf]`), then sets the
                               project's own knobs (`tasks_dir: tasks`, ...)
    agent/my_agent.yaml        the project's own config group options, found beside the packaged
    provider/ profile/ slice/  ones; the project's folder comes first on the search path
  tasks/                       the project's suite
  runs/                        where its runs land (relative to the current directory, always)
```

This is Hydra's own way of extending an installed app's config: a primary config of your own
whose defaults list names the app's, and a search path entry for the app's config package. From
any other folder evalrun composes its packaged `config.yaml` alone. `evalrun info` shows which
folder every group option comes from; `evalrun --info searchpath` is Hydra's own view.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib.resources import files
from pathlib import Path
from typing import Any

from evalrun.bundled import CONF_DIR

PROJECT_CONF_DIR = "conf"
PROJECT_CONFIG_NAME = "evalrun"  # conf/evalrun.yaml marks a folder as an evalrun project
PACKAGED_CONFIG_NAME = "config"  # evalrun's own conf/config.yaml


@dataclass(frozen=True)
class ConfigLocation:
    """Where Hydra's primary config comes from: a project's conf/evalrun.yaml, or the packaged
    conf/config.yaml when the current folder is no project (`project` is None then)."""

    config_dir: Path
    config_name: str
    project: Path | None


def locate_config(cwd: Path | None = None) -> ConfigLocation:
    """The project in `cwd` (default: the current directory), if it holds conf/evalrun.yaml."""
    folder = (Path.cwd() if cwd is None else cwd).resolve()
    conf = folder / PROJECT_CONF_DIR
    if (conf / f"{PROJECT_CONFIG_NAME}.yaml").is_file():
        return ConfigLocation(conf, PROJECT_CONFIG_NAME, folder)
    return ConfigLocation(CONF_DIR, PACKAGED_CONFIG_NAME, None)


def project_above(cwd: Path | None = None) -> Path | None:
    """The nearest folder above `cwd` holding an evalrun project (conf/evalrun.yaml), if any:
    a command run from inside a project's tasks/ is not in the project, and says so."""
    folder = (Path.cwd() if cwd is None else cwd).resolve()
    for parent in folder.parents:
        if (parent / PROJECT_CONF_DIR / f"{PROJECT_CONFIG_NAME}.yaml").is_file():
            return parent
    return None


@dataclass(frozen=True)
class SearchPathEntry:
    """One entry of Hydra's config search path, with the folder it stands for (None for the
    schema store and anything not on disk)."""

    provider: str
    url: str
    folder: Path | None

    @property
    def label(self) -> str:
        if self.folder == CONF_DIR:
            return "evalrun"
        return "project" if self.provider == "main" else self.provider


def search_path(cfg: Any) -> list[SearchPathEntry]:
    """The search path a config was composed with (`compose(..., return_hydra_config=True)`),
    in Hydra's order: the first entry holding `<group>/<option>.yaml` wins."""
    return [
        SearchPathEntry(s.provider, f"{s.schema}://{s.path}", _folder(s.schema, s.path))
        for s in cfg.hydra.runtime.config_sources
    ]


def _folder(schema: str, path: str) -> Path | None:
    if schema == "file":
        return Path(path).resolve()
    if schema == "pkg":
        try:
            return Path(str(files(path))).resolve()
        except (ModuleNotFoundError, TypeError, ValueError):
            return None
    return None


@dataclass(frozen=True)
class GroupOrigins:
    """One config group: the option chosen, where it comes from, and every option per source."""

    group: str
    chosen: str | None
    chosen_from: str | None
    options: dict[str, list[str]]  # source label -> option names (schemas left out)


def group_origins(cfg: Any) -> list[GroupOrigins]:
    """For every evalrun config group (hydra's own left out): which search path entry the chosen
    option comes from, and which options each entry offers."""
    entries = [
        (e.label, e.folder)
        for e in search_path(cfg)
        if e.folder is not None and e.provider != "hydra"
    ]
    choices = dict(cfg.hydra.runtime.choices)
    groups = sorted(
        {p.name for _, folder in entries for p in folder.iterdir() if p.is_dir() and _has_yaml(p)}
    )
    result = []
    for group in groups:
        options: dict[str, list[str]] = {}
        for label, folder in entries:
            names = sorted(p.stem for p in (folder / group).glob("*.yaml"))
            if names:
                options.setdefault(label, []).extend(names)
        chosen = choices.get(group)
        chosen_from = next(
            (label for label, folder in entries if (folder / group / f"{chosen}.yaml").is_file()),
            None,
        )
        result.append(GroupOrigins(group, chosen, chosen_from, options))
    return result


def _has_yaml(folder: Path) -> bool:
    return any(folder.glob("*.yaml"))
