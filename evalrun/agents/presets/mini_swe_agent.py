"""`agent=mini_swe_agent`: mini-swe-agent (`mini`, yolo mode), through the gateway.

Installed from PyPI into the host cache (`pip install --target`, CPython 3.11 wheels) and run by
the sandbox's python3. It calls its model through litellm's Chat Completions path, so any
OpenAI-compatible provider works: the model goes as `openai/<model>` with `OPENAI_API_BASE` at
the gateway. It finishes by running `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`
(`--exit-immediately`); its agent log is its trajectory file (`-o`), a JSON object whose
`messages` are chat messages with `bash` tool calls and their results.
"""

from __future__ import annotations

import json
import shlex

from evalrun.agents.install import Package
from evalrun.agents.installed import GATEWAY_KEY, Converted, InstalledAgent, Launch
from evalrun.agents.presets.logs import from_chat_messages, mapping


class MiniSweAgent(InstalledAgent):
    name = "mini_swe_agent"
    apis = ("openai", "openai-compatible", "openrouter", "gemini")
    log_name = "trajectory.json"
    mcp_refusal = "mini-swe-agent has no MCP client (its one tool is bash)"
    env_defaults = {
        "OPENAI_API_KEY": GATEWAY_KEY,
        "MSWEA_CONFIGURED": "true",
        "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True",
        "PYTHONDONTWRITEBYTECODE": "1",
    }

    def package(self) -> Package:
        return Package("pypi", "mini-swe-agent", self.version)

    def cli(self, root: str) -> str:
        return f"{root}/site/minisweagent/run/mini.py"

    def version_command(self, launch: Launch) -> str:
        site = shlex.quote(f"{launch.root}/site")
        return (
            f"PYTHONPATH={site} python3 -c 'import minisweagent; print(minisweagent.__version__)'"
        )

    def command(self, launch: Launch) -> str:
        q = shlex.quote
        return (
            f"PYTHONPATH={q(launch.root + '/site')} OPENAI_API_BASE={launch.url} "
            f"python3 -m minisweagent.run.mini -y --exit-immediately -l 0 "
            f"-m {q('openai/' + launch.model)} -o {q(launch.log_file)} {self.args} "
            f'-t "$(cat {q(launch.prompt_file)})" < /dev/null'
        )

    def convert(self, log: str) -> Converted:
        if not log.strip():
            return Converted(notes=["mini_swe_agent wrote no trajectory file"])
        try:
            data = json.loads(log)
        except ValueError as exc:
            return Converted(notes=[f"mini_swe_agent trajectory: {exc}"])
        messages = data.get("messages") if isinstance(data, dict) else None
        converted = from_chat_messages(messages if isinstance(messages, list) else [])
        info = mapping(data.get("info"))
        submission = info.get("submission")
        if isinstance(submission, str) and submission.strip():
            converted.output = submission
        status = info.get("exit_status")
        if status not in (None, "Submitted"):
            converted.notes.append(f"mini_swe_agent exit status: {status}")
        return converted
