"""`agent=gemini_cli`: Google's Gemini CLI (`gemini -p --yolo`), through the gateway.

Installed from npm (`npm install --ignore-scripts`) with node itself from npm's pinned
`node-linux-<arch>` build, since the sandboxes have no node. It speaks Google's own Gemini API,
so it needs `provider=google` (the preset's default): `GOOGLE_GEMINI_BASE_URL` points it at the
gateway and `~/.gemini/settings.json` selects API-key auth (the key it holds is a placeholder;
the gateway adds the real one). Telemetry and usage statistics are off. Its agent log is
`--output-format stream-json`: `tool_use` / `tool_result` events and assistant `message`
deltas, joined into the answer. Its only token counts are the final `result`'s run totals, so
its steps carry no tokens of their own (the gateway meters the run's total). A task's MCP
servers go into the same settings.json's `mcpServers` (Gemini CLI starts a stdio server itself).
"""

from __future__ import annotations

import json
import shlex

from evalrun.agents.install import Package
from evalrun.agents.installed import GATEWAY_KEY, Converted, InstalledAgent, Launch
from evalrun.agents.presets.logs import json_lines, result_text
from evalrun.models.records import ToolCall
from evalrun.tasks.base import McpServer, McpTransport

NODE_VERSION = "22.23.5"
SETTINGS = {
    "security": {"auth": {"selectedType": "gemini-api-key"}},
    "selectedAuthType": "gemini-api-key",
    "telemetry": {"enabled": False},
    "privacy": {"usageStatisticsEnabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}


def _mcp_entry(server: McpServer) -> dict[str, object]:
    """One `mcpServers` entry of Gemini CLI's settings.json: a stdio `command`, a streamable
    HTTP `httpUrl`, or an SSE `url`."""
    if server.transport is McpTransport.stdio:
        return {"command": server.command, "args": list(server.args)}
    key = "httpUrl" if server.transport is McpTransport.streamable_http else "url"
    return {key: server.url}


class GeminiCli(InstalledAgent):
    name = "gemini_cli"
    apis = ("gemini-native",)
    env_defaults = {
        "GEMINI_API_KEY": GATEWAY_KEY,
        "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }

    def package(self) -> Package:
        return Package("npm", "@google/gemini-cli", self.version, node=NODE_VERSION)

    def cli(self, root: str) -> str:
        return f"{root}/node_modules/@google/gemini-cli/bundle/gemini.js"

    def _node(self, launch: Launch) -> str:
        return f"{launch.runtime[0]}/package/bin/node" if launch.runtime else "node"

    def version_command(self, launch: Launch) -> str:
        return f"{shlex.quote(self._node(launch))} {shlex.quote(launch.cli)} --version"

    def files(self, launch: Launch) -> dict[str, str]:
        settings: dict[str, object] = dict(SETTINGS)
        if launch.mcp_servers:
            settings["mcpServers"] = {s.name: _mcp_entry(s) for s in launch.mcp_servers}
        return {f"{launch.scratch}/settings.json": json.dumps(settings, indent=2)}

    def command(self, launch: Launch) -> str:
        q = shlex.quote
        return (
            f'mkdir -p "$HOME/.gemini" && cp {q(launch.scratch + "/settings.json")} '
            f'"$HOME/.gemini/settings.json" && GOOGLE_GEMINI_BASE_URL={launch.url} '
            f"{q(self._node(launch))} {q(launch.cli)} --yolo -m {q(launch.model)} "
            f"--output-format stream-json {self.args} "
            f'-p "$(cat {q(launch.prompt_file)})" < /dev/null > {q(launch.log_file)}'
        )

    def convert(self, log: str) -> Converted:
        converted = Converted()
        steps: dict[str, ToolCall] = {}
        text: list[str] = []
        for event in json_lines(log, converted.notes):
            kind = event.get("type")
            if kind == "message" and event.get("role") == "assistant":
                text.append(str(event.get("content") or ""))
            elif kind == "tool_use":
                params = event.get("parameters")
                step = ToolCall(
                    name=str(event.get("tool_name") or "tool"),
                    args=params if isinstance(params, dict) else {},
                )
                steps[str(event.get("tool_id"))] = step
                converted.trajectory.append(step)
                text = []  # the answer is what it said after its last tool call
            elif kind == "tool_result":
                answered = steps.get(str(event.get("tool_id")))
                if answered is not None:
                    error = event.get("error")
                    answered.result = result_text(event.get("output") or error)
                    if event.get("status") not in (None, "success"):
                        answered.error = result_text(error) or str(event.get("status"))
            elif kind == "result" and event.get("status") not in (None, "success"):
                converted.notes.append(f"gemini_cli: {event.get('error') or event.get('status')}")
        converted.output = "".join(text)
        return converted
