"""The model gateway against local stand-ins of the four APIs (tests/api_standins.py).

Requests go the way an agent's do: HTTP over a sample's unix socket (the in-sandbox forwarder
is exercised by the agent tests on real sandboxes). No live provider is called.
"""

from __future__ import annotations

import http.client
import json
import socket

import pytest

from evalrun.config.pricing import Price
from evalrun.gateway.ledger import Budget, Ledger
from evalrun.gateway.meter import SSEParser
from evalrun.gateway.server import BUDGET_STATUS, Gateway, Upstream
from tests.api_standins import ApiStandin, Turn, say

KEY = "sk-real-key-never-in-a-sandbox"
PRICE = Price(input_per_mtok=2.0, output_per_mtok=10.0, cache_read_per_mtok=0.5)


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path: str):
        super().__init__("localhost", timeout=30)
        self._path = path

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(self._path)


def post(session, path: str, body: dict, headers: dict | None = None) -> tuple[int, bytes]:
    conn = UnixHTTPConnection(str(session.socket))
    conn.request(
        "POST", path, json.dumps(body), {"Content-Type": "application/json", **(headers or {})}
    )
    response = conn.getresponse()
    data = response.read()
    conn.close()
    return response.status, data


def gateway(url: str, budget: Budget | None = None, auth: str = "bearer") -> Gateway:
    ledger = Ledger(budget or Budget(), lambda model: (PRICE, "test price"))
    return Gateway(Upstream(url, auth=auth, key_env="GATEWAY_TEST_KEY"), ledger)


# (path, body, auth style) for each API; the model is in the body except for Gemini's URL.
CALLS = {
    "openai-chat": ("/v1/chat/completions", {"model": "m", "messages": []}, "bearer"),
    "openai-responses": ("/v1/responses", {"model": "m", "input": "hi"}, "bearer"),
    "anthropic": ("/v1/messages", {"model": "m", "messages": [], "max_tokens": 5}, "x-api-key"),
    "gemini": ("/v1beta/models/m:generateContent", {"contents": []}, "x-goog-api-key"),
}


@pytest.mark.parametrize("streamed", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("api", list(CALLS))
def test_each_api_is_forwarded_unchanged_with_the_real_key_and_metered(api, streamed, monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    path, body, auth = CALLS[api]
    if streamed:
        body = {**body, "stream": True}
        path = path.replace(":generateContent", ":streamGenerateContent") + (
            "?alt=sse" if api == "gemini" else ""
        )
    first = Turn(
        calls=[("bash", {"command": "ls"}), ("read", {"path": "a"})],
        input_tokens=1000,
        output_tokens=50,
        cached_tokens=400,
    )
    script = [first, say("two")]
    with ApiStandin(script, model="m") as server, gateway(server.url, auth=auth) as gw:
        session = gw.open("t#0")
        for _ in range(2):
            status, data = post(session, path, body, {"Authorization": "Bearer agent-dummy"})
            assert status == 200, data
        usage = session.account.usage()
        received = server.requests
    assert server.served[0][0] == api
    totals = server.totals()
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (
        totals["requests"],
        totals["input_tokens"],
        totals["output_tokens"],
    )
    assert usage.cache_read_tokens == 400
    assert usage.cost_usd == pytest.approx(
        PRICE.cost(1000, 50, 400) + PRICE.cost(100, 20), rel=1e-9
    )
    assert usage.cost_source == "metered by evalrun's gateway"
    # Each request on its own, with the ids of the tool calls its response asked for (what a
    # trajectory step is matched by); Gemini gives its calls no id.
    calls = session.account.calls
    asked = {"anthropic": ["toolu_1_0", "toolu_1_1"], "gemini": []}.get(
        api, ["call_1_0", "call_1_1"]
    )
    assert [c.tool_call_ids for c in calls] == [asked, []]
    assert (calls[0].input_tokens, calls[0].output_tokens, calls[0].cache_read_tokens) == (
        1000,
        50,
        400,
    )
    assert calls[0].cost_usd == pytest.approx(PRICE.cost(1000, 50, 400), rel=1e-9)
    header = {
        "bearer": "authorization",
        "x-api-key": "x-api-key",
        "x-goog-api-key": "x-goog-api-key",
    }
    for request in received:
        value = request.headers[header[auth]]
        assert value == (f"Bearer {KEY}" if auth == "bearer" else KEY)
        assert "agent-dummy" not in json.dumps(request.headers)
    if api == "openai-chat" and streamed:  # asked to include usage, otherwise unchanged
        assert received[0].body["stream_options"] == {"include_usage": True}
        assert received[0].body["messages"] == []
    else:
        assert received[0].body == body


def test_streamed_bytes_reach_the_agent_as_the_provider_sent_them(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    with ApiStandin([say("hello there")], model="m") as server, gateway(server.url) as gw:
        session = gw.open("t#0")
        status, data = post(session, "/v1/messages", {"model": "m", "stream": True}, {})
    events = SSEParser().feed(data)
    assert status == 200
    assert next(e["type"] for e in events) == "message_start"
    assert any(e.get("delta", {}).get("text") == "hello there" for e in events)


def test_a_sample_past_its_request_budget_is_refused_and_says_why(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    script = [say("a"), say("b"), say("c")]
    with ApiStandin(script) as server, gateway(server.url, Budget(requests=2)) as gw:
        session, other = gw.open("t#0"), gw.open("t#1")
        statuses = [post(session, "/v1/chat/completions", {"model": "m"})[0] for _ in range(3)]
        _status, data = post(session, "/v1/chat/completions", {"model": "m"})
        assert post(other, "/v1/chat/completions", {"model": "m"})[0] == 200  # its own budget
    assert statuses == [200, 200, BUDGET_STATUS]
    assert "budget.requests" in json.loads(data)["error"]["message"]
    assert session.account.refused.startswith("budget.requests")
    assert session.account.usage().requests == 2
    assert len(server.completed) == 3


def test_the_run_cap_refuses_every_sample_once_reached(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    script = [say("a", input_tokens=500_000, output_tokens=0)] * 3
    with ApiStandin(script) as server, gateway(server.url, Budget(run_usd=1.0)) as gw:
        first, second = gw.open("t#0"), gw.open("t#1")
        assert post(first, "/v1/chat/completions", {"model": "m"})[0] == 200  # $1.00
        status, _ = post(second, "/v1/chat/completions", {"model": "m"})
        assert gw.ledger.run_stopped and "budget.run_usd" in gw.ledger.run_stopped
    assert status == BUDGET_STATUS
    assert second.account.run_cap_hit and len(server.completed) == 1


def test_provider_errors_are_passed_through_and_kept_on_the_account(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    with ApiStandin([Turn(status=429, text="slow down")]) as server, gateway(server.url) as gw:
        session = gw.open("t#0")
        status, data = post(session, "/v1/chat/completions", {"model": "m"})
    assert status == 429 and b"slow down" in data
    assert session.account.upstream_failures == [(429, "slow down")]
    assert session.account.last_failed and session.account.usage().requests == 0


def test_an_unreachable_provider_is_a_gateway_failure_not_a_hang(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with gateway(dead) as gw:
        session = gw.open("t#0")
        status, _ = post(session, "/v1/chat/completions", {"model": "m"})
    assert status == 502
    assert "could not reach the provider" in session.account.gateway_failures[0]


def test_sockets_are_private_to_their_sample(monkeypatch):
    monkeypatch.setenv("GATEWAY_TEST_KEY", KEY)
    with ApiStandin([]) as server, gateway(server.url) as gw:
        session = gw.open("t#0")
        folder_mode = gw.folder.stat().st_mode & 0o777
        assert len(session.socket.name) >= 32  # 128 random bits
        gw.close(session)
        assert not session.socket.exists()
    assert folder_mode == 0o711  # enterable, not listable
    assert not gw.folder.exists()
