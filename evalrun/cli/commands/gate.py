"""`evalrun gate <run-dir> [profile=<name>] [baseline=<run-dir>] [--allow-partial]`: gate a run
that has ended on a threshold profile (`evalrun.analysis.gate`), from its summary, running
nothing.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.config.usage import BOUND_EXAMPLE
from evalrun.console import styled
from evalrun.errors import ExitCode, UsageError


def _profile_names() -> list[str]:
    """The profiles one could pass: evalrun's packaged ones and, in a project, its own."""
    from evalrun.bundled import CONF_DIR
    from evalrun.config.project import locate_config

    folders = {CONF_DIR / "profile", locate_config().config_dir / "profile"}
    names = {p.stem for folder in folders for p in folder.glob("*.yaml")}
    return sorted(names - {"none"})


def gate_command(args: list[str], console: Console) -> int:
    """`evalrun gate <run-dir> [profile=<name>] [baseline=<run-dir>] [--allow-partial]`.

    Gates a run that has ended from its summary without running anything. A profile with no
    threshold is a usage error (exit 2: nothing would be checked); a partial run is refused
    with `ExitCode.PARTIAL` unless `--allow-partial`.
    """
    from evalrun.analysis.gate import print_verdict
    from evalrun.rundir.log import read_summary
    from evalrun.rundir.readers import profile_for

    parser = CommandParser(
        "gate",
        "Gate a run that has ended on a threshold profile (exit 1 when one is broken).",
        overrides=True,
        epilog="overrides: profile=<name> (conf/profile/), baseline=<run-dir> (for max_drop), "
        f"{BOUND_EXAMPLE} (a bound merged into the profile), ...",
    )
    parser.add_argument("run_dir", metavar="<run-dir>", type=Path, help="the run to gate")
    parser.add_argument(
        "--allow-partial",
        action="store_true",
        help="gate the recorded cells of a partial run (else: exit 5)",
    )
    options = parser.parse(args)
    cfg = compose_config(options.overrides)
    run_dir = options.run_dir.expanduser()
    profile = profile_for(cfg.profile, cfg.baseline)
    if not profile.metric_names():
        raise UsageError(
            f"gate: nothing to check: pass profile=<name> (profile={profile.name} has no "
            f"thresholds; available: {', '.join(_profile_names()) or 'none'}), or add one, "
            f"e.g. {BOUND_EXAMPLE}"
        )
    summary = read_summary(run_dir, "gate")
    state = summary.state
    if state is not None and not state.complete:
        if not options.allow_partial:
            console.print(
                styled("[red]refusing to gate a partial run:[/]"),
                f"{run_dir} is {state.describe()}. Finish it with: evalrun resume={run_dir}  "
                "(or pass --allow-partial to gate the recorded cells only)",
                soft_wrap=True,
            )
            return ExitCode.PARTIAL
        console.print(
            styled("[yellow]gating a partial run (--allow-partial):[/]"),
            state.describe(),
            soft_wrap=True,
        )
    base_state = profile.baseline.summary.state if profile.baseline else None
    if base_state is not None and not base_state.complete:
        console.print(
            styled("[yellow]warning: the baseline is {}[/]", base_state.describe()), soft_wrap=True
        )
    console.print(f"gating {run_dir} with profile={profile.name}")
    return print_verdict(profile, summary, console)
