"""The agent presets whose CLI the host cache holds: the names, and each built from its config.

`evalrun agents install|list` (and bench/agent_install.py) go through these to fill or list the
cache (`evalrun.agents.install`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hydra.utils import instantiate

from evalrun.agents.installed import InstalledAgent
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
    """The preset `name` as an agent, from the config `compose` makes of `agent=<name>`;
    `UsageError` when it is not a preset."""
    if name not in preset_names():
        raise UsageError(
            f"agents: {name!r} is not an agent preset; known: {', '.join(preset_names())}"
        )
    cfg = compose([f"agent={name}"])
    agent = instantiate(cfg.agent)
    assert isinstance(agent, InstalledAgent)
    return agent
