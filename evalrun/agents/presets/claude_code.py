"""`agent=claude_code`: Anthropic's Claude Code CLI, headless (`claude -p`), through the gateway.

Installed from npm as its linux platform package (one binary, no node). It speaks the Anthropic
Messages API, so it needs `provider=anthropic` (the preset's default); `ANTHROPIC_BASE_URL`
points it at the gateway. Permissions are off (`--dangerously-skip-permissions`, which Claude Code
allows as root only with `IS_SANDBOX=1`), auto-update and non-essential traffic are off. Its
agent log is `--output-format stream-json --verbose`: assistant `tool_use` blocks, user
`tool_result` blocks, and a final `result` message whose text is the answer.

Each assistant event repeats its API message's `usage`, which Claude Code takes from the stream's
`message_start`: the prompt counts there are final (the first tool call of that message gets
input + cache read + cache creation tokens), but `output_tokens` is the stream's opening
placeholder (1 in every recorded log), so a step's output tokens stay unknown; the run's total
comes exact from the gateway.

A task's MCP servers go to `--mcp-config` (a JSON file of `mcpServers` in the agent's scratch
folder): Claude Code starts a stdio server itself and names its tools `mcp__<server>__<tool>`.
"""

from __future__ import annotations

import json
import shlex
from datetime import datetime

from evalrun.agents.install import Package
from evalrun.agents.installed import GATEWAY_KEY, Converted, InstalledAgent, Launch
from evalrun.agents.presets.logs import count, json_lines, mapping, result_text, sequence
from evalrun.models.records import ToolCall
from evalrun.tasks.base import McpServer, McpTransport


def _seconds(stamp: object) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _mcp_config(launch: Launch) -> str:
    return f"{launch.scratch}/mcp.json"


def _mcp_entry(server: McpServer) -> dict[str, object]:
    """One `mcpServers` entry as Claude Code's `--mcp-config` reads it (`http` is its name for
    streamable HTTP)."""
    if server.transport is McpTransport.stdio:
        return {"type": "stdio", "command": server.command, "args": list(server.args)}
    kind = "http" if server.transport is McpTransport.streamable_http else "sse"
    return {"type": kind, "url": server.url}


class ClaudeCode(InstalledAgent):
    name = "claude_code"
    apis = ("anthropic",)
    env_defaults = {
        "IS_SANDBOX": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "ANTHROPIC_API_KEY": GATEWAY_KEY,
    }

    def package(self) -> Package:
        return Package("npm-binary", "@anthropic-ai/claude-code-linux-{arch}", self.version)

    def cli(self, root: str) -> str:
        return f"{root}/package/claude"

    def files(self, launch: Launch) -> dict[str, str]:
        if not launch.mcp_servers:
            return {}
        servers = {s.name: _mcp_entry(s) for s in launch.mcp_servers}
        return {_mcp_config(launch): json.dumps({"mcpServers": servers}, indent=2)}

    def command(self, launch: Launch) -> str:
        q = shlex.quote
        mcp = f"--mcp-config {q(_mcp_config(launch))} " if launch.mcp_servers else ""
        return (
            f"ANTHROPIC_BASE_URL={launch.url} {q(launch.cli)} -p --output-format stream-json "
            f"--verbose --dangerously-skip-permissions --model {q(launch.model)} {mcp}"
            f"{self.args} < {q(launch.prompt_file)} > {q(launch.log_file)}"
        )

    def convert(self, log: str) -> Converted:
        converted = Converted()
        pending: dict[str, tuple[ToolCall, float | None]] = {}
        credited: set[str] = set()  # API messages whose tokens are on a step already
        for event in json_lines(log, converted.notes):
            kind = event.get("type")
            message = mapping(event.get("message"))
            blocks = sequence(message.get("content"))
            if kind == "assistant":
                for block in blocks:
                    if isinstance(block, dict) and block.get("type") == "tool_use":
                        args = mapping(block.get("input"))
                        step = ToolCall(
                            name=str(block.get("name") or "tool"),
                            args=args,
                            call_id=str(block["id"]) if block.get("id") else None,
                        )
                        if str(message.get("id")) not in credited:
                            credited.add(str(message.get("id")))
                            usage = mapping(message.get("usage"))
                            step.input_tokens = count(
                                usage.get("input_tokens"),
                                usage.get("cache_read_input_tokens"),
                                usage.get("cache_creation_input_tokens"),
                            )
                        converted.trajectory.append(step)
                        pending[str(block.get("id"))] = (step, _seconds(event.get("timestamp")))
            elif kind == "user":
                for block in blocks:
                    if not isinstance(block, dict) or block.get("type") != "tool_result":
                        continue
                    entry = pending.pop(str(block.get("tool_use_id")), None)
                    if entry is None:
                        continue
                    answered, started = entry
                    answered.result = result_text(block.get("content"))
                    if block.get("is_error"):
                        answered.error = answered.result or "tool error"
                    ended = _seconds(event.get("timestamp"))
                    if started is not None and ended is not None:
                        answered.duration_s = max(ended - started, 0.0)
            elif kind == "result":
                converted.output = str(event.get("result") or "")
                if event.get("is_error"):
                    converted.notes.append(f"claude_code reported an error: {converted.output}")
        return converted
