"""Requests to Gemini's OpenAI-compatible endpoint, adjusted to what that endpoint accepts.

Gemini's endpoint translates chat-completions requests into its own function-calling format,
which is stricter than OpenAI's in two ways users have reported: JSON-schema keys such as
`additionalProperties` and `$schema` in a tool's parameters are rejected ("Unknown name
additionalProperties ... Cannot find field"), and a `role: tool` message needs the `name` of
the function it answers. pydantic-ai sends both the OpenAI way, so for `provider.api=gemini`
the HTTP client rewrites the JSON body of each `/chat/completions` request on its way out
(`gemini_body`), leaving every other request untouched.
"""

from __future__ import annotations

import json
from typing import Any

UNSUPPORTED_SCHEMA_KEYS = ("additionalProperties", "$schema", "title")


def _clean_schema(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: _clean_schema(value)
            for key, value in node.items()
            if key not in UNSUPPORTED_SCHEMA_KEYS
        }
    if isinstance(node, list):
        return [_clean_schema(item) for item in node]
    return node


def gemini_body(body: dict[str, Any]) -> dict[str, Any]:
    """A chat-completions request body in the form Gemini's OpenAI endpoint accepts."""
    out = dict(body)
    tools = []
    for tool in body.get("tools") or []:
        function = dict(tool.get("function") or {})
        if "parameters" in function:
            function["parameters"] = _clean_schema(function["parameters"])
        function.pop("strict", None)
        tools.append({**tool, "function": function})
    if tools:
        out["tools"] = tools
    names: dict[str, str] = {}
    messages = []
    for message in body.get("messages") or []:
        for call in message.get("tool_calls") or []:
            names[call.get("id", "")] = (call.get("function") or {}).get("name", "")
        if message.get("role") == "tool" and "name" not in message:
            name = names.get(message.get("tool_call_id", ""))
            if name:
                message = {**message, "name": name}
        messages.append(message)
    if messages:
        out["messages"] = messages
    return out


def gemini_http_client(timeout_s: float) -> Any:
    """An `httpx.AsyncClient` that applies `gemini_body` to chat-completions requests."""
    import httpx

    class GeminiTransport(httpx.AsyncBaseTransport):
        def __init__(self) -> None:
            self._inner = httpx.AsyncHTTPTransport()

        async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
            if request.method == "POST" and request.url.path.endswith("/chat/completions"):
                body = gemini_body(json.loads(await request.aread()))
                headers = [(k, v) for k, v in request.headers.raw if k.lower() != b"content-length"]
                request = httpx.Request(
                    request.method,
                    request.url,
                    headers=headers,
                    content=json.dumps(body).encode(),
                    extensions=request.extensions,
                )
            return await self._inner.handle_async_request(request)

        async def aclose(self) -> None:
            await self._inner.aclose()

    return httpx.AsyncClient(transport=GeminiTransport(), timeout=timeout_s)
