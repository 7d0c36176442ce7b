"""The `evalrun` command: a thin shell that composes the config and hands it to plain functions.

`evalrun [overrides]` runs an evaluation through Hydra (so `--cfg job`, `-m` and `--help` work as
in any Hydra app). `evalrun <command> [args]` runs one of the subcommands below, composing the
same config from the same overrides where it needs one.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from omegaconf import open_dict
from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.config.project import locate_config
from evalrun.config.schema import CONF_DIR, register_configs
from evalrun.console import make_console, styled
from evalrun.errors import UsageError
from evalrun.extras import require

if TYPE_CHECKING:
    from hydra.types import RunMode
    from omegaconf import DictConfig

_err = make_console(stderr=True, soft_wrap=True)


def _print_error(exc: BaseException) -> None:
    """One line on stderr (and a hint line when there is one); the message is text, not markup
    (`pip install 'evalrun[docker]'`)."""
    _err.print(styled("[red]error:[/]"), str(exc))
    hint = getattr(exc, "hint", None)
    if hint:
        _err.print(styled("[dim]hint:[/]"), hint)


def _console() -> Console:
    """The console for reports; wide enough for the task table when output is not a terminal."""
    return make_console(wide=True)


def compose_config(
    overrides: list[str], *, return_hydra_config: bool = False, config_name: str | None = None
) -> DictConfig:
    """Compose the config with Hydra overrides, outside of `@hydra.main`: the project's
    conf/evalrun.yaml in an evalrun project folder, else the packaged conf/config.yaml.
    `config_name` composes another packaged primary config instead (`online`: conf/online.yaml),
    with a project's conf/ folder on the search path so its own group options are found."""
    from hydra import compose, initialize_config_dir

    from evalrun.cli.usage import refuse_additions, translating

    register_configs()
    where = locate_config()
    config_dir, name = where.config_dir, where.config_name
    if config_name is not None:
        config_dir, name = CONF_DIR, config_name
        if where.project is not None:
            overrides = [f"hydra.searchpath=[file://{where.config_dir}]", *overrides]
    overrides = open_mapping_overrides(overrides)

    def composed() -> DictConfig:
        with initialize_config_dir(config_dir=str(config_dir), version_base="1.3"):
            return compose(config_name=name, overrides=overrides, return_hydra_config=True)

    cfg: DictConfig = translating(composed)  # outside Hydra's context: translating composes too
    refuse_additions(cfg, overrides, cfg.hydra.runtime.choices)
    if not return_hydra_config:
        with open_dict(cfg):
            del cfg["hydra"]
    return cfg


def cmd_check(args: list[str]) -> int:
    """evalrun check [--strict] [--tamper=KINDS] [overrides]: gold must pass; untouched, wrong/*
    and every reward hack (tamper) must fail.

    Exit 1 when an oracle is dishonest or gameable, else 4 when a task folder cannot be loaded,
    else 0; a stop signal cancels the samples in flight and exits 130 (Ctrl-C), 143 (SIGTERM) or
    129 (SIGHUP), a second one at once (`evalrun.run.engine.cancelled_on_stop`). `--strict`
    (= strict_formats=true) refuses keys a foreign format's runner would ignore.
    `--tamper=verifier|harness|none` runs only the reward hacks the verifier (or the harness) must
    stop, or none; the default runs every one the backend can be held to.
    """
    import asyncio

    from evalrun.honesty.check import check_tasks, report
    from evalrun.honesty.tamper import DEFENDERS
    from evalrun.run.engine import cancelled_on_stop
    from evalrun.run.plan import EXIT_UNLOADABLE, build

    parser = CommandParser(
        "check",
        "Prove every oracle honest: gold must pass; untouched, wrong/* and the reward hacks must "
        "fail (suite=probes: the probes' scripted good and bad runs).",
        overrides=True,
    )
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse keys a foreign format's runner would ignore (= strict_formats=true)",
    )
    parser.add_argument(
        "--tamper",
        choices=["all", "verifier", "harness", "none"],
        default="all",
        help="which reward hacks to play: those the verifier must stop, those the sandbox "
        "harness must stop, all (default) or none",
    )
    options = parser.parse(args)
    defended_by = {"all": DEFENDERS, "none": ()}.get(options.tamper, (options.tamper,))
    overrides = [*options.overrides, *(["strict_formats=true"] if options.strict else [])]
    plan = build(compose_config(overrides))
    plan.backend.preflight()
    console = _console()
    if plan.suite == "probes":  # scripted good/bad runs instead of gold/untouched/wrong
        from evalrun.honesty.probes import run_check

        return run_check(plan, console, defended_by)
    console.print(
        f"checking {len(plan.tasks)} tasks in {plan.tasks_dir} on sandbox={plan.backend.name}"
    )
    work = check_tasks(list(plan.tasks), plan.backend, plan.limits, plan.concurrency, defended_by)
    results = asyncio.run(cancelled_on_stop(work, plan.backend, "the check's samples"))
    harness_proven = plan.backend.isolated or "harness" not in defended_by
    verdicts = report(results, console, plan.skipped, harness_proven)
    for kind, ids in (("dishonest", verdicts.dishonest), ("gameable", verdicts.gameable)):
        if ids:
            console.print(styled("[red]{} {} oracle(s):[/]", len(ids), kind), ", ".join(ids))
    if verdicts.dishonest or verdicts.gameable:
        return 1
    if plan.unloadable:
        console.print(
            styled(
                "[yellow]{} oracles honest; {} task folders cannot load[/]",
                len(plan.tasks),
                len(plan.unloadable),
            )
        )
        return EXIT_UNLOADABLE
    console.print(styled("[green]all {} oracles honest[/]", len(plan.tasks)))
    return 0


def cmd_ls(args: list[str]) -> int:
    """evalrun ls [runs_dir]: runs, newest first (when, agent, sandbox, pass@1, cost)."""
    from evalrun.report.commands import ls

    return ls(args, _console())


def cmd_show(args: list[str]) -> int:
    """evalrun show <run-dir> [task-id]: a run's terminal report again (complete or partial), or
    one task's view."""
    from evalrun.report.commands import show

    return show(args, _console())


def cmd_report(args: list[str]) -> int:
    """evalrun report <run-dir>: write report.html and junit.xml again."""
    from evalrun.report.commands import report

    return report(args, _console())


def cmd_diff(args: list[str]) -> int:
    """evalrun diff <run-a> <run-b> [--json] [--html PATH]: config, task-set and metric deltas."""
    from evalrun.analysis.diff import diff_command

    return diff_command(args, _console())


def cmd_gate(args: list[str]) -> int:
    """evalrun gate <run-dir> profile=<name> [baseline=<run-dir>] [--allow-partial]."""
    from evalrun.analysis.gate import gate_command

    return gate_command(args, compose_config, _console())


def cmd_power(args: list[str]) -> int:
    """evalrun power [RUN_DIR] [overrides] [--delta D] [--width W]: tasks x trials a run needs."""
    from evalrun.analysis.power import power_command

    return power_command(args, compose_config, _console())


def cmd_image(args: list[str]) -> int:
    """evalrun image build [--force] [IMAGE]: build sandbox=docker's base image offline.

    Runs the bundled build-base-image.sh (debootstrap from the apt mirror this machine uses, then
    `docker import`); `evalrun setup docker` also starts an engine first.
    """
    from evalrun.cli.install import image_command

    return image_command(args)


def cmd_setup(args: list[str]) -> int:
    """evalrun setup docker [--force] [IMAGE]: the one-time system pieces of sandbox=docker."""
    from evalrun.cli.install import setup_command

    return setup_command(args, _console())


def cmd_init(args: list[str]) -> int:
    """evalrun init [DIR]: a starter project (config extending evalrun's, an example task)."""
    from evalrun.cli.scaffold.commands import init_command

    return init_command(args, _console())


def cmd_new_task(args: list[str]) -> int:
    """evalrun new-task NAME [overrides]: scaffold a task folder in the suite's tasks_dir."""
    from evalrun.cli.scaffold.commands import new_task_command

    return new_task_command(args, compose_config, _console())


def cmd_info(args: list[str]) -> int:
    """evalrun info [overrides]: install, project, search path, where every option comes from."""
    from evalrun.config.project import render_info

    parser = CommandParser(
        "info",
        "Install, project, search path, and where every config option comes from.",
        overrides=True,
    )
    overrides = parser.parse(args).overrides
    render_info(compose_config(overrides, return_hydra_config=True), locate_config(), _console())
    return 0


def cmd_push(args: list[str]) -> int:
    """evalrun push <run-dir> [tracker.<key>=...]: send a finished run to Opik (no duplicates)."""
    from evalrun.integrations.opik.push import push_command

    return push_command(args, compose_config, _console())


def cmd_sync(args: list[str]) -> int:
    """evalrun sync [tasks_dir=...] [tracker.<key>=...]: upsert the suite's Opik dataset."""
    from evalrun.integrations.opik.push import sync_command

    return sync_command(args, compose_config, _console())


def cmd_online(args: list[str]) -> int:
    """evalrun online project=<p> [judge=...] [since=...] [limit=...] [sample_rate=...]
    [budget_usd=...] [profile=...] | online resume=<run-dir> | online rule create|list [...]:
    judge a live Opik project's conversations with the offline judges (conf/online.yaml)."""
    from evalrun.integrations.opik.commands import online_command

    return online_command(args, compose_config, _console())


def cmd_agents(args: list[str]) -> int:
    """evalrun agents install NAME... [--force] | evalrun agents list: the agent CLI cache."""
    from evalrun.agents.cache import agents_command

    return agents_command(args, compose_config, _console())


COMMANDS: dict[str, Callable[[list[str]], int]] = {
    "check": cmd_check,
    "push": cmd_push,
    "sync": cmd_sync,
    "ls": cmd_ls,
    "show": cmd_show,
    "report": cmd_report,
    "gate": cmd_gate,
    "diff": cmd_diff,
    "power": cmd_power,
    "image": cmd_image,
    "setup": cmd_setup,
    "init": cmd_init,
    "new-task": cmd_new_task,
    "info": cmd_info,
    "online": cmd_online,
    "agents": cmd_agents,
}

_exit_codes: list[int] = []


def _run_job(cfg: DictConfig) -> None:
    """The body of every Hydra job: one evaluation run in Hydra's output directory (none once a
    stop signal stopped the sweep: `evalrun.cli.callbacks`)."""
    from hydra.core.hydra_config import HydraConfig
    from omegaconf import OmegaConf

    from evalrun.cli.usage import refuse_additions
    from evalrun.run.runner import run

    hydra_cfg = HydraConfig.get()
    run_dir = Path(hydra_cfg.runtime.output_dir)
    # as typed: an `${oc.env:NAME}` in an override stays a reference (never its secret value)
    task_overrides = OmegaConf.to_container(hydra_cfg.overrides.task, resolve=False)
    assert isinstance(task_overrides, list)
    overrides = [str(o) for o in task_overrides if not str(o).startswith("run_dir=")]
    multirun = hydra_cfg.mode is not None and hydra_cfg.mode.name == "MULTIRUN"
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
                _console().print(f"{header}: not started, the sweep was {how}", soft_wrap=True)
                return
            _console().print(header, soft_wrap=True)
        _exit_codes.append(run(cfg, _console(), overrides=overrides))
        if multirun:
            from evalrun.cli.callbacks import job_ended

            job_ended(_exit_codes[-1])
        # The sweep page covers the jobs so far (its path is printed at the end); a dry run
        # leaves no job folder, so a dry sweep has no page.
        if multirun and not cfg.dry_run:
            from evalrun.report.sweep_html import render_sweep_html

            render_sweep_html(Path(hydra_cfg.sweep.dir))
    except UsageError as exc:
        _print_error(exc)
        sys.exit(exc.exit_code)
    finally:
        from evalrun.rundir.store import remove_if_unused

        remove_if_unused(run_dir)  # a dry run or a refused new run leaves nothing behind


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
    return 0


def _hydra_main(args: list[str]) -> int:
    import hydra
    from hydra._internal.hydra import Hydra
    from hydra.errors import HydraException
    from omegaconf.errors import OmegaConfBaseException

    from evalrun.cli.usage import check_args, from_hydra
    from evalrun.rundir.dirs import remove_unused_sweeps

    flags, overrides = check_args(args, COMMANDS)
    if {"--help", "-h"} & set(flags) and not {"--hydra-help", "--cfg", "-c", "--info"} & set(flags):
        return _help(overrides)
    register_configs()
    where = locate_config()
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
    rest = [a for a in args if not a.startswith("resume=")]
    return [*run.replayed_overrides(rest), *rest, f"run_dir={run_dir}"]


OPEN_MAPPINGS = (
    "agent.env",
    "agent.kwargs",
    "agent.model_settings",
    "provider.headers_env",
    "profile.floors",
    "profile.ceilings",
    "profile.max_drop",
)


def open_mapping_overrides(args: list[str]) -> list[str]:
    """`agent.env.NAME=value` and `profile.floors={pass@1: 0.8}` add keys to a free-form mapping
    (merged into what it holds): Hydra wants `++` for that, so it is given here."""

    def opens_a_mapping(arg: str) -> bool:
        key, equals, _ = arg.partition("=")
        return bool(equals) and any(key == m or key.startswith(m + ".") for m in OPEN_MAPPINGS)

    return [f"++{arg}" if opens_a_mapping(arg) else arg for arg in args]


def main(argv: list[str] | None = None) -> None:
    args = open_mapping_overrides(sys.argv[1:] if argv is None else argv)
    if args == ["--version"]:  # evalrun's and the SDKs' versions, not Hydra's own --version
        from evalrun.cli.install import version_text

        print(version_text())
        sys.exit(0)
    try:
        if not (args and args[0] in COMMANDS):  # a subcommand reads its own resume= (online)
            args = expand_resume(args)
        if any(a.startswith("hydra/launcher=joblib") for a in args):
            require("hydra_plugins.hydra_joblib_launcher", "sweep", "hydra/launcher=joblib")
    except UsageError as exc:
        _print_error(exc)
        sys.exit(exc.exit_code)
    try:
        if args and args[0] in COMMANDS:
            sys.exit(COMMANDS[args[0]](args[1:]))
        sys.exit(_hydra_main(args))
    except UsageError as exc:
        _print_error(exc)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    # Run the importable module's main, not this __main__ copy: joblib workers must be able to
    # import the Hydra task function by name (`python -m evalrun.cli.main -m
    # hydra/launcher=joblib`).
    from evalrun.cli.main import main as importable_main

    importable_main()
