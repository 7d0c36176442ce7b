"""`evalrun online rule create|list`: Opik's online LLM-as-judge rules, from the same judge texts.

`rule create project=<p> [judge=<option>] [sample_rate=0.1]` makes one rule per criterion in
conf/online.yaml (or `judges_file=`), named `evalrun <criterion>`:

- type `trace_thread_llm_as_judge` (`level=traces`: `llm_as_judge`, its variables mapping the
  trace's input and output), sampling rate `sample_rate`, enabled unless `rule_enabled=false`;
- messages: G-Eval's own two messages from opik's template - the criterion's task introduction
  and evaluation criteria, and the chain of thought the judge model writes for them (one model
  call per criterion, as G-Eval makes offline) - with Opik's `{{context}}` (the thread as a JSON
  list of {role, content}, the same shape `evalrun online` shows its judge) where the solution
  goes;
- output schema: one DOUBLE score named like the criterion, 0-1 as offline, whose description
  carries the judge config hash;
- model: `rule_model`, else the judge model without its LiteLLM vendor prefix
  (`openai/gpt-4o-mini` -> `gpt-4o-mini`). Opik calls that model with the provider key set in
  Opik's own AI-provider settings; evalrun never sends a key to Opik.

A rule whose hash and settings already match is left alone (no model call, no request); a rule
with the same hash and another sampling rate is updated in place; a changed text or model
regenerates the messages and updates the rule. `rule list` shows every rule (of one project with
`project=`) and whether each evalrun rule matches the current judge config. Exercised against
`tests/opik_standin.py`, a local stand-in for Opik's REST API, not a real Opik server.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console

from evalrun.errors import UsageError
from evalrun.integrations.opik.conversation import Meter, metered_model
from evalrun.integrations.opik.criteria import MARKER, Criterion, rule_messages
from evalrun.integrations.opik.export import connect
from evalrun.integrations.opik.settings import (
    build_criteria,
    destination,
    judge_price,
    read_settings,
)

RULE_PREFIX = "evalrun "
RULE_TYPES = {"threads": "trace_thread_llm_as_judge", "traces": "llm_as_judge"}
PAGE = 100


def rule_name(criterion: Criterion) -> str:
    return f"{RULE_PREFIX}{criterion.name}"


def opik_model(rule_model: str | None, judge_model: str) -> str:
    """The model name Opik's rule calls: `rule_model`, else the LiteLLM name without its vendor."""
    if rule_model:
        return rule_model
    return judge_model.split("/", 1)[1] if "/" in judge_model else judge_model


def description(criterion: Criterion) -> str:
    return (
        f"G-Eval score from 0.0 to 1.0 (its 0-10 score divided by 10), as evalrun's offline judge "
        f"{criterion.name} gives [{criterion.marker}]"
    )


def _code(rule: Any) -> Any:
    return getattr(rule, "code", None)


def rule_hash(rule: Any) -> str | None:
    """The judge config hash an evalrun rule carries in its output schema, if any."""
    for item in getattr(_code(rule), "schema_", None) or []:
        text = str(item.description or "")
        if MARKER in text:
            return text.split(MARKER, 1)[1][:16]
    return None


def _project_id(client: Any, project: str) -> str:
    from opik.rest_api.core.api_error import ApiError

    try:
        return str(client.rest_client.projects.retrieve_project(name=project).id)
    except ApiError as exc:
        if exc.status_code == 404:
            raise UsageError(f"project: Opik has no project named {project!r}") from None
        raise


def find_rules(client: Any, project_id: str | None) -> list[Any]:
    rules: list[Any] = []
    page = 1
    while True:
        found = client.rest_client.automation_rule_evaluators.find_evaluators(
            project_id=project_id, page=page, size=PAGE
        )
        rules.extend(found.content or [])
        if not found.content or len(rules) >= (found.total or 0):
            return rules
        page += 1


def _body(kind: str, code: dict[str, Any], settings: dict[str, Any], level: str) -> Any:
    """A create (`kind="Write"`) or update (`kind="Update"`) body, in the SDK's own types."""
    from opik.rest_api import types

    suffix = "TraceThreadLlmAsJudge" if level == "threads" else "LlmAsJudge"
    body_type = getattr(types, f"AutomationRuleEvaluator{kind}_{suffix}")
    code_type = getattr(types, f"{suffix}Code" + ("Write" if kind == "Write" else ""))
    return body_type(**settings, action="evaluator", code=code_type.model_validate(code))


def desired_code(criterion: Criterion, chain_of_thought: str, cfg: Any, model: str) -> dict:
    code: dict[str, Any] = {
        "model": {"name": model, "temperature": cfg.judge.temperature},
        "messages": [
            {"role": m["role"].upper(), "content": m["content"]}
            for m in rule_messages(criterion, chain_of_thought, cfg.level)
        ],
        "schema_": [
            {"name": criterion.name, "type": "DOUBLE", "description": description(criterion)}
        ],
    }
    if cfg.level == "traces":
        code["variables"] = {
            "input": f"input.{cfg.input_key}" if cfg.input_key else "input",
            "output": f"output.{cfg.output_key}" if cfg.output_key else "output",
        }
    return code


def create_rules(cfg: Any, console: Console) -> int:
    s = read_settings(cfg)
    judge, every = build_criteria(cfg)

    def say(text: str) -> None:
        console.print(text, highlight=False, soft_wrap=True)

    criteria = [c for c in every if c.spec is not None]  # built-in metrics have no rule text
    for metric in (c for c in every if c.spec is None):
        say(f"skipped    {metric.name}  (an opik built-in metric: no judge text to make a rule of)")
    meter = Meter(price=judge_price(cfg, judge.model, None))
    client = connect(destination(cfg.tracker, s.project))
    project_id = _project_id(client, s.project)
    existing = {r.name: r for r in find_rules(client, project_id)}
    api = client.rest_client.automation_rule_evaluators
    model = opik_model(cfg.rule_model, judge.model or "")
    enabled = bool(cfg.rule_enabled)
    settings = {
        "name": "",
        "project_ids": [project_id],
        "sampling_rate": s.sample_rate,
        "enabled": enabled,
    }
    for criterion in criteria:
        name = rule_name(criterion)
        current: Any = existing.get(name)  # an SDK rule, or None
        wanted = {**settings, "name": name}
        same_text = current is not None and (
            current.type == RULE_TYPES[s.level]
            and rule_hash(current) == criterion.config_hash
            and getattr(_code(current).model, "name", None) == model
        )
        if same_text and current.sampling_rate == s.sample_rate and current.enabled == enabled:
            say(f"unchanged  {name}  ({criterion.marker})")
            continue
        if same_text:
            code, change = _code(current).model_dump(), f"sampling rate {s.sample_rate:g}"
        else:
            assert criterion.spec is not None
            geval = judge.geval(criterion.spec, metered_model(judge, meter))
            code = desired_code(criterion, geval.llm_chain_of_thought(), cfg, model)
            change = f"new judge text or model ({criterion.marker})"
        if current is None:
            api.create_automation_rule_evaluator(request=_body("Write", code, wanted, s.level))
            say(f"created    {name}  ({criterion.marker})")
        else:
            api.update_automation_rule_evaluator(
                current.id, request=_body("Update", code, wanted, s.level)
            )
            say(f"updated    {name}  {change}")
    cost = f"${meter.spent_usd:.4f}" if meter.price is not None or meter.calls == 0 else "unknown"
    say(
        f"{len(criteria)} rule(s) for project {s.project}: model {model} "
        f"(Opik calls it with the key in its AI-provider settings), sampling rate "
        f"{s.sample_rate:g}; "
        f"judge calls to write them: {meter.calls}, {cost}"
    )
    return 0


def list_rules(cfg: Any, console: Console) -> int:
    s = read_settings(cfg, need_project=False)
    try:
        _, criteria = build_criteria(cfg, preflight=False)
        hashes = {rule_name(c): c.config_hash for c in criteria}
    except UsageError:
        hashes = {}
    client = connect(destination(cfg.tracker, s.project))
    project_id = _project_id(client, s.project) if s.project else None
    rules = find_rules(client, project_id)
    for rule in rules:
        projects = ", ".join(p.project_name for p in rule.projects or []) or rule.project_name or ""
        model = getattr(getattr(_code(rule), "model", None), "name", None) or "-"
        found = rule_hash(rule)
        if found is None:
            status = "-"
        elif rule.name in hashes:
            status = "matches the judge config" if hashes[rule.name] == found else "differs"
        else:
            status = "evalrun, not in this judge config"
        console.print(
            f"{rule.name:<32} {rule.type:<26} {projects:<20} "
            f"rate {rule.sampling_rate if rule.sampling_rate is not None else '-'}  "
            f"{'enabled' if rule.enabled else 'disabled'}  {model}  {status}",
            highlight=False,
            soft_wrap=True,
        )
    where = f" in project {s.project}" if s.project else ""
    console.print(f"{len(rules)} rule(s){where}", highlight=False, soft_wrap=True)
    return 0
