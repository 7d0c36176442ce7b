"""`evalrun info [overrides]`: the install, the project, the config search path, and where every
config option comes from (`evalrun.config.project`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.config.project import ConfigLocation, group_origins, locate_config, search_path
from evalrun.console import make_console
from evalrun.errors import ExitCode


def info_command(args: list[str], console: Console) -> int:
    """evalrun info [overrides]: install, project, search path, where every option comes from."""
    parser = CommandParser(
        "info",
        "Install, project, search path, and where every config option comes from.",
        overrides=True,
    )
    overrides = parser.parse(args).overrides
    render_info(compose_config(overrides, return_hydra_config=True), locate_config(), console)
    return ExitCode.OK


def render_info(cfg: Any, where: ConfigLocation, console: Console) -> None:
    """`evalrun info`: the install, the project, the search path, and per config group the
    option chosen and the options each search path entry offers."""
    from evalrun.cli.install import version_text
    from evalrun.run.plan import resolve_tasks_dir
    from evalrun.tasks.remote.reference import parse

    out = make_console(width=max(console.width, 120)) if not console.is_terminal else console
    out.print(version_text().splitlines()[0], highlight=False, markup=False)
    if where.project is None:
        out.print("project      none here (conf/evalrun.yaml): evalrun's packaged config alone;")
        out.print("             `evalrun init` starts a project", highlight=False, markup=False)
    else:
        out.print(f"project      {where.project}", highlight=False, markup=False)
    out.print(f"config       {where.config_dir / where.config_name}.yaml", highlight=False)
    reference = bool(cfg.tasks_dir) and parse(cfg.tasks_dir) is not None
    shown = f"{cfg.tasks_dir} (a reference; checked out when a run starts)" if reference else None
    out.print(f"tasks_dir    {shown or resolve_tasks_dir(cfg.tasks_dir).folder}", highlight=False)
    out.print(f"runs land in {Path(cfg.hydra.run.dir).parent.resolve()}", highlight=False)
    paths = Table(title="config search path (the first entry holding an option wins)")
    for column in ("from", "provider", "search path", "folder"):
        paths.add_column(column)
    for entry in search_path(cfg):
        folder = str(entry.folder) if entry.folder is not None else ""
        paths.add_row(entry.label, entry.provider, entry.url, folder)
    out.print(paths)
    groups = Table(title="config groups: the chosen option and where every option comes from")
    for column in ("group", "chosen", "from", "options"):
        groups.add_column(column)
    for origin in group_origins(cfg):
        listed = "; ".join(f"{src}: {', '.join(names)}" for src, names in origin.options.items())
        groups.add_row(origin.group, origin.chosen or "", origin.chosen_from or "", listed)
    out.print(groups)
