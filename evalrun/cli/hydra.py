"""Hydra glue, in one place: composing the config, and `evalrun [overrides]` run through Hydra.

`compose_config` composes the config from overrides outside of `@hydra.main` (the subcommands in
`evalrun.cli.commands` and the tests use it). `run_hydra` hands the command line to Hydra, so
`--cfg job`, `-m` and `--help` work as in any Hydra app; every Hydra job runs one evaluation.
Before Hydra sees them, the overrides a user typed are eased: `resume=<run-dir>` replays a run's
overrides (`expand_resume`), and a key of a free-form mapping is given Hydra's `++`
(`open_mapping_overrides`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import open_dict

from evalrun.analysis.configdiff import under
from evalrun.cli.usage import print_error
from evalrun.config.project import locate_config, project_above
from evalrun.config.schema import CONF_DIR, register_configs
from evalrun.console import make_console
from evalrun.errors import ExitCode, UsageError

if TYPE_CHECKING:
    from hydra.types import RunMode
    from omegaconf import DictConfig

OPEN_MAPPINGS = (
    "agent.env",
    "agent.kwargs",
    "agent.model_settings",
    "provider.headers_env",
    "tracker.headers_env",
    "profile.floors",
    "profile.ceilings",
    "profile.max_drop",
)

_exit_codes: list[int] = []


def open_mapping_overrides(args: list[str]) -> list[str]:
    """`agent.env.NAME=value` and `profile.floors={pass@1: 0.8}` add keys to a free-form mapping
    (merged into what it holds): Hydra wants `++` for that, so it is given here."""

    def opens_a_mapping(arg: str) -> bool:
        key, equals, _ = arg.partition("=")
        return bool(equals) and under(key, OPEN_MAPPINGS)

    return [f"++{arg}" if opens_a_mapping(arg) else arg for arg in args]


def quote_references(args: list[str]) -> list[str]:
    """`tasks_dir=git+<url>@<ref>#<sub>`: Hydra's override grammar has no bare `#`, so such a
    value is quoted for it (users need not know); a value quoted already is left alone."""

    def quoted(arg: str) -> str:
        key, _, value = arg.partition("=")
        if key.lstrip("+~") != "tasks_dir" or "#" not in value or value[:1] in ("'", '"'):
            return arg
        return arg if "'" in value else f"{key}='{value}'"

    return [quoted(arg) for arg in args]


def compose_config(
    overrides: list[str], *, return_hydra_config: bool = False, config_name: str | None = None
) -> DictConfig:
    """Compose the config with Hydra overrides, outside of `@hydra.main`: the project's
    conf/evalrun.yaml in an evalrun project folder, else the packaged conf/config.yaml.
    `config_name` composes another packaged primary config instead (`online`: conf/online.yaml),
    with a project's conf/ folder on the search path so its own group options are found."""
    from hydra import compose, initialize_config_dir

    from evalrun.config.usage import refuse_additions, translating

    register_configs()
    where = locate_config()
    config_dir, name = where.config_dir, where.config_name
    if config_name is not None:
        config_dir, name = CONF_DIR, config_name
        if where.project is not None:
            overrides = [f"hydra.searchpath=[file://{where.config_dir}]", *overrides]
    overrides = quote_references(open_mapping_overrides(overrides))

    def composed() -> DictConfig:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            return compose(config_name=name, overrides=overrides, return_hydra_config=True)

    cfg: DictConfig = translating(composed)  # outside Hydra's context: translating composes too
    refuse_additions(cfg, overrides, cfg.hydra.runtime.choices)
    if not return_hydra_config:
        with open_dict(cfg):
            del cfg["hydra"]
    return cfg


def expand_resume(args: list[str]) -> list[str]:
    """`resume=<run-dir>` -> the overrides that run was composed from, then the new ones, then
    `run_dir=<run-dir>`. The runner refuses if the result-relevant config no longer matches;
    a redacted override is never replayed (`evalrun.rundir.log.RunLog.replayed_overrides`)."""
    resumes = [a for a in args if a.startswith("resume=")]
    if not resumes:
        return args
    from evalrun.rundir.log import RunLog

    run_dir = Path(resumes[-1].split("=", 1)[1]).expanduser()
    try:
        run = RunLog.open(run_dir)
    except UsageError as exc:
        raise UsageError(f"resume: {exc}") from None
    if run.plan.regrade_of is not None:  # resuming would run the agent, which a regrade never does
        raise UsageError(
            f"resume: {run_dir} is a regrade of {run.plan.regrade_of.run_dir}, not a run to "
            f"resume; regrade that run again: evalrun regrade {run.plan.regrade_of.run_dir}"
        )
    rest = [a for a in args if not a.startswith("resume=")]
    return [*run.replayed_overrides(rest), *rest, f"run_dir={run_dir}"]


def _run_job(cfg: DictConfig) -> None:
    """The body of every Hydra job: one evaluation run in Hydra's output directory (none once a
    stop signal stopped the sweep: `evalrun.cli.callbacks`)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from evalrun.config.usage import refuse_additions
    from evalrun.run.runner import run

    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    # as typed: an `${oc.env:NAME}` in an override stays a reference (never its secret value)
    task_overrides = OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False)
    assert isinstance(task_overrides, list)
    overrides = [str(o) for o in task_overrides if not str(o).startswith("run_dir=")]
    multirun = hydra_cfg.mode is not None and hydra_cfg.mode.name == "MULTIRUN"
    console = make_console(wide=True)
    try:
        refuse_additions(cfg, overrides, hydra_cfg.runtime.choices)
        cfg.run_dir = str(run_dir)
        if multirun:
            from evalrun.cli.callbacks import enter_job, job_header, sweep_stopped
            from evalrun.run.engine import stopped_by

            enter_job()
            header, stopped = job_header(hydra_cfg.job.num, overrides), sweep_stopped()
            if stopped:
                how = stopped_by(stopped)
                console.print(f"{header}: not started, the sweep was {how}", soft_wrap=True)
                return
            console.print(header, soft_wrap=True)
        _exit_codes.append(run(cfg, console, overrides=overrides))
        if multirun:
            from evalrun.cli.callbacks import job_ended

            job_ended(_exit_codes[-1])
            # The sweep page covers the jobs so far (its path is printed at the end); a dry run
            # leaves no job folder, so a dry sweep has no page.
            if not cfg.dry_run:
                from evalrun.report.sweep_html import render_sweep_html

                render_sweep_html(Path(hydra_cfg.sweep.dir))
    except UsageError as exc:
        print_error(exc)
        sys.exit(exc.exit_code)
    finally:
        from evalrun.rundir.store import remove_if_unused

        remove_if_unused(run_dir)  # a dry run or a refused new run leaves nothing behind


def say_not_in_project(project: Path) -> None:
    """On stderr: the current folder is inside a project but not at its root, so evalrun runs
    with its packaged config and the bundled suite - not what someone in the project expects."""
    print(
        f"note: {Path.cwd()} is inside the evalrun project {project} but not its root: using "
        f"evalrun's packaged config and bundled suite. Run from {project} for the project's.",
        file=sys.stderr,
    )


def _mode_from_the_command_line(
    self: object, config_name: str | None, overrides: list[str]
) -> RunMode | None:
    """Hydra's `get_mode`, without composing: evalrun's configs never set `hydra.mode`, so the
    mode is the command line's - a `hydra.mode=` override, else `-m` or not (what Hydra falls
    back to on None)."""
    from hydra.types import RunMode

    given = [o.partition("=")[2] for o in overrides if o.startswith("hydra.mode=")]
    return RunMode[given[-1]] if given and given[-1] in RunMode.__members__ else None


def _help(overrides: list[str]) -> int:
    """`evalrun [overrides] --help`: evalrun's help page (`evalrun.cli.help_page`)."""
    from evalrun.cli.help_page import help_text

    cfg = compose_config(overrides, return_hydra_config=True)
    make_console(soft_wrap=True).print(help_text(cfg))
    return ExitCode.OK


def run_hydra(args: list[str], commands: Iterable[str]) -> int:
    """`evalrun [flags] [overrides]`: a run (or with `-m` a sweep) through `@hydra.main`; the
    worst exit code of its jobs, their gates and a stop signal. `commands` are the subcommands'
    names, for the "did you mean" of a mistyped one."""
    import hydra
    from hydra._internal.hydra import Hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from evalrun.cli.usage import check_args
    from evalrun.config.usage import from_hydra
    from evalrun.rundir.dirs import remove_unused_sweeps

    flags, overrides = check_args(args, commands)
    if {"--help", "-h"} & set(flags) and not {"--hydra-help", "--cfg", "-c", "--info"} & set(flags):
        return _help(overrides)
    register_configs()
    where = locate_config()
    bundled = not any(o.startswith("tasks_dir=") for o in overrides)
    if where.project is None and bundled and (above := project_above()) is not None:
        say_not_in_project(above)
    # Hydra 1.3 composes the whole config once only to read hydra.mode, then again to run: a
    # third of a dry run's start-up. Compose once (bench/startup.py measures it).
    Hydra.get_mode = _mode_from_the_command_line  # type: ignore[method-assign]
    app = hydra.main(
        config_path=str(where.config_dir), config_name=where.config_name, version_base="1.3"
    )(_run_job)
    sys.argv = [sys.argv[0], *flags, *overrides]  # Hydra parses sys.argv itself
    # Hydra's errors come here as exceptions (not printed with the search path and exit 1),
    # so that they are said in one line like every other usage error.
    os.environ["HYDRA_FULL_ERROR"] = "1"
    try:
        app()
    except (HydraException, OmegaConfBaseException) as exc:  # composing a run or a sweep's job
        raise from_hydra(exc) from exc
    finally:
        remove_unused_sweeps()  # a sweep whose jobs all failed to start leaves no folder
    from evalrun.cli.callbacks import gate_exit_code, stop_exit_code  # jobs run elsewhere too

    return max([*_exit_codes, gate_exit_code(), stop_exit_code()])
