"""`agent=opencode`: opencode (`opencode run --format json`), through the gateway.

Installed from npm as its linux platform package (one binary, no node). Any OpenAI-compatible
provider works: a config file (`OPENCODE_CONFIG`) declares a provider `evalrun` of kind
`@ai-sdk/openai-compatible` (bundled in the binary, so nothing is fetched) whose base URL is the
gateway (`{env:EVALRUN_GATEWAY_URL}`), and allows edits and bash without asking. Model-list
fetching, auto-update and sharing are off. Its agent log is the `--format json` event stream:
`tool_use` parts (tool, input, output, timing) and `text` parts, the last of which is the answer;
each model call ends in a `step_finish` part whose `tokens` go on that call's first tool step
(opencode keeps cached prompt tokens and reasoning apart, so they are added back: prompt =
input + cache read + cache write, output = output + reasoning, as the API counted them).
A task's MCP servers go into the same config file's `mcp` table (opencode starts a stdio server
itself).
"""

from __future__ import annotations

import json
import shlex

from evalrun.agents.install import Package
from evalrun.agents.installed import GATEWAY_KEY, Converted, InstalledAgent, Launch
from evalrun.agents.presets.logs import count, json_lines, mapping, result_text
from evalrun.models.records import ToolCall
from evalrun.tasks.base import McpServer, McpTransport


def _mcp_entry(server: McpServer) -> dict[str, object]:
    """One `mcp` entry of opencode.json: a `local` command line, or a `remote` url (OAuth off:
    a task's server has none to offer)."""
    if server.transport is McpTransport.stdio:
        return {"type": "local", "command": [server.command, *server.args], "enabled": True}
    return {"type": "remote", "url": server.url, "enabled": True, "oauth": False}


class Opencode(InstalledAgent):
    name = "opencode"
    apis = ("openai", "openai-compatible", "openrouter", "gemini")
    env_defaults = {
        "OPENCODE_DISABLE_MODELS_FETCH": "1",
        "OPENCODE_DISABLE_AUTOUPDATE": "1",
        "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    }

    def package(self) -> Package:
        return Package("npm-binary", "opencode-linux-{arch}", self.version)

    def cli(self, root: str) -> str:
        return f"{root}/package/bin/opencode"

    def files(self, launch: Launch) -> dict[str, str]:
        config: dict[str, object] = {
            "provider": {
                "evalrun": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "evalrun gateway",
                    "options": {"baseURL": "{env:EVALRUN_GATEWAY_URL}", "apiKey": GATEWAY_KEY},
                    "models": {launch.model: {"name": launch.model}},
                }
            },
            "model": f"evalrun/{launch.model}",
            "autoupdate": False,
            "share": "disabled",
            "permission": {"edit": "allow", "bash": "allow", "webfetch": "deny"},
        }
        if launch.mcp_servers:
            config["mcp"] = {s.name: _mcp_entry(s) for s in launch.mcp_servers}
        return {f"{launch.scratch}/opencode.json": json.dumps(config, indent=2)}

    def command(self, launch: Launch) -> str:
        q = shlex.quote
        return (
            f"OPENCODE_CONFIG={q(launch.scratch + '/opencode.json')} {q(launch.cli)} run "
            f"--format json -m {q('evalrun/' + launch.model)} {self.args} "
            f'"$(cat {q(launch.prompt_file)})" < /dev/null > {q(launch.log_file)}'
        )

    def convert(self, log: str) -> Converted:
        converted = Converted()
        first: dict[str, ToolCall] = {}  # a model call's (messageID's) first tool step
        for event in json_lines(log, converted.notes):
            part = mapping(event.get("part"))
            if event.get("type") == "text" and part.get("text"):
                converted.output = str(part["text"])
            elif event.get("type") == "step_finish" and str(part.get("messageID")) in first:
                step, used = first.pop(str(part.get("messageID"))), mapping(part.get("tokens"))
                cache = mapping(used.get("cache"))
                step.input_tokens = count(used.get("input"), cache.get("read"), cache.get("write"))
                step.output_tokens = count(used.get("output"), used.get("reasoning"))
            elif event.get("type") == "tool_use":
                state = mapping(part.get("state"))
                timing = mapping(state.get("time"))
                start, end = timing.get("start"), timing.get("end")
                duration = (
                    (end - start) / 1000
                    if isinstance(start, int) and isinstance(end, int)
                    else None
                )
                failed = state.get("status") == "error"
                step = ToolCall(
                    name=str(part.get("tool") or "tool"),
                    args=mapping(state.get("input")),
                    result=result_text(state.get("output") or state.get("error")),
                    duration_s=duration,
                    error=result_text(state.get("error")) if failed else None,
                    call_id=str(part["callID"]) if part.get("callID") else None,
                )
                converted.trajectory.append(step)
                first.setdefault(str(part.get("messageID")), step)
        return converted
