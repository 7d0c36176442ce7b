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

Each response also names the tool calls it asked for (`tool_call_ids`: the ids the API gave
them, which the agent's own log repeats), so a sample's trajectory can put each model call's
tokens and cost on the step whose tool call that call asked for (`evalrun.rundir.trajectory`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

CHAT, RESPONSES, MESSAGES, GEMINI = "openai-chat", "openai-responses", "anthropic", "gemini"
_PATH_SUFFIXES = {"/chat/completions": CHAT, "/responses": RESPONSES, "/messages": MESSAGES}
_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?:stream)?[Gg]enerateContent$")


def api_of(path: str) -> str | None:
    """Which API a request path calls, or None when it is not a model generation request
    (a model list, a token count): those are forwarded but not metered."""
    path = path.split("?", 1)[0].rstrip("/")
    for suffix, api in _PATH_SUFFIXES.items():
        if path.endswith(suffix):
            return api
    return GEMINI if _GEMINI_PATH.search(path) else None


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
    tool_call_ids: tuple[str, ...] = ()  # the tool calls the response asked for, in order


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
    objects = [p for p in payloads if isinstance(p, dict)]
    used = fold(objects, request_model)
    if used is None:
        return None
    calls = {CHAT: _chat_calls, RESPONSES: _responses_calls, MESSAGES: _messages_calls}
    found = calls.get(api, _gemini_calls)(objects)
    return replace(used, tool_call_ids=tuple(dict.fromkeys(i for i in found if i)))


def _ids(items: Iterable[Any], key: str) -> list[str]:
    """The string `key` of each object among `items`."""
    return [str(item[key]) for item in items if isinstance(item, dict) and item.get(key)]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _chat_calls(payloads: list[dict[str, Any]]) -> list[str]:
    """A whole response's `message.tool_calls`, or a stream's `delta.tool_calls` (each id in
    the first chunk of its call)."""
    found = []
    for payload in payloads:
        for choice in _list(payload.get("choices")):
            for part in ("message", "delta"):
                found += _ids(_list(_dict(_dict(choice).get(part)).get("tool_calls")), "id")
    return found


def _responses_calls(payloads: list[dict[str, Any]]) -> list[str]:
    """`function_call` items of the response's output (or of a stream's item events)."""
    items = []
    for payload in payloads:
        items += _list(_dict(payload.get("response") or payload).get("output"))
        items.append(_dict(payload.get("item")))
    return _ids([i for i in items if _dict(i).get("type") == "function_call"], "call_id")


def _messages_calls(payloads: list[dict[str, Any]]) -> list[str]:
    """`tool_use` blocks of the message (or of a stream's `content_block_start` events)."""
    blocks = []
    for payload in payloads:
        blocks += _list(payload.get("content"))
        blocks.append(_dict(payload.get("content_block")))
    return _ids([b for b in blocks if _dict(b).get("type") == "tool_use"], "id")


def _gemini_calls(payloads: list[dict[str, Any]]) -> list[str]:
    """`functionCall` parts that carry an id (Gemini gives one only sometimes)."""
    calls = []
    for payload in payloads:
        for candidate in _list(payload.get("candidates")):
            for part in _list(_dict(_dict(candidate).get("content")).get("parts")):
                calls.append(_dict(_dict(part).get("functionCall")))
    return _ids(calls, "id")


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
