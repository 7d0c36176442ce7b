"""The Gemini request adjustments, on a body shaped like the ones pydantic-ai sends."""

from __future__ import annotations

from evalrun.agents.coder.gemini import gemini_body

BODY = {
    "model": "gemini-2.5-flash",
    "messages": [
        {"role": "user", "content": "fix it"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                {"id": "c2", "type": "function", "function": {"name": "ls", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "text"},
        {"role": "tool", "tool_call_id": "c2", "content": "a.py"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "read",
                "strict": False,
                "parameters": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"path": {"type": "string", "title": "Path"}},
                    "required": ["path"],
                },
            },
        }
    ],
}


def test_tool_messages_get_the_name_of_the_call_they_answer():
    out = gemini_body(BODY)
    names = [m.get("name") for m in out["messages"] if m["role"] == "tool"]
    assert names == ["read", "ls"]


def test_tool_schemas_lose_the_keys_gemini_rejects_and_keep_the_rest():
    function = gemini_body(BODY)["tools"][0]["function"]
    assert function["parameters"] == {
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"],
    }
    assert "strict" not in function


def test_the_input_body_is_not_changed():
    gemini_body(BODY)
    assert BODY["tools"][0]["function"]["parameters"]["additionalProperties"] is False
    assert "name" not in BODY["messages"][2]
