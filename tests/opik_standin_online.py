"""The part of the Opik stand-in that online evaluation talks to: threads, trace search, thread and
trace feedback scores, and automation rule evaluators (online LLM-as-judge rules).

Shapes follow the opik SDK's generated REST client (opik 2.2.x, `opik/rest_api`): request bodies
as its `traces.search_trace_threads`, `traces.search_traces`, `traces.score_batch_of_threads`,
`traces.score_batch_of_traces` and `automation_rule_evaluators.*` send them, answers parsed into
its `TraceThread`, `TracePublic`, `AutomationRuleEvaluatorPagePublic` and
`AutomationRuleEvaluatorPublic` models. Threads are derived from the traces written with a
`thread_id`, as Opik derives them. Filters are applied for the fields evalrun uses (id, thread_id,
start_time, last_updated_at ...); an unsupported filter field answers 400, so a change in what
evalrun asks shows up. It is a stand-in, not Opik: no authentication, no aggregates, no online
scoring is actually run by the rules it stores.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

FILTER_FIELDS = {
    "id",
    "thread_id",
    "start_time",
    "end_time",
    "last_updated_at",
    "created_at",
    "name",
    "number_of_messages",
}
RULE_TYPES = {"llm_as_judge", "trace_thread_llm_as_judge", "span_llm_as_judge"}
ROLES = {"SYSTEM", "USER", "AI", "TOOL_EXECUTION_RESULT", "CUSTOM"}
SCHEMA_TYPES = {"BOOLEAN", "INTEGER", "DOUBLE"}
SOURCES = {"sdk", "ui", "online_scoring"}


def _now() -> str:
    return datetime.now(UTC).isoformat().replace("+00:00", "Z")


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    when = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def _matches(row: dict[str, Any], flt: dict[str, Any]) -> bool:
    field, op, want = flt.get("field"), flt.get("operator"), flt.get("value")
    have = row.get(field)
    if flt.get("type") == "date_time" or field in {
        "start_time",
        "end_time",
        "last_updated_at",
        "created_at",
    }:
        have, want = _time(have), _time(want)
        if have is None:
            return False
    elif field == "number_of_messages":
        want = float(want)
    ops = {
        "=": lambda a, b: a == b,
        "!=": lambda a, b: a != b,
        ">": lambda a, b: a > b,
        ">=": lambda a, b: a >= b,
        "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b,
        "contains": lambda a, b: str(b) in str(a),
    }
    return ops[op](have, want)


def _bad_filters(filters: list[dict[str, Any]] | None) -> str | None:
    for flt in filters or []:
        if flt.get("field") not in FILTER_FIELDS:
            return f"stand-in: unsupported filter field {flt.get('field')!r}"
        if flt.get("operator") not in {"=", "!=", ">", ">=", "<", "<=", "contains"}:
            return f"stand-in: unsupported filter operator {flt.get('operator')!r}"
    return None


def _after(rows: list[dict[str, Any]], cursor: str | None, limit: int | None) -> list[dict]:
    """The page after the row whose id is `cursor` (the SDK pages by the last id it read)."""
    if cursor:
        ids = [r["id"] for r in rows]
        rows = rows[ids.index(cursor) + 1 :] if cursor in ids else []
    return rows[: limit or 2000]


class OnlineRoutes:
    """Mixed into `OpikStandIn`: needs `self.projects`, `self.traces`, `self._project`."""

    def _init_online(self) -> None:
        self.thread_models: dict[tuple[str, str], str] = {}  # (project id, thread) -> model id
        self.thread_scores: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
        self.thread_score_writes: list[dict[str, Any]] = []  # append-only: every score sent
        self.trace_score_table: dict[str, dict[str, dict[str, Any]]] = {}
        self.rules: dict[str, dict[str, Any]] = {}

    # --- queries for tests ------------------------------------------------------------------
    def project_id(self, name: str) -> str | None:
        found = self.projects.get(name)
        return found["id"] if found else None

    def thread_scores_of(self, project: str, thread_id: str) -> dict[str, dict[str, Any]]:
        return dict(self.thread_scores.get((self.project_id(project) or "", thread_id), {}))

    def traces_in(self, project: str) -> list[dict[str, Any]]:
        return [t for t in self.traces.values() if t.get("project_name") == project]

    # --- derived objects ----------------------------------------------------------------------
    def _score_entry(self, score: dict[str, Any]) -> dict[str, Any]:
        now = _now()
        entry = {k: score.get(k) for k in ("name", "value", "reason", "category_name", "source")}
        author = {k: entry[k] for k in ("value", "reason", "category_name", "source")}
        return {
            **entry,
            "created_at": now,
            "last_updated_at": now,
            "created_by": "admin",
            "last_updated_by": "admin",
            "value_by_author": {"admin": {**author, "last_updated_at": now}},
        }

    def _threads(self, project_id: str) -> list[dict[str, Any]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for trace in self.traces.values():
            if trace.get("thread_id") and self.project_id(trace.get("project_name")) == project_id:
                grouped.setdefault(trace["thread_id"], []).append(trace)
        threads = []
        for thread_id, traces in grouped.items():
            traces.sort(key=lambda t: t["start_time"])
            model_id = self.thread_models.setdefault((project_id, thread_id), str(uuid.uuid4()))
            updated = max(str(t.get("last_updated_at") or t["start_time"]) for t in traces)
            threads.append(
                {
                    "id": thread_id,
                    "project_id": project_id,
                    "thread_model_id": model_id,
                    "start_time": traces[0]["start_time"],
                    "end_time": traces[-1].get("end_time"),
                    "first_message": traces[0].get("input"),
                    "last_message": traces[-1].get("output"),
                    "number_of_messages": 2 * len(traces),
                    "status": "inactive",
                    "tags": [],
                    "feedback_scores": list(
                        self.thread_scores.get((project_id, thread_id), {}).values()
                    ),
                    "created_at": traces[0]["start_time"],
                    "last_updated_at": updated,
                }
            )
        return sorted(threads, key=lambda t: (t["last_updated_at"], t["id"]), reverse=True)

    def _trace_public(self, trace: dict[str, Any]) -> dict[str, Any]:
        scores = list(self.trace_score_table.get(trace["id"], {}).values())
        return {
            **{
                k: trace.get(k)
                for k in (
                    "id",
                    "name",
                    "start_time",
                    "end_time",
                    "input",
                    "output",
                    "metadata",
                    "tags",
                    "thread_id",
                    "last_updated_at",
                )
            },
            "project_id": self.project_id(trace.get("project_name")),
            "created_at": trace["start_time"],
            "feedback_scores": scores,
        }

    def _rule_public(self, rule: dict[str, Any]) -> dict[str, Any]:
        projects = [
            {"project_id": p["id"], "project_name": p["name"]}
            for p in self.projects.values()
            if p["id"] in rule["project_ids"]
        ]
        projects.sort(key=lambda p: p["project_name"])
        public = {k: v for k, v in rule.items() if k != "project_ids"}
        return {
            **public,
            "project_id": projects[0]["project_id"] if projects else None,
            "project_name": projects[0]["project_name"] if projects else None,
            "projects": projects,
        }

    def _rule_problem(self, body: dict[str, Any], creating: bool) -> str | None:
        if not body.get("name"):
            return "name: must not be blank"
        if body.get("type") not in RULE_TYPES:
            return f"type: unknown rule type {body.get('type')!r}"
        if body.get("action") not in {"evaluator", "annotation_queue_router"}:
            return "action: must be evaluator or annotation_queue_router"
        rate = body.get("sampling_rate")
        if rate is not None and not 0 <= rate <= 1:
            return "sampling_rate: must be between 0 and 1"
        known = {p["id"] for p in self.projects.values()}
        ids = body.get("project_ids") or ([body["project_id"]] if body.get("project_id") else [])
        if (creating and not ids) or any(i not in known for i in ids):
            return "project_ids: unknown or missing project"
        code = body.get("code") or {}
        if not (code.get("model") or {}).get("name"):
            return "code.model.name: must not be blank"
        if not code.get("messages") or any(m.get("role") not in ROLES for m in code["messages"]):
            return "code.messages: must be a non-empty list with known roles"
        schema = code.get("schema") or []
        if not schema or any(
            s.get("type") not in SCHEMA_TYPES or not s.get("name") for s in schema
        ):
            return "code.schema: must be a non-empty list of named BOOLEAN/INTEGER/DOUBLE scores"
        if (body["type"] == "llm_as_judge") != ("variables" in code):
            return "code.variables: required for trace rules, not accepted for thread rules"
        return None

    # --- routes ---------------------------------------------------------------------------------
    def route_online(self, req: Any, body: dict[str, Any]) -> tuple[int, Any] | None:
        """(status, payload) for an online-evaluation route, None when it is not one."""
        key = (req.method, req.path)
        if key == ("POST", "v1/private/traces/threads/search"):
            project_id = self.project_id(body.get("project_name")) or body.get("project_id")
            if project_id not in {p["id"] for p in self.projects.values()}:
                return 404, {"errors": ["Project not found"]}
            if problem := _bad_filters(body.get("filters")):
                return 400, {"errors": [problem]}
            rows = [
                t
                for t in self._threads(project_id)
                if all(_matches(t, f) for f in body.get("filters") or [])
            ]
            return 200, _after(rows, body.get("last_retrieved_thread_model_id"), body.get("limit"))
        if key == ("POST", "v1/private/traces/search"):
            if self.project_id(body.get("project_name")) is None:
                return 404, {"errors": ["Project not found"]}
            if problem := _bad_filters(body.get("filters")):
                return 400, {"errors": [problem]}
            rows = sorted(
                (self._trace_public(t) for t in self.traces_in(body["project_name"])),
                key=lambda t: t["id"],
                reverse=True,
            )
            rows = [t for t in rows if all(_matches(t, f) for f in body.get("filters") or [])]
            return 200, _after(rows, body.get("last_retrieved_id"), body.get("limit"))
        if key == ("PUT", "v1/private/traces/threads/feedback-scores"):
            for score in body["scores"]:
                if score.get("source") not in SOURCES or "value" not in score:
                    return 400, {"errors": ["scores: source and value are required"]}
                project_id = self.project_id(score.get("project_name") or "Default Project")
                thread = (project_id or "", score["thread_id"])
                if not any(t["id"] == score["thread_id"] for t in self._threads(thread[0])):
                    return 404, {"errors": [f"thread {score['thread_id']} not found"]}
            for score in body["scores"]:
                thread = (
                    self.project_id(score.get("project_name") or "Default Project") or "",
                    score["thread_id"],
                )
                self.thread_scores.setdefault(thread, {})[score["name"]] = self._score_entry(score)
                self.thread_score_writes.append(score)
            return 204, None
        if key == ("PUT", "v1/private/traces/feedback-scores"):
            self.trace_scores.extend(body["scores"])
            for score in body["scores"]:
                table = self.trace_score_table.setdefault(score["id"], {})
                table[score["name"]] = self._score_entry(score)
            return 204, None
        return self._route_rules(req, body)

    def _route_rules(self, req: Any, body: dict[str, Any]) -> tuple[int, Any] | None:
        base = "v1/private/automations/evaluators"
        if (req.method, req.path) == ("GET", base):
            rules = [self._rule_public(r) for r in self.rules.values()]
            if req.query.get("project_id"):
                rules = [
                    r
                    for r in rules
                    if req.query["project_id"] in {p["project_id"] for p in r["projects"]}
                ]
            if req.query.get("name"):
                rules = [r for r in rules if req.query["name"] in r["name"]]
            page, size = int(req.query.get("page", 1)), int(req.query.get("size", 10))
            content = sorted(rules, key=lambda r: r["created_at"])[(page - 1) * size : page * size]
            return 200, {
                "page": page,
                "size": len(content),
                "total": len(rules),
                "content": content,
                "sortable_by": [],
            }
        if (req.method, req.path) == ("POST", base):
            if problem := self._rule_problem(body, creating=True):
                return 400, {"errors": [problem]}
            rule_id, now = str(uuid.uuid4()), _now()
            self.rules[rule_id] = {
                **{k: body.get(k) for k in ("name", "type", "action", "code", "filters")},
                "id": rule_id,
                "project_ids": body.get("project_ids") or [body.get("project_id")],
                "sampling_rate": body.get("sampling_rate", 1.0),
                "enabled": body.get("enabled", True),
                "trigger_scope": body.get("trigger_scope") or "production",
                "created_at": now,
                "created_by": "admin",
                "last_updated_at": now,
                "last_updated_by": "admin",
            }
            return 201, None
        if (req.method, req.path) == ("POST", f"{base}/delete"):
            for rule_id in body.get("ids", []):
                self.rules.pop(rule_id, None)
            return 204, None
        if req.path.startswith(f"{base}/") and req.path.count("/") == 4:
            rule = self.rules.get(req.path.rsplit("/", 1)[1])
            if rule is None:
                return 404, {"errors": ["Automation rule not found"]}
            if req.method == "GET":
                return 200, self._rule_public(rule)
            if req.method == "PATCH":
                if problem := self._rule_problem({**rule, **body}, creating=False):
                    return 400, {"errors": [problem]}
                rule.update({k: v for k, v in body.items() if k != "project_id"})
                rule["last_updated_at"] = _now()
                return 204, None
        return None
