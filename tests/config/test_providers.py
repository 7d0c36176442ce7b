"""Providers: every option composes; keys come from the environment only; missing ones are
usage errors naming the variable; each provider's requests reach an OpenAI-compatible server
with the right credentials (a local stand-in: no model API is reachable from the tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hydra.utils import instantiate

from evalrun.cli.hydra import compose_config
from evalrun.config.providers import Provider
from evalrun.config.schema import CONF_DIR
from evalrun.errors import UsageError
from tests.agents.conftest import evalrun_cli, run_eval
from tests.openai_standin import Standin, answer, call

PROVIDERS = sorted(p.stem for p in (CONF_DIR / "provider").glob("*.yaml"))
KEY_VARS = (
    "OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "OPENROUTER_API_KEY",
    "ANTHROPIC_API_KEY",
    "MODAL_KEY",
    "MODAL_SECRET",
)


@pytest.fixture(autouse=True)
def no_keys(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)


def provider(*overrides: str) -> Provider:
    return instantiate(compose_config(list(overrides)).provider)


def test_the_providers_are_there():
    assert PROVIDERS == ["anthropic", "gemini", "google", "modal", "openai", "openrouter"]


@pytest.mark.parametrize("name", PROVIDERS)
def test_every_provider_composes_with_the_coder(name):
    cfg = compose_config(["agent=coder", f"provider={name}"])
    built = instantiate(cfg.agent)
    assert isinstance(built.provider, Provider) and built.provider.name == name


@pytest.mark.parametrize(
    ("name", "variable"),
    [
        ("openai", "OPENAI_API_KEY"),
        ("gemini", "GEMINI_API_KEY"),
        ("openrouter", "OPENROUTER_API_KEY"),
    ],
)
def test_a_missing_key_names_its_variable(name, variable, monkeypatch):
    chosen = provider(f"provider={name}")
    with pytest.raises(UsageError, match=variable):
        chosen.check()
    monkeypatch.setenv(variable, "k")
    chosen.check()
    assert chosen.api_key() == "k"


def test_modal_needs_its_url_model_and_both_proxy_auth_variables(monkeypatch):
    with pytest.raises(UsageError, match=r"provider\.model"):
        provider("provider=modal").check()
    with pytest.raises(UsageError, match=r"provider\.base_url"):
        provider("provider=modal", "provider.model=m").check()
    monkeypatch.setenv("MODAL_KEY", "wk-1")
    ready = provider("provider=modal", "provider.model=m", "provider.base_url=https://x/v1")
    with pytest.raises(UsageError, match="MODAL_SECRET"):
        ready.check()
    monkeypatch.setenv("MODAL_SECRET", "ws-2")
    ready.check()
    assert ready.headers() == {"Modal-Key": "wk-1", "Modal-Secret": "ws-2"}


def test_half_a_price_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(UsageError, match=r"provider\.price"):
        provider("provider.price.input_usd_per_mtok=1").check()


def test_an_openrouter_model_without_its_vendor_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("OPENROUTER_API_KEY", "k")
    with pytest.raises(UsageError, match="openai/gpt-4o"):
        provider("provider=openrouter", "provider.model=gpt-4o").check()


def test_an_unknown_api_dialect_is_a_usage_error(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    with pytest.raises(UsageError, match=r"provider\.api"):
        provider("provider.api=grpc").check()


def test_the_default_oracle_run_needs_no_key(make_task, tmp_path):
    done = run_eval(make_task().parent, tmp_path / "run")
    assert done.exit_code == 0 and done.only.outcome == "pass"


def test_the_cli_stops_before_the_run_when_the_gemini_key_is_missing(tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun_cli(
        "agent=coder", "provider=gemini", f"run_dir={run_dir}", "ids=003-error-message-typo"
    )
    assert proc.returncode == 2
    assert "GEMINI_API_KEY" in proc.stderr
    assert not run_dir.exists()


def _requests(make_task, tmp_path: Path, *overrides: str, script=None):
    with Standin(script or [answer("ok")]) as server:
        done = run_eval(
            make_task().parent,
            tmp_path / "run",
            "agent=coder",
            f"provider.base_url={server.base_url}",
            *overrides,
        )
    assert done.only.agent.error is None, done.only.agent.error
    return server.requests, (tmp_path / "run" / "config.yaml").read_text()


def test_gemini_requests_carry_its_key_and_the_shape_its_endpoint_accepts(
    make_task, tmp_path, monkeypatch
):
    monkeypatch.setenv("GEMINI_API_KEY", "gm-secret")
    script = [call(("read", {"path": "README.md"})), answer("ok")]
    requests, logged = _requests(make_task, tmp_path, "provider=gemini", script=script)
    first, second = (r.body for r in requests)
    assert requests[0].headers["authorization"] == "Bearer gm-secret"
    assert first["model"] == "gemini-2.5-flash"
    tools = json.dumps(first["tools"])
    assert "additionalProperties" not in tools and '"strict"' not in tools
    assert '"path"' in tools  # the parameters themselves are still there
    (tool_message,) = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_message["name"] == "read"
    assert "gm-secret" not in logged and "GEMINI_API_KEY" in logged


def test_modal_requests_carry_the_proxy_auth_headers(make_task, tmp_path, monkeypatch):
    monkeypatch.setenv("MODAL_KEY", "wk-abc")
    monkeypatch.setenv("MODAL_SECRET", "ws-def")
    requests, logged = _requests(
        make_task, tmp_path, "provider=modal", "provider.model=Qwen/Qwen2.5-Coder-7B-Instruct"
    )
    request = requests[0]
    assert request.headers["modal-key"] == "wk-abc"
    assert request.headers["modal-secret"] == "ws-def"
    assert "wk-abc" not in logged and "ws-def" not in logged
