"""A local stand-in for an Opik server, for offline tests of evalrun's Opik paths.

No Opik server can be reached from the test machines, so this small stdlib HTTP server answers
the subset of Opik's REST API (`/api/v1/private/...`) that the real opik SDK calls for what
evalrun does: health ping, projects, datasets and their items (upsert by item id, NDJSON item
stream), experiments (create, read, update with experiment scores), experiment items (create,
NDJSON stream), traces and spans (batch and single), trace feedback scores, and the assertion
results a test suite run writes (`opik.run_tests`; test suites are datasets) - and, for online
evaluation (`tests/opik_standin_online.py`), threads search, traces search, thread feedback
scores and automation rule evaluators. Request bodies may be gzipped, as the SDK sends them.

It records every request (method, path, headers, decoded body) and keeps enough state to answer
look-ups, so deduplication is tested for real: experiment items are stored append-only (a
duplicate would show), and every trace write is kept besides the trace table. Any route it does
not know answers 404 and is listed in `unhandled`, so an SDK change shows up as a test failure.

It is a stand-in, not Opik: it validates little, computes no aggregates, and ignores
authentication (requests carry no API key in the tests).
"""

from __future__ import annotations

import gzip
import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl

from tests.opik_standin_online import OnlineRoutes

PREFIX = "/api/"


@dataclass
class Request:
    method: str
    path: str  # without the /api/ prefix and query
    headers: dict[str, str]
    body: Any
    raw: str  # the decoded body text (what a secret scan should read)
    query: dict[str, str] = field(default_factory=dict)


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


class OpikStandIn(OnlineRoutes):
    """`with OpikStandIn() as opik:` then point the SDK at `opik.url`."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.unhandled: list[Request] = []
        self.projects: dict[str, dict[str, Any]] = {}  # name -> project
        self.datasets: dict[str, dict[str, Any]] = {}  # id -> dataset
        self.dataset_items: dict[str, dict[str, dict[str, Any]]] = {}  # dataset id -> id -> item
        self.experiments: dict[str, dict[str, Any]] = {}
        self.experiment_items: list[dict[str, Any]] = []  # append-only: duplicates would show
        self.traces: dict[str, dict[str, Any]] = {}
        self.trace_writes: list[dict[str, Any]] = []
        self.spans: dict[str, dict[str, Any]] = {}
        self.trace_scores: list[dict[str, Any]] = []
        self.assertion_results: list[dict[str, Any]] = []
        self.down = False
        self._init_online()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}{PREFIX}"

    def __enter__(self) -> OpikStandIn:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def go_down(self) -> None:
        """Behave like a server that died: drop every request, on new and open connections
        alike, without an answer (clients see the connection close)."""
        self.down = True

    # --- queries for tests ------------------------------------------------------------------
    def dataset_named(self, name: str) -> dict[str, Any] | None:
        return next((d for d in self.datasets.values() if d["name"] == name), None)

    def items_of(self, name: str) -> list[dict[str, Any]]:
        dataset = self.dataset_named(name)
        return list(self.dataset_items.get(dataset["id"], {}).values()) if dataset else []

    def scores_of(self, trace_id: str) -> dict[str, dict[str, Any]]:
        return {s["name"]: s for s in self.trace_scores if s["id"] == trace_id}

    def calls(self, method: str, path: str) -> list[Request]:
        return [r for r in self.requests if r.method == method and r.path == path]

    # --- routes -------------------------------------------------------------------------------
    def _project(self, name: str | None) -> dict[str, Any]:
        name = name or "Default Project"
        if name not in self.projects:
            self.projects[name] = {"id": str(uuid.uuid4()), "name": name, "created_at": _now()}
        return self.projects[name]

    def _dataset_by_name(self, name: str, project: str | None) -> dict[str, Any] | None:
        project_id = self._project(project)["id"]
        for dataset in self.datasets.values():
            if dataset["name"] == name and dataset["project_id"] == project_id:
                return dataset
        return None

    def _dataset_public(self, dataset: dict[str, Any]) -> dict[str, Any]:
        count = len(self.dataset_items.get(dataset["id"], {}))
        return {**dataset, "dataset_items_count": count}

    def route(self, req: Request) -> tuple[int, Any]:
        """(status, payload); a payload that is a list of dicts is sent as NDJSON."""
        body = req.body if isinstance(req.body, dict) else {}
        key = (req.method, req.path)
        if key == ("GET", "is-alive/ping"):
            return 200, {"healthy": True}
        if key == ("GET", "is-alive/ver"):
            return 200, {"version": "1.9.0"}
        if key == ("GET", "v1/private/auth/workspace"):
            return 200, {"workspace_name": "default"}
        if key == ("POST", "v1/private/projects/retrieve"):  # Opik: 404 for an unknown name
            found_project = self.projects.get(body.get("name") or "")
            return (200, found_project) if found_project else (404, {"errors": ["not found"]})
        if req.method == "GET" and (m := re.fullmatch(r"v1/private/projects/([\w-]+)", req.path)):
            found = [p for p in self.projects.values() if p["id"] == m.group(1)]
            return (200, found[0]) if found else (404, {"errors": ["project not found"]})
        if key == ("POST", "v1/private/datasets"):
            if self._dataset_by_name(body["name"], body.get("project_name")):
                return 409, {"errors": ["dataset already exists"]}
            dataset_id = body.get("id") or str(uuid.uuid4())
            self.datasets[dataset_id] = {
                "id": dataset_id,
                "name": body["name"],
                "description": body.get("description"),
                "project_id": self._project(body.get("project_name"))["id"],
                "created_at": _now(),
            }
            return 201, None
        if key == ("POST", "v1/private/datasets/retrieve"):
            found = self._dataset_by_name(body["dataset_name"], body.get("project_name"))
            return (200, self._dataset_public(found)) if found else (404, {"errors": ["not found"]})
        if req.method == "GET" and (m := re.fullmatch(r"v1/private/datasets/([\w-]+)", req.path)):
            found = self.datasets.get(m.group(1))
            return (200, self._dataset_public(found)) if found else (404, {"errors": ["not found"]})
        if req.method == "GET" and re.fullmatch(r"v1/private/datasets/[\w-]+/versions", req.path):
            return 200, {"content": [], "page": 1, "size": 0, "total": 0}
        if key == ("POST", "v1/private/datasets/items/stream"):
            found = self._dataset_by_name(body["dataset_name"], body.get("project_name"))
            table = self.dataset_items.get(found["id"], {}) if found else {}
            items = sorted(
                table.values(),
                key=lambda i: i["id"],
                reverse=True,
            )
            return 200, _page(items, body.get("last_retrieved_id"), body.get("steam_limit"))
        if key == ("PUT", "v1/private/datasets/items"):
            found = self._dataset_by_name(body["dataset_name"], body.get("project_name"))
            if found is None:
                return 404, {"errors": ["dataset not found"]}
            table = self.dataset_items.setdefault(found["id"], {})
            for item in body["items"]:
                item_id = item.get("id") or str(uuid.uuid4())
                table[item_id] = {**item, "id": item_id, "dataset_id": found["id"]}
            return 204, None
        if key == ("POST", "v1/private/experiments"):
            if body.get("id") in self.experiments:
                return 409, {"errors": ["experiment already exists"]}
            dataset = self._dataset_by_name(body["dataset_name"], body.get("project_name"))
            self.experiments[body["id"]] = {
                **body,
                "dataset_id": dataset["id"] if dataset else None,
                "created_at": _now(),
            }
            return 201, None
        if m := re.fullmatch(r"v1/private/experiments/(?!items$)([\w-]+)", req.path):
            found = self.experiments.get(m.group(1))
            if found is None:
                return 404, {"errors": ["experiment not found"]}
            if req.method == "GET":
                return 200, found
            if req.method == "PATCH":
                found.update({k: v for k, v in body.items() if v is not None})
                return 204, None
        if key == ("POST", "v1/private/experiments/items"):
            for item in body["experiment_items"]:
                self.experiment_items.append(item)
            return 204, None
        if key == ("POST", "v1/private/experiments/items/stream"):
            names = {
                e["id"]
                for e in self.experiments.values()
                if e.get("name") == body["experiment_name"]
                and (body.get("project_name") in (None, e.get("project_name")))
            }
            items = sorted(
                (i for i in self.experiment_items if i["experiment_id"] in names),
                key=lambda i: i["id"],
                reverse=True,
            )
            return 200, _page(items, body.get("last_retrieved_id"), body.get("limit"))
        if key in (("POST", "v1/private/traces/batch"), ("POST", "v1/private/traces")):
            for trace in body.get("traces", [body]):
                self.trace_writes.append(trace)
                self.traces[trace["id"]] = trace
                self._project(trace.get("project_name"))  # Opik creates a project on first use
            return 204, None
        if (online := self.route_online(req, body)) is not None:
            return online
        if key in (("POST", "v1/private/spans/batch"), ("POST", "v1/private/spans")):
            for span in body.get("spans", [body]):
                self.spans[span["id"]] = span
            return 204, None
        if key == ("PUT", "v1/private/assertion-results"):
            self.assertion_results.extend(body["assertion_results"])
            return 204, None
        if req.method == "PATCH" and re.fullmatch(r"v1/private/(traces|spans)/[\w-]+", req.path):
            return 204, None
        self.unhandled.append(req)
        return 404, {"errors": [f"stand-in: no route for {req.method} {req.path}"]}

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        standin = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                return None

            def _serve(self) -> None:
                if standin.down:
                    self.close_connection = True
                    return
                length = int(self.headers.get("Content-Length") or 0)
                data = self.rfile.read(length) if length else b""
                if self.headers.get("Content-Encoding") == "gzip":
                    data = gzip.decompress(data)
                raw = data.decode("utf-8", errors="replace")
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                path, _, query = self.path.partition("?")
                path = path[len(PREFIX) :] if path.startswith(PREFIX) else path.lstrip("/")
                req = Request(
                    self.command,
                    path,
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                    raw,
                    dict(parse_qsl(query)),
                )
                with standin._lock:
                    standin.requests.append(req)
                    status, payload = standin.route(req)
                self._reply(status, payload)

            def _reply(self, status: int, payload: Any) -> None:
                if isinstance(payload, list):
                    data = b"".join(json.dumps(row).encode() + b"\n" for row in payload)
                    kind = "application/octet-stream"
                elif payload is None:
                    data, kind = b"", "application/json"
                else:
                    data, kind = json.dumps(payload).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

        return Handler


def _page(rows: list[dict[str, Any]], after: str | None, limit: int | None) -> list[dict]:
    """Rows sorted by id descending, those below the cursor `after`, at most `limit`."""
    if after:
        rows = [r for r in rows if r["id"] < after]
    return rows[: limit or 2000]
