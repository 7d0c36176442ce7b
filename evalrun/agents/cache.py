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
from evalrun.config import CONF_DIR
from evalrun.errors import UsageError

USAGE = "usage: evalrun agents install NAME... [--force] | evalrun agents list"


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


def agents_command(args: list[str], compose: Callable[[list[str]], Any], console: Console) -> int:
    if args[:1] == ["list"]:
        console.print(f"agent cache: {cache_root()}", highlight=False)
        for name in preset_names():
            agent = build_preset(name, compose)
            target = installed(name, agent.package())
            info = describe(target)
            state = f"installed, {info.get('bytes', 0) / 1e6:.0f} MB" if info else "not installed"
            console.print(f"  {name:<16} {agent.version:<10} {state}", highlight=False)
        return 0
    if args[:1] != ["install"] or len(args) < 2:
        raise UsageError(USAGE)
    force = "--force" in args
    for name in [a for a in args[1:] if a != "--force"]:
        agent = build_preset(name, compose)
        started = time.monotonic()
        target = agent.install(force=force)
        info = describe(target)
        console.print(
            f"{name} {agent.version}: {target.root} ({info.get('bytes', 0) / 1e6:.0f} MB; "
            f"{time.monotonic() - started:.1f}s now, {info.get('install_seconds', 0):.1f}s to "
            "install)",
            highlight=False,
        )
    return 0
