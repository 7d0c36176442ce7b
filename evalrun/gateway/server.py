"""The gateway process: an HTTP proxy on per-sample unix sockets, in a thread of its own.

    gateway = Gateway(upstream, ledger)        # started once per run
    with gateway:
        session = gateway.open("task#0")       # a socket of its own for one sample
        ... the sample's sandbox sees session.socket (read-only folder, same path) ...
        usage = session.account.usage()
        gateway.close(session)

A request arriving on a sample's socket is forwarded to `upstream.base_url` + its path, with
every credential header the agent sent removed and the real one added from the host environment
(read per request, never stored). The body goes out unchanged, except that a streamed Chat
Completions request is asked to include usage (`stream_options.include_usage`), which the
provider otherwise leaves out of streams. The response streams back byte for byte while a copy is
read for the model and the tokens (`meter`), charged to the sample's account (`ledger`).

Failures the agent cannot cause are kept on the account for the agent adapter to judge: the
provider unreachable (answered 502 to the agent) and provider errors (429, 5xx, 401/403, passed
through so the agent's own retries see them). A request past a budget is answered 402 with a
JSON error naming the limit, in the shape the agent's API uses.

The socket folder is mode 0711 (not listable) and each socket name carries 128 random bits, so a
sandbox that sees the folder cannot find, let alone use, another sample's socket.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode

from evalrun.extras import require
from evalrun.gateway.ledger import Account, Ledger
from evalrun.gateway.meter import CHAT, MESSAGES, SSEParser, api_of, meter, model_in_path

HOP_BY_HOP = {"connection", "keep-alive", "content-length", "transfer-encoding"}
CREDENTIALS = {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key"}
DROP_REQUEST_HEADERS = HOP_BY_HOP | CREDENTIALS | {"host", "accept-encoding"}
DROP_RESPONSE_HEADERS = HOP_BY_HOP | {"content-encoding"}
REQUEST_TIMEOUT_S = 600.0
BUDGET_STATUS = 402
HEALTH_PATH = "/__evalrun/health"  # answered by the gateway itself, never forwarded


@dataclass(frozen=True)
class Upstream:
    """Where the gateway forwards to and how it authenticates (names of variables, not values).

    `auth`: `bearer` (Authorization: Bearer), `x-api-key` (Anthropic), `x-goog-api-key`
    (Gemini), or `none`.
    """

    base_url: str
    auth: str = "bearer"
    key_env: str | None = None
    headers_env: Mapping[str, str] = field(default_factory=dict)

    def credentials(self) -> dict[str, str]:
        headers = {name: os.environ.get(var, "") for name, var in self.headers_env.items()}
        key = os.environ.get(self.key_env, "") if self.key_env else ""
        if key and self.auth == "bearer":
            headers["Authorization"] = f"Bearer {key}"
        elif key and self.auth in ("x-api-key", "x-goog-api-key"):
            headers[self.auth] = key
        return headers


@dataclass
class Session:
    """One sample's socket and account."""

    socket: Path
    account: Account
    runner: Any = None


def _budget_error(api: str | None, reason: str) -> dict[str, Any]:
    message = f"evalrun gateway refused the request: {reason}"
    if api == MESSAGES:
        return {"type": "error", "error": {"type": "budget_exceeded", "message": message}}
    return {"error": {"type": "budget_exceeded", "code": BUDGET_STATUS, "message": message}}


class Gateway:
    """See the module docstring. A context manager: started on enter, stopped on exit."""

    def __init__(self, upstream: Upstream, ledger: Ledger):
        self.upstream = upstream
        self.ledger = ledger
        self.folder: Path | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._client: Any = None

    # --- lifecycle (called from the harness's thread) -----------------------------------------
    def __enter__(self) -> Gateway:
        require("aiohttp", "agents", "evalrun's model gateway (agent presets)")
        self.folder = Path(tempfile.mkdtemp(prefix="evalrun-gateway-"))
        self.folder.chmod(0o711)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="evalrun-gateway", daemon=True
        )
        self._thread.start()
        self._call(self._start_client())
        return self

    def __exit__(self, *exc: object) -> None:
        if self._loop is None:
            return
        if self._client is not None:
            self._call(self._client.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=10)
        self._loop.close()
        self._loop = None
        if self.folder is not None:
            shutil.rmtree(self.folder, ignore_errors=True)

    def _call(self, coro: Any) -> Any:
        assert self._loop is not None, "the gateway is not running"
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=60)

    def open(self, label: str) -> Session:
        """A fresh socket for one sample, listening before this returns."""
        assert self.folder is not None, "the gateway is not running"
        path = self.folder / f"{secrets.token_hex(16)}.sock"
        session = Session(socket=path, account=Account(label=label))
        self._call(self._listen(session))
        return session

    def close(self, session: Session) -> None:
        if session.runner is not None and self._loop is not None:
            self._call(session.runner.cleanup())
            session.runner = None
        session.socket.unlink(missing_ok=True)

    # --- inside the gateway's loop ------------------------------------------------------------
    async def _start_client(self) -> None:
        import aiohttp

        self._client = aiohttp.ClientSession(
            timeout=aiohttp.ClientTimeout(total=REQUEST_TIMEOUT_S, sock_connect=30),
            auto_decompress=False,
            trust_env=True,  # HTTPS_PROXY / NO_PROXY on the host apply, as for any client
        )

    async def _listen(self, session: Session) -> None:
        from aiohttp import web

        app = web.Application(client_max_size=64 * 1024 * 1024)

        async def handle(request: web.Request) -> web.StreamResponse:
            return await self._forward(session.account, request)

        app.router.add_route("*", "/{tail:.*}", handle)
        runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await runner.setup()
        site = web.UnixSite(runner, str(session.socket))
        await site.start()
        session.socket.chmod(0o666)
        session.runner = runner

    def _target(self, request: Any) -> str:
        query = [(k, v) for k, v in parse_qsl(request.query_string) if k != "key"]
        url = self.upstream.base_url.rstrip("/") + request.rel_url.raw_path
        return url + (f"?{urlencode(query)}" if query else "")

    async def _forward(self, account: Account, request: Any) -> Any:
        import aiohttp
        from aiohttp import web

        if request.path == HEALTH_PATH:
            return web.Response(text="evalrun-gateway ok")
        api = api_of(request.path) if request.method == "POST" else None
        body = await request.read()
        request_model = model_in_path(request.path)
        if api is not None:
            refused = self.ledger.refusal(account)
            if refused:
                return web.json_response(_budget_error(api, refused), status=BUDGET_STATUS)
            body, request_model = _prepare_body(api, body, request_model)
        headers = {
            k: v for k, v in request.headers.items() if k.lower() not in DROP_REQUEST_HEADERS
        }
        headers.update(self.upstream.credentials())
        headers["Accept-Encoding"] = "identity"
        started_at = time.time()
        try:
            upstream = await self._client.request(
                request.method, self._target(request), headers=headers, data=body
            )
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            reason = f"the gateway could not reach the provider at {self.upstream.base_url}: {exc}"
            account.gateway_failures.append(reason)
            return web.json_response({"error": {"type": "gateway", "message": reason}}, status=502)
        async with upstream:
            response = web.StreamResponse(status=upstream.status, reason=upstream.reason)
            for name, value in upstream.headers.items():
                if name.lower() not in DROP_RESPONSE_HEADERS:
                    response.headers.add(name, value)
            await response.prepare(request)
            streamed = "text/event-stream" in upstream.headers.get("Content-Type", "")
            parser, kept = SSEParser(), bytearray()
            payloads: list[Any] = []
            try:
                async for chunk in upstream.content.iter_any():
                    await response.write(chunk)
                    if streamed:
                        payloads += parser.feed(chunk)
                    elif len(kept) < 64 * 1024 * 1024:
                        kept += chunk
            except (aiohttp.ClientError, TimeoutError, ConnectionError) as exc:
                account.gateway_failures.append(f"the provider's response broke off: {exc}")
            payloads += parser.close() if streamed else _json_payloads(bytes(kept))
            account.last_failed = upstream.status >= 400
            if account.last_failed:
                account.upstream_failures.append((upstream.status, _error_message(payloads, kept)))
            elif api is not None:
                account.upstream_successes += 1
                used = meter(api, payloads, request_model)
                if used is not None:
                    self.ledger.charge(account, used, started_at)
            await response.write_eof()  # after charging: the agent never sees a stale account
        return response


def _prepare_body(api: str, body: bytes, model: str | None) -> tuple[bytes, str | None]:
    """The request model, and for streamed Chat Completions the ask to include usage."""
    try:
        data = json.loads(body or b"{}")
    except ValueError:
        return body, model
    if not isinstance(data, dict):
        return body, model
    model = model or (data.get("model") if isinstance(data.get("model"), str) else None)
    if api == CHAT and data.get("stream"):
        given = data.get("stream_options")
        options: dict[str, Any] = given if isinstance(given, dict) else {}
        if not options.get("include_usage"):
            data["stream_options"] = {**options, "include_usage": True}
            return json.dumps(data).encode(), model
    return body, model


def _json_payloads(data: bytes) -> list[Any]:
    try:
        return [json.loads(data)] if data else []
    except ValueError:
        return []


def _error_message(payloads: list[Any], raw: bytearray) -> str:
    for payload in payloads:
        if isinstance(payload, dict):
            error = payload.get("error")
            if isinstance(error, dict) and error.get("message"):
                return str(error["message"])[:300]
            if isinstance(error, str):
                return error[:300]
    return bytes(raw[:300]).decode("utf-8", errors="replace")
