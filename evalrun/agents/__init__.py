"""Agents under test, one module each, chosen by the `_target_` of the `agent` config group."""

from evalrun.agents.base import Agent

__all__ = ["Agent"]
