"""`evalrun agents install NAME... [--force]` and `evalrun agents list`: the agent CLI cache.

`install` fetches each named preset's pinned version into the host cache (see
`evalrun.agents.install`) and prints what it took; a run installs on first use anyway, so this is
for preparing a machine (or CI) ahead of time. `list` shows every preset and whether its pinned
version is installed.
"""

from __future__ import annotations

import time

from rich.console import Console

from evalrun.cli.arguments import CommandParser
from evalrun.cli.hydra import compose_config
from evalrun.errors import ExitCode


def parser() -> CommandParser:
    """`evalrun agents`' arguments."""
    parser = CommandParser(
        "agents", "The agent CLI cache: install presets ahead of a run, or list them."
    )
    parser.add_argument("action", choices=["install", "list"], metavar="install|list")
    parser.add_argument("names", nargs="*", metavar="NAME", help="agent presets to install")
    parser.add_argument("--force", action="store_true", help="install again even if cached")
    return parser


def agents_command(args: list[str], console: Console) -> int:
    """`evalrun agents install NAME... [--force]` | `evalrun agents list`."""
    from evalrun.agents.cache import build_preset, preset_names
    from evalrun.agents.install import cache_root, describe, installed

    arguments = parser()
    options = arguments.parse(args)
    if options.action == "list":
        console.print(f"agent cache: {cache_root()}", highlight=False)
        for name in preset_names():
            agent = build_preset(name, compose_config)
            target = installed(name, agent.package())
            info = describe(target)
            state = f"installed, {info.get('bytes', 0) / 1e6:.0f} MB" if info else "not installed"
            console.print(f"  {name:<16} {agent.version:<10} {state}", highlight=False)
        return ExitCode.OK
    if not options.names:
        arguments.error(f"install: name at least one preset ({', '.join(preset_names())})")
    for name in options.names:
        agent = build_preset(name, compose_config)
        started = time.monotonic()
        target = agent.install(force=options.force)
        info = describe(target)
        console.print(
            f"{name} {agent.version}: {target.root} ({info.get('bytes', 0) / 1e6:.0f} MB; "
            f"{time.monotonic() - started:.1f}s now, {info.get('install_seconds', 0):.1f}s to "
            "install)",
            highlight=False,
        )
    return ExitCode.OK
