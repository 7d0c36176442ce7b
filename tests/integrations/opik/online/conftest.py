"""Fixtures for `evalrun online`: the Opik stand-in with a live project, and a stand-in judge.

No Opik server and no model API are reachable here: the real opik SDK and litellm talk to
`tests/opik_standin.py` and `tests/openai_standin.py`, which record every request."""

from __future__ import annotations

import pytest

from tests.integrations.opik.online.helpers import JUDGE_KEY, judge_reply
from tests.openai_standin import Standin
from tests.opik_standin import OpikStandIn


@pytest.fixture
def env(monkeypatch, tmp_path):
    """No Opik or judge settings from this machine; the judge's key in ONLINE_JUDGE_KEY."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in (
        "OPIK_API_KEY",
        "OPIK_URL_OVERRIDE",
        "OPIK_WORKSPACE",
        "EVAL_PROJECT_NAME",
        "EVAL_JUDGE_MODEL",
    ):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("ONLINE_JUDGE_KEY", JUDGE_KEY)
    return monkeypatch


@pytest.fixture
def opik(env):
    with OpikStandIn() as server:
        env.setenv("OPIK_URL_OVERRIDE", server.url)
        yield server


@pytest.fixture
def model():
    with Standin([], responder=judge_reply) as server:
        yield server
