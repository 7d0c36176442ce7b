"""Shared pieces of the agent-log converters: JSON lines, bounded results, chat message lists."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from evalrun.agents.coder.tools import SUMMARY_CHARS, clip
from evalrun.agents.installed import Converted
from evalrun.models.records import ToolCall


def json_lines(text: str, notes: list[str]) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines log; other lines are skipped (counted in `notes`)."""
    bad = 0
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict):
            yield value
    if bad:
        notes.append(f"agent log: {bad} line(s) were not JSON")


def result_text(value: Any) -> str:
    """A tool result as bounded text, whatever shape the agent gave it."""
    if isinstance(value, list):
        value = "\n".join(
            str(part.get("text", "")) if isinstance(part, dict) else str(part) for part in value
        )
    elif not isinstance(value, str):
        value = json.dumps(value) if value is not None else ""
    return clip(value, SUMMARY_CHARS)


def mapping(value: Any) -> dict[str, Any]:
    """`value` when the agent log gave an object there, else {} (logs are untrusted)."""
    return value if isinstance(value, dict) else {}


def sequence(value: Any) -> list[Any]:
    """`value` when the agent log gave a list there, else []."""
    return value if isinstance(value, list) else []


def count(*parts: Any) -> int | None:
    """The sum of a usage record's token counts, or None when its first (main) count is missing:
    a per-step figure is reported only when the log gave it, never made up."""
    if not parts or not isinstance(parts[0], int) or isinstance(parts[0], bool):
        return None
    return sum(p for p in parts if isinstance(p, int) and not isinstance(p, bool))


def arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"raw": raw}
        return parsed if isinstance(parsed, dict) else {"value": parsed}
    return {}


def from_chat_messages(messages: list[Any]) -> Converted:
    """OpenAI-chat-style messages (assistant `tool_calls`, `tool` results) -> steps + answer.

    An assistant message that kept its model response (mini-swe-agent's `extra.response`) gives
    that response's Chat Completions usage to its first tool call; `prompt_tokens` already
    counts cached tokens."""
    steps: dict[str, ToolCall] = {}
    order: list[ToolCall] = []
    output = ""
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            if isinstance(message.get("content"), str) and message["content"].strip():
                output = message["content"]
            usage = mapping(mapping(mapping(message.get("extra")).get("response")).get("usage"))
            for n, call in enumerate(sequence(message.get("tool_calls"))):
                function = mapping(mapping(call).get("function"))
                call_id = mapping(call).get("id")
                step = ToolCall(
                    name=str(function.get("name") or "tool"),
                    args=arguments(function.get("arguments")),
                    call_id=str(call_id) if call_id else None,
                )
                if n == 0:
                    step.input_tokens = count(usage.get("prompt_tokens"))
                    step.output_tokens = count(usage.get("completion_tokens"))
                steps[str(mapping(call).get("id"))] = step
                order.append(step)
        elif role == "tool":
            answered = steps.get(str(message.get("tool_call_id")))
            if answered is not None:
                answered.result = result_text(message.get("content"))
    return Converted(trajectory=order, output=output)
