"""A local stand-in for an OpenAI-compatible chat-completions server, for offline tests.

No model API can be reached from the test machines, so this small stdlib HTTP server plays the
model. It speaks the real wire protocol - `POST <base>/chat/completions`, JSON in, JSON out,
non-streaming (the only mode `agent=coder` uses) - so the agent runs its real request path:
the OpenAI client, its retry loop, pydantic-ai's request and response mapping.

It replays a script of replies in order: tool calls, a final answer, or an HTTP error (optionally
repeated forever, optionally with `Retry-After`) - or, given a `responder`, asks it for each reply
from the request itself (for callers whose requests arrive in no fixed order, e.g. judges running
on several threads). It reports token usage with each reply (cached
prompt tokens and a provider cost too, when asked) and records every request it received (path,
headers, JSON body) so a test can check exactly what the agent sent and compare the recorded
trajectory and usage with what the server said.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One scripted answer. `status` != 200 makes it an error reply."""

    status: int = 200
    content: str | None = None
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    prompt_tokens: int = 100
    completion_tokens: int = 20
    cached_tokens: int = 0
    cost: float | None = None  # reported as usage.cost, as OpenRouter does
    headers: dict[str, str] = field(default_factory=dict)
    forever: bool = False  # never consumed: every later request gets this reply too


def call(*calls: tuple[str, dict[str, Any]], **usage: Any) -> Reply:
    """A reply asking for one or more tool calls: call(("read", {"path": "a.py"}))."""
    return Reply(tool_calls=list(calls), **usage)


def answer(text: str, **usage: Any) -> Reply:
    """A final answer."""
    return Reply(content=text, **usage)


def failure(status: int, *, forever: bool = False, retry_after_ms: int = 5) -> Reply:
    """An HTTP error; `Retry-After` is set short so the client's backoff keeps tests fast."""
    return Reply(status=status, forever=forever, headers={"retry-after-ms": str(retry_after_ms)})


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


class Standin:
    """`with Standin([...]) as server:` then point a client at `server.base_url`."""

    def __init__(
        self,
        script: list[Reply],
        model: str = "standin-model",
        extra: dict[str, Any] | None = None,
        responder: Callable[[Received], Reply] | None = None,
    ):
        """`extra`: more top-level response fields, e.g. OpenRouter's `provider`.
        `responder`: computes each reply from the request instead of the script."""
        self.script = list(script)
        self.responder = responder
        self.model = model
        self.extra = dict(extra or {})
        self.requests: list[Received] = []
        self.served: list[Reply] = []
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> Standin:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    @property
    def completions(self) -> list[Reply]:
        """The successful replies served, in order (what usage must add up to)."""
        return [r for r in self.served if r.status == 200]

    def _next(self, received: Received) -> Reply:
        with self._lock:
            self.requests.append(received)
            if self.responder is not None:
                reply = self.responder(received)
            elif not self.script:
                reply = Reply(status=500, content="stand-in script exhausted")
            elif self.script[0].forever:
                reply = self.script[0]
            else:
                reply = self.script.pop(0)
            self.served.append(reply)
            return reply

    def _completion(self, reply: Reply, index: int) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.content}
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": f"call_{index}_{n}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
                for n, (name, args) in enumerate(reply.tool_calls)
            ]
        usage: dict[str, Any] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
            "prompt_tokens_details": {"cached_tokens": reply.cached_tokens},
        }
        if reply.cost is not None:
            usage["cost"] = reply.cost
        return {
            "id": f"chatcmpl-standin-{index}",
            "object": "chat.completion",
            "created": 1_700_000_000 + index,
            "model": self.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if reply.tool_calls else "stop",
                }
            ],
            "usage": usage,
            **self.extra,
        }

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    body = {"_unparsed": raw.decode(errors="replace")}
                received = Received(
                    path=self.path,
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                if not self.path.endswith("/chat/completions"):
                    standin.requests.append(received)
                    self._send(404, {"error": {"message": f"no route {self.path}"}}, {})
                    return
                reply = standin._next(received)
                if reply.status != 200:
                    error = {"message": reply.content or f"stand-in error {reply.status}"}
                    self._send(reply.status, {"error": error}, reply.headers)
                    return
                index = len(standin.completions)
                self._send(200, standin._completion(reply, index), reply.headers)

        return Handler
