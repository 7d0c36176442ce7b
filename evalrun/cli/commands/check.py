"""`evalrun check [--strict] [--tamper=KINDS] [overrides]`: prove every task's verifier honest.

Gold must pass; untouched, wrong/* and every reward hack (`evalrun.honesty.tamper`) must fail
(`suite=probes`: the probes' scripted good and bad runs instead, `evalrun.honesty.probes`).
"""

from __future__ import annotations

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.config.schema import SuiteKind
from evalrun.console import styled
from evalrun.errors import ExitCode


def check_command(args: list[str], console: Console) -> int:
    """evalrun check [--strict] [--tamper=KINDS] [overrides]: gold must pass; untouched, wrong/*
    and every reward hack (tamper) must fail.

    Exit 1 when a verifier is dishonest or gameable, else 4 when a task folder cannot be loaded,
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
    from evalrun.run.plan import build

    parser = CommandParser(
        "check",
        "Prove every verifier honest: gold must pass; untouched, wrong/* and the reward hacks must "
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
    if plan.suite is SuiteKind.probes:  # scripted good/bad runs instead of gold/untouched/wrong
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
            console.print(styled("[red]{} {} verifier(s):[/]", len(ids), kind), ", ".join(ids))
    if verdicts.dishonest or verdicts.gameable:
        return ExitCode.FAILED
    if plan.unloadable:
        console.print(
            styled(
                "[yellow]{} verifiers honest; {} task folders cannot load[/]",
                len(plan.tasks),
                len(plan.unloadable),
            )
        )
        return ExitCode.UNLOADABLE
    console.print(styled("[green]all {} verifiers honest[/]", len(plan.tasks)))
    return ExitCode.OK
