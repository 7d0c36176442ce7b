"""The `evalrun` command: the entry point and the table of subcommands.

`evalrun [overrides]` runs an evaluation through Hydra (`evalrun.cli.hydra`, so `--cfg job`, `-m`
and `--help` work as in any Hydra app). `evalrun <command> [args]` runs one of the subcommands in
`COMMANDS` (`evalrun.cli.commands`, one module each), composing the same config from the same
overrides where it needs one. A `UsageError` from either is one line on stderr and its exit code.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from rich.console import Console

from evalrun.cli.commands import (
    agents,
    check,
    diff,
    docs,
    export,
    gate,
    info,
    online,
    power,
    push,
    regrade,
    runs,
    scaffold,
    setup,
    view,
)
from evalrun.cli.hydra import expand_resume, open_mapping_overrides, quote_references, run_hydra
from evalrun.cli.usage import print_error
from evalrun.console import make_console
from evalrun.errors import ExitCode, UsageError
from evalrun.extras import require

COMMANDS: dict[str, Callable[[list[str], Console], int]] = {
    "check": check.check_command,
    "push": push.push_command,
    "sync": push.sync_command,
    "ls": runs.ls_command,
    "show": runs.show_command,
    "report": runs.report_command,
    "view": view.view_command,
    "gate": gate.gate_command,
    "diff": diff.diff_command,
    "regrade": regrade.regrade_command,
    "power": power.power_command,
    "image": setup.image_command,
    "setup": setup.setup_command,
    "init": scaffold.init_command,
    "new-task": scaffold.new_task_command,
    "info": info.info_command,
    "online": online.online_command,
    "agents": agents.agents_command,
    "export": export.export_command,
    "docs": docs.docs_command,
}


def main(argv: list[str] | None = None) -> None:
    args = quote_references(open_mapping_overrides(sys.argv[1:] if argv is None else argv))
    if args == ["--version"]:  # evalrun's and the SDKs' versions, not Hydra's own --version
        from evalrun.cli.install import version_text

        print(version_text())
        sys.exit(ExitCode.OK)
    try:
        if not (args and args[0] in COMMANDS):  # a subcommand reads its own resume= (online)
            args = expand_resume(args)
        if any(a.startswith("hydra/launcher=joblib") for a in args):
            require("hydra_plugins.hydra_joblib_launcher", "sweep", "hydra/launcher=joblib")
        if args and args[0] in COMMANDS:
            # wide enough for the task table when output is not a terminal
            sys.exit(COMMANDS[args[0]](args[1:], make_console(wide=True)))
        sys.exit(run_hydra(args, COMMANDS))
    except UsageError as exc:
        print_error(exc)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
