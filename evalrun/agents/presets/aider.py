"""`agent=aider`: aider, one non-interactive message (`--message-file --yes-always`), through the
gateway.

Installed from PyPI into the host cache (`pip install --target`, CPython 3.11 wheels) and run by
the sandbox's python3. It calls its model through litellm's Chat Completions path: the model goes
as `openai/<model>` with `OPENAI_API_BASE` at the gateway. Git commits, update checks and
analytics are off. aider edits files through its diff format rather than tool calls, so its
agent log is its chat history file: each `Applied edit to <file>` becomes an `edit` step, each
`Running <command>` a `shell` step, and its last reply is the answer. Its `> Tokens: 1.2k sent,
...` lines are not put on steps: aider rounds counts over 999 to hundreds or thousands and, when
the API gave no usage, prints its own tokenizer's estimate; the gateway meters the exact total.
"""

from __future__ import annotations

import re
import shlex

from evalrun.agents.install import Package
from evalrun.agents.installed import GATEWAY_KEY, Converted, InstalledAgent, Launch
from evalrun.models.records import ToolCall

_APPLIED = re.compile(r"^> Applied edit to (?P<path>.+?)\s*$")
_RUNNING = re.compile(r"^> Running (?P<command>.+?)\s*$")


class Aider(InstalledAgent):
    name = "aider"
    apis = ("openai", "openai-compatible", "openrouter", "gemini")
    log_name = "chat.history.md"
    mcp_refusal = "aider has no MCP client"
    env_defaults = {
        "OPENAI_API_KEY": GATEWAY_KEY,
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "AIDER_CHECK_UPDATE": "false",
        "AIDER_ANALYTICS": "false",
        "PYTHONDONTWRITEBYTECODE": "1",
    }

    def package(self) -> Package:
        return Package("pypi", "aider-chat", self.version)

    def cli(self, root: str) -> str:
        return f"{root}/site/aider/__main__.py"

    def version_command(self, launch: Launch) -> str:
        return f"PYTHONPATH={shlex.quote(launch.root + '/site')} python3 -m aider --version"

    def command(self, launch: Launch) -> str:
        q = shlex.quote
        return (
            f"PYTHONPATH={q(launch.root + '/site')} OPENAI_API_BASE={launch.url} "
            f"python3 -m aider --model {q('openai/' + launch.model)} --yes-always --no-git "
            "--no-auto-commits --no-pretty --no-stream --no-show-model-warnings "
            "--no-check-update --analytics-disable --no-show-release-notes "
            f"--input-history-file {q(launch.scratch + '/input.history')} "
            f"--chat-history-file {q(launch.log_file)} {self.args} "
            f"--message-file {q(launch.prompt_file)} < /dev/null"
        )

    def convert(self, log: str) -> Converted:
        converted = Converted()
        reply: list[str] = []
        last = ""
        for line in log.splitlines():
            applied, running = _APPLIED.match(line), _RUNNING.match(line)
            if applied:
                converted.trajectory.append(ToolCall(name="edit", args={"path": applied["path"]}))
            elif running:
                converted.trajectory.append(
                    ToolCall(name="shell", args={"command": running["command"]})
                )
            if line.startswith(("#### ", "> ", "# aider chat")) or line.rstrip() == ">":
                if any(part.strip() for part in reply):
                    last = "\n".join(reply).strip()
                reply = []
            else:
                reply.append(line)
        if any(part.strip() for part in reply):
            last = "\n".join(reply).strip()
        converted.output = last
        return converted
