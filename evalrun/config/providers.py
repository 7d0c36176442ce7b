"""Model providers: where an agent's model is served, which key it needs, what it costs.

A provider is configuration, not a client. The `provider` config group (conf/provider/) names
the model, an OpenAI-compatible base URL, the environment variable the API key comes from, extra
headers whose values come from environment variables, and optionally a price. Secret values are
read from the environment only when a client is built (`api_key()`, `headers()`), never written
into config, so the logged config holds variable names only. `check()` is the preflight: a
missing variable or an incomplete setting is a `UsageError` naming it, before the run starts.

`api` says which wire dialect the agent speaks:
  openai             OpenAI itself (strict tool schemas, `max_completion_tokens`)
  openai-compatible  any other server with the chat-completions API (vLLM on Modal, a local
                     server): no strict tool schemas, `max_tokens`
  gemini             Google's OpenAI-compatible Gemini endpoint: as openai-compatible, with
                     request bodies adjusted to what it accepts (see `agents.coder_gemini`)
  openrouter         OpenRouter, which reports each request's cost in USD
  anthropic          Anthropic's Messages API (`x-api-key`), for agents that speak it (Claude Code)
  gemini-native      Google's own Gemini API (`generateContent`, `x-goog-api-key`), for agents
                     that speak it (gemini-cli)

The last two are served only through evalrun's model gateway (`evalrun.gateway`), which adds
the key in the header the API expects (`auth_style`) and prices each request (`price_for`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from evalrun.config.pricing import Price, resolve_price
from evalrun.config.schema import ProviderConf
from evalrun.errors import UsageError

APIS = ("openai", "openai-compatible", "gemini", "openrouter", "anthropic", "gemini-native")
AUTH_STYLES = {"anthropic": "x-api-key", "gemini-native": "x-goog-api-key"}
NO_KEY = "not-needed"
"""Sent as the bearer token when `api_key_env` is null: the OpenAI client insists on one."""


def _price_from(conf: Mapping[str, Any] | None) -> Price | None:
    conf = dict(conf or {})
    if conf.get("input_usd_per_mtok") is None and conf.get("output_usd_per_mtok") is None:
        return None
    if conf.get("input_usd_per_mtok") is None or conf.get("output_usd_per_mtok") is None:
        raise UsageError(
            "provider.price: set both input_usd_per_mtok and output_usd_per_mtok "
            f"(got {conf.get('input_usd_per_mtok')!r} and {conf.get('output_usd_per_mtok')!r})"
        )
    return Price(
        input_per_mtok=float(conf["input_usd_per_mtok"]),
        output_per_mtok=float(conf["output_usd_per_mtok"]),
        cache_read_per_mtok=conf.get("cache_read_usd_per_mtok"),
        cache_write_per_mtok=conf.get("cache_write_usd_per_mtok"),
        source="config price (provider.price)",
    )


class Provider:
    """One configured model endpoint. Built by Hydra from the `provider` group."""

    def __init__(
        self,
        name: str,
        model: str | None = None,
        base_url: str | None = None,
        api: str = ProviderConf.api,
        api_key_env: str | None = None,
        headers_env: Mapping[str, str] | None = None,
        price_prefixes: list[str] | tuple[str, ...] = (),
        price: Mapping[str, Any] | None = None,
    ):
        self.name = name
        self.model = model or ""
        self.base_url = base_url
        self.api = api
        self.api_key_env = api_key_env or None
        self.headers_env = {str(k): str(v) for k, v in dict(headers_env or {}).items()}
        self.price_prefixes = tuple(price_prefixes or ())
        self._price_conf = dict(price or {})

    def __repr__(self) -> str:
        return f"Provider({self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    def check(self) -> None:
        """Raise `UsageError` naming what is missing: base URL, model, a key or header variable."""
        if self.api not in APIS:
            raise UsageError(f"provider.api: {self.api!r} is not one of {', '.join(APIS)}")
        if not self.model or self.model == "???":
            raise UsageError(
                f"provider.model: provider={self.name} needs the name of the model to call, "
                "e.g. provider.model=Qwen/Qwen2.5-Coder-32B-Instruct"
            )
        if self.api == "openrouter" and "/" not in self.model:
            raise UsageError(
                f"provider.model: OpenRouter names models vendor/model, e.g. "
                f"openai/{self.model}, not {self.model!r}"
            )
        if not self.base_url:
            raise UsageError(
                f"provider.base_url: provider={self.name} needs the URL of its OpenAI-compatible "
                "endpoint, e.g. provider.base_url=https://<your-app>.modal.run/v1"
            )
        wanted = [self.api_key_env] if self.api_key_env else []
        wanted += list(self.headers_env.values())
        missing = [var for var in wanted if not os.environ.get(var)]
        if missing:
            raise UsageError(
                f"provider={self.name} needs the environment variable(s) {', '.join(missing)} "
                f"(model {self.model} at {self.base_url}); export them before running"
            )
        _price_from(self._price_conf)

    def api_key(self) -> str:
        """The key from the environment (read now, never stored), or a placeholder."""
        if not self.api_key_env:
            return NO_KEY
        return os.environ.get(self.api_key_env, "")

    def headers(self) -> dict[str, str]:
        """Extra request headers, their values read from the environment now."""
        return {header: os.environ.get(var, "") for header, var in self.headers_env.items()}

    def price(self) -> tuple[Price | None, str]:
        """The price per token for this model and where it came from (see
        `evalrun.config.pricing`)."""
        return self.price_for(self.model)

    def price_for(self, model: str) -> tuple[Price | None, str]:
        """The price of `model` as served by this provider: the config price applies to the
        configured model only; any other model an agent calls is priced from litellm's map."""
        override = _price_from(self._price_conf) if model == self.model else None
        return resolve_price(model, override=override, prefixes=self.price_prefixes)

    def auth_style(self) -> str:
        """How the gateway sends the key: bearer, x-api-key, x-goog-api-key, or none."""
        if not self.api_key_env:
            return "none"
        return AUTH_STYLES.get(self.api, "bearer")
