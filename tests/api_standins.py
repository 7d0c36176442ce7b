"""Local stand-ins of the four model APIs agent CLIs speak, streaming included, for offline tests.

No model API can be reached from the test machines, so this stdlib HTTP server plays the model
for real agent CLIs (Claude Code, codex, gemini-cli, opencode, mini-swe-agent, aider). It speaks
the real wire protocols, JSON and server-sent events alike:

  POST .../chat/completions                      OpenAI Chat Completions
  POST .../responses                             OpenAI Responses
  POST .../v1/messages                           Anthropic Messages
  POST .../models/<m>:generateContent            Google Gemini
  POST .../models/<m>:streamGenerateContent      Google Gemini, streamed (`?alt=sse`)
  GET  .../models                                an empty model list (some CLIs ask)

It replays a script of `Turn`s in order, whatever the API: a turn asks for tool calls (each API
renders them its own way: `tool_use` blocks, `function_call` items, `functionCall` parts) or
gives a final text, and reports the token usage the test chose. Every request is recorded (path,
headers, JSON body) and every turn served is kept, so a test compares what evalrun metered with
what the stand-in served. It is a stand-in for a real provider; nothing here was checked
against a live API, only against the public wire formats and the real CLIs' request paths.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Turn:
    """One scripted model reply. `status` != 200 makes it an HTTP error."""

    text: str | None = None
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int = 100  # prompt tokens, cached ones included
    output_tokens: int = 20
    cached_tokens: int = 0
    status: int = 200
    forever: bool = False  # never consumed: every later request gets it too


def tool(name: str, **args: Any) -> Turn:
    return Turn(calls=[(name, args)])


def say(text: str, **usage: Any) -> Turn:
    return Turn(text=text, **usage)


@dataclass
class Received:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


SSE = Iterator[tuple[str | None, dict[str, Any]]]
"""(event name or None, data) pairs of a streamed reply."""


def _call_id(index: int, n: int) -> str:
    return f"call_{index}_{n}"


# --- the four wire formats -----------------------------------------------------------------
def chat_json(turn: Turn, index: int, model: str) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": turn.text}
    if turn.calls:
        message["tool_calls"] = [
            {
                "id": _call_id(index, n),
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for n, (name, args) in enumerate(turn.calls)
        ]
    return {
        "id": f"chatcmpl-{index}",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if turn.calls else "stop",
            }
        ],
        "usage": _chat_usage(turn),
    }


def _chat_usage(turn: Turn) -> dict[str, Any]:
    return {
        "prompt_tokens": turn.input_tokens,
        "completion_tokens": turn.output_tokens,
        "total_tokens": turn.input_tokens + turn.output_tokens,
        "prompt_tokens_details": {"cached_tokens": turn.cached_tokens},
    }


def chat_sse(turn: Turn, index: int, model: str) -> SSE:
    base = {"id": f"chatcmpl-{index}", "object": "chat.completion.chunk", "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}

    yield None, chunk({"role": "assistant", "content": ""})
    if turn.text:
        yield None, chunk({"content": turn.text})
    for n, (name, args) in enumerate(turn.calls):
        call = {
            "index": n,
            "id": _call_id(index, n),
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        yield None, chunk({"tool_calls": [call]})
    yield None, chunk({}, "tool_calls" if turn.calls else "stop")
    yield None, {**base, "choices": [], "usage": _chat_usage(turn)}


def responses_json(turn: Turn, index: int, model: str) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if turn.text:
        output.append(
            {
                "type": "message",
                "id": f"msg_{index}",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": turn.text, "annotations": []}],
            }
        )
    for n, (name, args) in enumerate(turn.calls):
        namespace, _, bare = name.rpartition("/")  # "<namespace>/<tool>": a namespaced tool
        call = {
            "type": "function_call",
            "id": f"fc_{index}_{n}",
            "call_id": _call_id(index, n),
            "name": bare,
            "arguments": json.dumps(args),
            "status": "completed",
        }
        output.append({**call, "namespace": namespace} if namespace else call)
    return {
        "id": f"resp_{index}",
        "object": "response",
        "created_at": 1_700_000_000,
        "status": "completed",
        "model": model,
        "output": output,
        "usage": {
            "input_tokens": turn.input_tokens,
            "input_tokens_details": {"cached_tokens": turn.cached_tokens},
            "output_tokens": turn.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": turn.input_tokens + turn.output_tokens,
        },
    }


def responses_sse(turn: Turn, index: int, model: str) -> SSE:
    full = responses_json(turn, index, model)
    started = {**full, "status": "in_progress", "output": [], "usage": None}
    yield "response.created", {"type": "response.created", "response": started}
    for n, item in enumerate(full["output"]):
        yield (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "output_index": n,
                "item": {**item, "status": "in_progress"},
            },
        )
        if item["type"] == "message":
            text = item["content"][0]["text"]
            yield (
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": n,
                    "content_index": 0,
                    "delta": text,
                },
            )
        yield (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "output_index": n,
                "item": item,
            },
        )
    yield "response.completed", {"type": "response.completed", "response": full}


def messages_json(turn: Turn, index: int, model: str) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if turn.text:
        content.append({"type": "text", "text": turn.text})
    for n, (name, args) in enumerate(turn.calls):
        content.append(
            {"type": "tool_use", "id": f"toolu_{index}_{n}", "name": name, "input": args}
        )
    return {
        "id": f"msg_{index}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if turn.calls else "end_turn",
        "stop_sequence": None,
        "usage": _messages_usage(turn),
    }


def _messages_usage(turn: Turn) -> dict[str, Any]:
    # Anthropic counts cached prompt tokens apart from input_tokens.
    return {
        "input_tokens": turn.input_tokens - turn.cached_tokens,
        "cache_read_input_tokens": turn.cached_tokens,
        "cache_creation_input_tokens": 0,
        "output_tokens": turn.output_tokens,
    }


def messages_sse(turn: Turn, index: int, model: str) -> SSE:
    full = messages_json(turn, index, model)
    start_usage = {**_messages_usage(turn), "output_tokens": 1}
    message = {**full, "content": [], "stop_reason": None, "usage": start_usage}
    yield "message_start", {"type": "message_start", "message": message}
    for n, block in enumerate(full["content"]):
        if block["type"] == "text":
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": n,
                    "content_block": {"type": "text", "text": ""},
                },
            )
            delta = {"type": "text_delta", "text": block["text"]}
        else:
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": n,
                    "content_block": {**block, "input": {}},
                },
            )
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        yield "content_block_delta", {"type": "content_block_delta", "index": n, "delta": delta}
        yield "content_block_stop", {"type": "content_block_stop", "index": n}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": full["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": turn.output_tokens},
        },
    )
    yield "message_stop", {"type": "message_stop"}


def gemini_json(turn: Turn, index: int, model: str) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if turn.text:
        parts.append({"text": turn.text})
    for name, args in turn.calls:
        parts.append({"functionCall": {"name": name, "args": args}})
    return {
        "candidates": [
            {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
        ],
        "usageMetadata": {
            "promptTokenCount": turn.input_tokens,
            "candidatesTokenCount": turn.output_tokens,
            "cachedContentTokenCount": turn.cached_tokens,
            "totalTokenCount": turn.input_tokens + turn.output_tokens,
        },
        "modelVersion": model,
        "responseId": f"resp-{index}",
    }


def gemini_sse(turn: Turn, index: int, model: str) -> SSE:
    yield None, gemini_json(turn, index, model)


Renderer = Callable[[Turn, int, str], Any]
ROUTES: list[tuple[re.Pattern[str], str, Renderer, Renderer]] = [
    (re.compile(r".*/chat/completions$"), "openai-chat", chat_json, chat_sse),
    (re.compile(r".*/responses$"), "openai-responses", responses_json, responses_sse),
    (re.compile(r".*/v1/messages$"), "anthropic", messages_json, messages_sse),
    (re.compile(r".*/models/[^/]+:generateContent$"), "gemini", gemini_json, gemini_sse),
    (re.compile(r".*/models/[^/]+:streamGenerateContent$"), "gemini", gemini_json, gemini_sse),
]


def _error_body(api: str, status: int, message: str) -> dict[str, Any]:
    if api == "anthropic":
        kind = "rate_limit_error" if status == 429 else "api_error"
        return {"type": "error", "error": {"type": kind, "message": message}}
    if api == "gemini":
        return {"error": {"code": status, "message": message, "status": "UNAVAILABLE"}}
    return {"error": {"message": message, "type": "server_error", "code": status}}


class ApiStandin:
    """`with ApiStandin([...]) as server:` then point a client (or evalrun's gateway) at
    `server.url`. The same script serves whichever of the four APIs is called."""

    def __init__(
        self, script: list[Turn], model: str = "standin-model", untooled: Turn | None = None
    ):
        self.script = list(script)
        self.model = model
        # the reply to a request that offers the model no tools (a CLI's side request, e.g.
        # opencode's title), served without consuming the script; None: such requests take turns
        self.untooled = untooled
        self.requests: list[Received] = []
        self.served: list[tuple[str, Turn]] = []  # (api, turn), errors included
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> ApiStandin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def completed(self) -> list[Turn]:
        """The successful turns served, in order: what metered usage must add up to."""
        return [turn for _, turn in self.served if turn.status == 200]

    def totals(self) -> dict[str, int]:
        turns = self.completed
        return {
            "requests": len(turns),
            "input_tokens": sum(t.input_tokens for t in turns),
            "output_tokens": sum(t.output_tokens for t in turns),
            "cache_read_tokens": sum(t.cached_tokens for t in turns),
        }

    def _next(self, api: str, body: dict[str, Any]) -> tuple[Turn, int]:
        with self._lock:
            if self.untooled is not None and not body.get("tools"):
                turn = self.untooled
            elif not self.script:
                turn = Turn(status=500, text="stand-in script exhausted")
            elif self.script[0].forever:
                turn = self.script[0]
            else:
                turn = self.script.pop(0)
            self.served.append((api, turn))
            return turn, len(self.served)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _record(self, body: dict[str, Any]) -> None:
                headers = {k.lower(): v for k, v in self.headers.items()}
                with standin._lock:
                    standin.requests.append(Received(self.command, self.path, headers, body))

            def _json(self, status: int, payload: Any) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _sse(self, events: SSE) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                for event, data in events:
                    head = f"event: {event}\n" if event else ""
                    self._chunk(f"{head}data: {json.dumps(data)}\n\n".encode())
                if "chat" in self.path:
                    self._chunk(b"data: [DONE]\n\n")
                self._chunk(b"")

            def _chunk(self, data: bytes) -> None:
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def do_GET(self) -> None:
                self._record({})
                if self.path.split("?")[0].endswith("/models"):
                    self._json(200, {"object": "list", "data": [], "models": []})
                    return
                self._json(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                self._record(body)
                path = self.path.split("?")[0]
                route = next((r for r in ROUTES if r[0].match(path)), None)
                if route is None:
                    self._json(404, {"error": {"message": f"no route {self.path}"}})
                    return
                _, api, as_json, as_sse = route
                turn, index = standin._next(api, body)
                if turn.status != 200:
                    message = turn.text or f"stand-in error {turn.status}"
                    self._json(turn.status, _error_body(api, turn.status, message))
                    return
                streamed = bool(body.get("stream")) or path.endswith(":streamGenerateContent")
                if streamed:
                    self._sse(as_sse(turn, index, standin.model))
                else:
                    self._json(200, as_json(turn, index, standin.model))

        return Handler
