"""What one model request used, read from the provider's response in any of the four APIs.

Responses arrive as one JSON object or as server-sent events; both are reduced to the same list
of JSON payloads and folded by the API the request path names:

  .../chat/completions           OpenAI Chat Completions: `usage` (the last chunk when streamed)
  .../responses                  OpenAI Responses: `usage` of the response (`response.completed`)
  .../messages                   Anthropic Messages: `message_start` usage, then `message_delta`
  ...:generateContent / :streamGenerateContent   Gemini: `usageMetadata` (the last chunk)

Token convention (evalrun's, see `evalrun.config.pricing`): `input_tokens` counts every prompt
token, cached ones included. Anthropic reports cached tokens apart from `input_tokens`, so they are
added back; Gemini's thinking tokens are billed as output.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

CHAT, RESPONSES, MESSAGES, GEMINI = "openai-chat", "openai-responses", "anthropic", "gemini"
_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?:stream)?[Gg]enerateContent$")


def api_of(path: str) -> str | None:
    """Which API a request path calls, or None when it is not a model generation request
    (a model list, a token count): those are forwarded but not metered."""
    path = path.split("?", 1)[0].rstrip("/")
    if path.endswith("/chat/completions"):
        return CHAT
    if path.endswith("/responses"):
        return RESPONSES
    if path.endswith("/messages"):
        return MESSAGES
    if _GEMINI_PATH.search(path):
        return GEMINI
    return None


def model_in_path(path: str) -> str | None:
    """Gemini names the model in the URL, not the body."""
    found = _GEMINI_PATH.search(path.split("?", 1)[0])
    return found["model"] if found else None


@dataclass(frozen=True)
class Metered:
    """One generation request's model and tokens (see the module docstring)."""

    model: str | None
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class SSEParser:
    """Incremental server-sent-events parser: feed bytes, get the JSON `data:` payloads."""

    def __init__(self) -> None:
        self._buffer = b""

    def feed(self, data: bytes) -> list[Any]:
        self._buffer += data.replace(b"\r\n", b"\n")
        events = []
        while b"\n\n" in self._buffer:
            block, self._buffer = self._buffer.split(b"\n\n", 1)
            payload = b"\n".join(
                line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:")
            )
            if not payload or payload == b"[DONE]":
                continue
            try:
                events.append(json.loads(payload))
            except ValueError:
                continue
        return events

    def close(self) -> list[Any]:
        return self.feed(b"\n\n")


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def meter(api: str, payloads: Iterable[Any], request_model: str | None) -> Metered | None:
    """Fold a response's payloads into what it used; None when it reported no usage at all."""
    fold = {CHAT: _chat, RESPONSES: _responses, MESSAGES: _messages, GEMINI: _gemini}[api]
    return fold([p for p in payloads if isinstance(p, dict)], request_model)


def _last(
    payloads: list[dict[str, Any]], model: str | None, model_key: str, usage_key: str
) -> tuple[str | None, dict[str, Any] | None]:
    """The last model name and the last usage object the payloads carry."""
    usage: dict[str, Any] | None = None
    for payload in payloads:
        model = payload.get(model_key) or model
        if isinstance(payload.get(usage_key), dict):
            usage = payload[usage_key]
    return model, usage


def _chat(payloads: list[dict[str, Any]], model: str | None) -> Metered | None:
    model, usage = _last(payloads, model, "model", "usage")
    if usage is None:
        return None
    return Metered(
        model,
        input_tokens=_int(usage.get("prompt_tokens")),
        output_tokens=_int(usage.get("completion_tokens")),
        cache_read_tokens=_int(_dict(usage.get("prompt_tokens_details")).get("cached_tokens")),
    )


def _responses(payloads: list[dict[str, Any]], model: str | None) -> Metered | None:
    responses = [_dict(p["response"]) if "response" in p else p for p in payloads]
    model, usage = _last(responses, model, "model", "usage")
    if usage is None:
        return None
    return Metered(
        model,
        input_tokens=_int(usage.get("input_tokens")),
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=_int(_dict(usage.get("input_tokens_details")).get("cached_tokens")),
    )


def _messages(payloads: list[dict[str, Any]], model: str | None) -> Metered | None:
    usage: dict[str, Any] = {}
    for payload in payloads:
        message = _dict(payload.get("message")) if payload.get("type") == "message_start" else {}
        source = message or payload
        model = source.get("model") or model
        if isinstance(source.get("usage"), dict):
            usage.update({k: v for k, v in source["usage"].items() if v is not None})
    if not usage:
        return None
    read = _int(usage.get("cache_read_input_tokens"))
    write = _int(usage.get("cache_creation_input_tokens"))
    return Metered(
        model,
        input_tokens=_int(usage.get("input_tokens")) + read + write,
        output_tokens=_int(usage.get("output_tokens")),
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


def _gemini(payloads: list[dict[str, Any]], model: str | None) -> Metered | None:
    model, usage = _last(payloads, model, "modelVersion", "usageMetadata")
    if usage is None:
        return None
    return Metered(
        model,
        input_tokens=_int(usage.get("promptTokenCount")),
        output_tokens=_int(usage.get("candidatesTokenCount"))
        + _int(usage.get("thoughtsTokenCount")),
        cache_read_tokens=_int(usage.get("cachedContentTokenCount")),
    )
