"""`agent=codex`: OpenAI's Codex CLI, headless (`codex exec --json`), through the gateway.

Installed from npm as its linux platform package (one binary, no node). It speaks the OpenAI
Responses API, so it needs a provider with `api: openai` (`provider=openai`, the default);
`OPENAI_BASE_URL` alone does not move it, so a provider of its own (`model_providers.evalrun`)
is given on the command line with the gateway's URL and `wire_api = "responses"`. Approvals and
codex's own sandbox are off (`--dangerously-bypass-approvals-and-sandbox`): evalrun's sandbox is
the sandbox. Its agent log is the `--json` event stream: `item.completed` events for command
executions, file changes and tool calls, and `agent_message`s, the last of which is the answer;
`error` items are notices (e.g. no metadata for an unknown model), `turn.failed` is a failure.
The log's only token counts are `turn.completed`'s, summed over every model call of the run, so
its steps carry no tokens of their own (the gateway meters the run's total).
A task's MCP servers go into a config.toml of their own (`[mcp_servers.<name>]`), in a
`CODEX_HOME` in the agent's scratch folder; codex starts a stdio server itself.
"""

from __future__ import annotations

import json
import shlex

from evalrun.agents.install import Package
from evalrun.agents.installed import GATEWAY_KEY, Converted, InstalledAgent, Launch
from evalrun.agents.presets.logs import json_lines, mapping, result_text, sequence
from evalrun.models.records import ToolCall
from evalrun.tasks.base import McpServer, McpTransport

ARCH_TRIPLES = {"x64": "x86_64-unknown-linux-musl", "arm64": "aarch64-unknown-linux-musl"}


def _codex_home(launch: Launch) -> str:
    return f"{launch.scratch}/codex"


def _toml_string(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's; non-ASCII stays as it is)."""
    return json.dumps(text, ensure_ascii=False)


def _mcp_table(server: McpServer) -> str:
    """One `[mcp_servers.<name>]` table of codex's config.toml: a stdio `command` and `args`,
    or the `url` of an HTTP server (codex speaks streamable HTTP)."""
    lines = [f"[mcp_servers.{_toml_string(server.name)}]"]
    if server.transport is McpTransport.stdio:
        args = ", ".join(_toml_string(a) for a in server.args)
        lines += [f"command = {_toml_string(server.command or '')}", f"args = [{args}]"]
    else:
        lines.append(f"url = {_toml_string(server.url or '')}")
    return "\n".join(lines) + "\n"


class Codex(InstalledAgent):
    name = "codex"
    apis = ("openai", "openai-compatible")
    env_defaults = {"EVALRUN_GATEWAY_KEY": GATEWAY_KEY}

    def package(self) -> Package:
        return Package("npm-binary", "@openai/codex@{version}-linux-{arch}", self.version)

    def cli(self, root: str) -> str:
        from evalrun.agents.install import npm_arch

        return f"{root}/package/vendor/{ARCH_TRIPLES.get(npm_arch(), npm_arch())}/bin/codex"

    def files(self, launch: Launch) -> dict[str, str]:
        if not launch.mcp_servers:
            return {}
        tables = "\n".join(_mcp_table(s) for s in launch.mcp_servers)
        return {f"{_codex_home(launch)}/config.toml": tables}

    def command(self, launch: Launch) -> str:
        q = shlex.quote
        home = f"CODEX_HOME={q(_codex_home(launch))} " if launch.mcp_servers else ""
        provider = (
            '"model_providers.evalrun={name=\\"evalrun\\",base_url=\\"$EVALRUN_GATEWAY_URL\\",'
            'wire_api=\\"responses\\",env_key=\\"EVALRUN_GATEWAY_KEY\\"}"'
        )
        return (
            f"{home}{q(launch.cli)} exec --json --skip-git-repo-check "
            f"--dangerously-bypass-approvals-and-sandbox -m {q(launch.model)} "
            f"-c model_provider=evalrun -c {provider} {self.args} - "
            f"< {q(launch.prompt_file)} > {q(launch.log_file)}"
        )

    def convert(self, log: str) -> Converted:
        converted = Converted()
        for event in json_lines(log, converted.notes):
            item = mapping(event.get("item"))
            if event.get("type") in ("turn.failed", "error"):  # fatal; `error` items are notices
                error = mapping(event.get("error")) or event
                converted.notes.append(f"codex: {error.get('message')}")
            if event.get("type") != "item.completed":
                continue
            kind = item.get("type")
            if kind == "agent_message":
                converted.output = str(item.get("text") or "")
            elif kind == "command_execution":
                code = item.get("exit_code")
                converted.trajectory.append(
                    ToolCall(
                        name="shell",
                        args={"command": item.get("command")},
                        result=result_text(item.get("aggregated_output")),
                        error=f"exit {code}" if isinstance(code, int) and code != 0 else None,
                    )
                )
            elif kind == "file_change":
                changes = sequence(item.get("changes"))
                converted.trajectory.append(ToolCall(name="apply_patch", args={"changes": changes}))
            elif kind in ("mcp_tool_call", "web_search"):
                args = {k: v for k, v in item.items() if k not in ("id", "type", "result")}
                converted.trajectory.append(
                    ToolCall(name=str(kind), args=args, result=result_text(item.get("result")))
                )
        return converted
