"""`sandbox=local` warns, once and on stderr, when the agent is not one evalrun wrote itself."""

from __future__ import annotations

import pytest

from evalrun.run import plan
from evalrun.sandbox.bwrap.backend import BwrapBackend
from evalrun.sandbox.local import LocalBackend


class _Agent:
    def __init__(self, name: str):
        self.name = name


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    monkeypatch.setattr(plan, "_warned_not_isolated", False)


def test_an_untrusted_agent_on_local_is_warned_about_once(capsys):
    plan.warn_if_not_isolated(LocalBackend(), _Agent("coder"))
    plan.warn_if_not_isolated(LocalBackend(), _Agent("command"))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("warning:") == 1
    assert "sandbox=local isolates nothing" in captured.err and "'coder'" in captured.err


@pytest.mark.parametrize("agent", ["oracle", "noop"])
def test_trusted_agents_on_local_are_not_warned_about(agent, capsys):
    plan.warn_if_not_isolated(LocalBackend(), _Agent(agent))
    assert capsys.readouterr().err == ""


def test_isolated_backends_are_not_warned_about(capsys):
    plan.warn_if_not_isolated(BwrapBackend(), _Agent("coder"))
    assert capsys.readouterr().err == ""
