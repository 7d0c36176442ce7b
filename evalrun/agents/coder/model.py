"""From a `Provider` to a pydantic-ai model, and from the model's responses to a cost in USD.

Every provider is reached through the OpenAI chat-completions API with an `AsyncOpenAI` client
built here: its base URL, key and extra headers come from the provider, and its own retry loop
(exponential backoff with jitter, honouring `Retry-After`) retries rate limits (429), server
errors (5xx), timeouts and dropped connections up to `max_retries` times per model request.
Gemini goes through Google's OpenAI-compatible endpoint (no Google SDK needed), with its request
bodies adjusted by `coder_gemini`.

pydantic-ai and openai are imported inside the functions: importing them costs about 2 s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evalrun.agents.coder.gemini import gemini_http_client
from evalrun.config.providers import Provider


def build_model(provider: Provider, *, max_retries: int, timeout_s: float) -> tuple[Any, Any]:
    """A pydantic-ai model for `provider` and the client it owns (close it after the run)."""
    from openai import AsyncOpenAI

    http_client = gemini_http_client(timeout_s) if provider.api == "gemini" else None
    client = AsyncOpenAI(
        base_url=provider.base_url,
        api_key=provider.api_key(),
        default_headers=provider.headers() or None,
        max_retries=max_retries,
        timeout=timeout_s,
        http_client=http_client,
    )
    if provider.api == "openrouter":
        from pydantic_ai.models.openrouter import OpenRouterModel
        from pydantic_ai.providers.openrouter import OpenRouterProvider

        routed = OpenRouterModel(provider.model, provider=OpenRouterProvider(openai_client=client))
        return routed, client

    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.profiles.openai import OpenAIModelProfile
    from pydantic_ai.providers.openai import OpenAIProvider

    profile = None
    if provider.api != "openai":
        # Servers other than OpenAI's reject `strict` tool schemas and `max_completion_tokens`.
        profile = OpenAIModelProfile(
            openai_supports_strict_tool_definition=False,
            openai_chat_supports_max_completion_tokens=False,
        )
    model = OpenAIChatModel(
        provider.model, provider=OpenAIProvider(openai_client=client), profile=profile
    )
    return model, client


def default_settings(provider: Provider) -> dict[str, Any]:
    """Model settings a provider needs: OpenRouter reports cost only when asked to."""
    if provider.api == "openrouter":
        return {"openrouter_usage": {"include": True}}
    return {}


def cost_of(responses: Sequence[Any], provider: Provider) -> tuple[float | None, str]:
    """USD for a run's `ModelResponse`s and where the figure came from.

    Each response costs what the provider reported for it (`provider_details['cost']`), else
    its tokens at the configured or litellm price. If any response has neither, the cost is
    unknown (None) and the note says why.
    """
    if not responses:
        return 0.0, "no model response was received"
    total = 0.0
    sources: list[str] = []
    looked_up: tuple[Any, str] | None = None  # the configured or litellm price, asked once
    for response in responses:
        reported = (response.provider_details or {}).get("cost")
        if isinstance(reported, int | float):
            total += float(reported)
            source = "provider-reported cost"
        else:
            looked_up = looked_up or provider.price()
            price, source = looked_up
            if price is None:
                return None, source
            u = response.usage
            total += price.cost(
                u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens
            )
        if source not in sources:
            sources.append(source)
    return total, " + ".join(sources)
