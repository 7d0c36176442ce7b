"""`evalrun online ...`: judge a live Opik project's conversations with the offline judges.

```
evalrun online project=<p> [overrides]          judge the project's threads
                                                (evalrun.integrations.opik.online)
evalrun online resume=<run-dir> [overrides]     finish an online run that stopped
evalrun online rule create project=<p> [...]    create or update its online judge rules
evalrun online rule list [project=<p>]          show the rules (evalrun.integrations.opik.rules)
```

Overrides compose conf/online.yaml, like `evalrun`'s own overrides compose conf/config.yaml.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.errors import UsageError

USAGE = """forms:
  evalrun online project=<opik-project> [judge=<option>] [since=2026-11-01] [limit=200]
                 [sample_rate=0.1] [budget_usd=2] [level=threads|traces] [profile=<name>]
                 [metrics=[user_frustration_score,session_completeness_quality,...]]
  evalrun online resume=<run-dir> [budget_usd=...]
  evalrun online rule create project=<opik-project> [judge=<option>] [sample_rate=0.1]
  evalrun online rule list [project=<opik-project>]
Settings, the bundled judge texts and the built-in metrics: conf/online.yaml; docs/opik.md,
"Online evaluation"."""


def expand_resume(args: list[str]) -> list[str]:
    """`resume=<run-dir>` -> that run's overrides, then the new ones, then run_dir=<run-dir>
    (a redacted override is never replayed: `evalrun.rundir.log.RunLog.replayed_overrides`)."""
    from evalrun.integrations.opik.rundir import OnlineState
    from evalrun.rundir.log import RunLog

    resumes = [a for a in args if a.startswith("resume=")]
    if not resumes:
        return args
    run_dir = Path(resumes[-1].split("=", 1)[1]).expanduser()
    if OnlineState.load(run_dir) is None:
        raise UsageError(f"resume: {run_dir} is not an online run directory (no online.json)")
    rest = [a for a in args if not a.startswith("resume=")]
    return [*RunLog.open(run_dir).replayed_overrides(rest), *rest, f"run_dir={run_dir}"]


def online_command(args: list[str], console: Console) -> int:
    """`evalrun online ...` (the forms in the module docstring); overrides compose
    conf/online.yaml."""
    if args[:1] == ["rule"]:
        from evalrun.integrations.opik.rules import create_rules, list_rules

        rules = CommandParser(
            "online rule",
            "Create or list a project's Opik online judge rules, made from the offline judges.",
            overrides=True,
            epilog=USAGE,
        )
        rules.add_argument("action", choices=["create", "list"])
        options = rules.parse(args[1:])
        cfg = compose_config(options.overrides, config_name="online")
        if options.action == "create":
            return create_rules(cfg, console)
        return list_rules(cfg, console)
    parser = CommandParser(
        "online",
        "Judge a live Opik project's conversations with the offline judges (conf/online.yaml).",
        overrides=True,
        epilog=USAGE,
    )
    overrides = parser.parse(args).overrides
    if not overrides:
        parser.error("expected project=<opik-project> or resume=<run-dir>")
    from evalrun.integrations.opik.online import run_online
    from evalrun.rundir.redact import redact_overrides

    args = expand_resume(overrides)
    cfg = compose_config(args, config_name="online")
    saved = redact_overrides([a for a in args if not a.startswith("run_dir=")])
    return run_online(cfg, console, overrides=saved)
