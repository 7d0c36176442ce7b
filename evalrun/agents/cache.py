"""`evalrun agents install NAME... [--force]` and `evalrun agents list`: the agent CLI cache.

`install` fetches each named preset's pinned version into the host cache (see
`evalrun.agents.install`) and prints what it took; a run installs on first use anyway, so this is
for preparing a machine (or CI) ahead of time. `list` shows every preset and whether its pinned
version is installed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from hydra.utils import instantiate
from rich.console import Console

from evalrun.agents.install import cache_root, describe, installed
from evalrun.agents.installed import InstalledAgent
from evalrun.cli.arguments import CommandParser
from evalrun.config.schema import CONF_DIR
from evalrun.errors import UsageError


def preset_names() -> list[str]:
    """conf/agent options that build an `InstalledAgent`."""
    return sorted(
        path.stem
        for path in (CONF_DIR / "agent").glob("*.yaml")
        if "installed_schema" in path.read_text(encoding="utf-8")
    )


def build_preset(name: str, compose: Callable[[list[str]], Any]) -> InstalledAgent:
    if name not in preset_names():
        raise UsageError(
            f"agents: {name!r} is not an agent preset; known: {', '.join(preset_names())}"
        )
    cfg = compose([f"agent={name}"])
    agent = instantiate(cfg.agent)
    assert isinstance(agent, InstalledAgent)
    return agent


def parser() -> CommandParser:
    parser = CommandParser(
        "agents", "The agent CLI cache: install presets ahead of a run, or list them."
    )
    parser.add_argument("action", choices=["install", "list"], metavar="install|list")
    parser.add_argument("names", nargs="*", metavar="NAME", help="agent presets to install")
    parser.add_argument("--force", action="store_true", help="install again even if cached")
    return parser


def agents_command(args: list[str], compose: Callable[[list[str]], Any], console: Console) -> int:
    arguments = parser()
    options = arguments.parse(args)
    if options.action == "list":
        console.print(f"agent cache: {cache_root()}", highlight=False)
        for name in preset_names():
            agent = build_preset(name, compose)
            target = installed(name, agent.package())
            info = describe(target)
            state = f"installed, {info.get('bytes', 0) / 1e6:.0f} MB" if info else "not installed"
            console.print(f"  {name:<16} {agent.version:<10} {state}", highlight=False)
        return 0
    if not options.names:
        arguments.error(f"install: name at least one preset ({', '.join(preset_names())})")
    for name in options.names:
        agent = build_preset(name, compose)
        started = time.monotonic()
        target = agent.install(force=options.force)
        info = describe(target)
        console.print(
            f"{name} {agent.version}: {target.root} ({info.get('bytes', 0) / 1e6:.0f} MB; "
            f"{time.monotonic() - started:.1f}s now, {info.get('install_seconds', 0):.1f}s to "
            "install)",
            highlight=False,
        )
    return 0
