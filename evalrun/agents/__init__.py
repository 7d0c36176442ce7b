"""Agents under test, one module each, chosen by the `_target_` of the `agent` config group;
the contract every one of them keeps is `evalrun.agents.base.Agent`."""
