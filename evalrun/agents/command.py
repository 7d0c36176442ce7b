"""`agent=command`: run an external agent CLI inside the sandbox, in the workspace.

    evalrun agent=command agent.cmd='my-agent --yes --prompt-file {prompt_file}'

The prompt is written to a file outside the workspace and only the shell-quoted *path* is put
into the command line - the prompt text never goes through a shell. The file lives in a scratch
folder the command's own user creates under the sandbox's TMPDIR (`mktemp -d`), so the CLI can
write its trajectory and usage files next to it on every backend, while the harness's
`private_dir` stays out of the agent's reach.
Placeholders, each replaced by a shell-quoted path (write `{{` / `}}` for literal braces):

  {prompt_file}      the task's prompt, UTF-8 text               also in $EVALRUN_PROMPT_FILE
  {trajectory_file}  where the CLI MAY write its tool calls      also in $EVALRUN_TRAJECTORY_FILE
  {usage_file}       where the CLI MAY write its usage and cost  also in $EVALRUN_USAGE_FILE
  {atif_file}        where the CLI MAY write its ATIF trajectory also in $EVALRUN_ATIF_FILE
  {mcp_servers_file} the task's MCP servers (JSON, below)        also in $EVALRUN_MCP_SERVERS_FILE
  {workdir}          the workspace (also the command's working directory)

The command's stdout is the agent's final answer, and the tail of its stderr is kept beside it
(the record's `agent.stderr` and agent.log), whatever its exit; a non-zero exit or a timeout is
recorded as the agent's error and the sample is still graded.

Trajectory file - JSON lines, one tool call per line, in order:
  {"name": "edit", "args": {"path": "a.py"}, "result": "replaced 1 occurrence",
   "duration_s": 0.01, "error": null}
  Only `name` is required. Long results are cut to a bounded summary.

Usage file - one JSON object, every field optional:
  {"requests": 3, "input_tokens": 5200, "output_tokens": 410, "cache_read_tokens": 4000,
   "cache_write_tokens": 0, "cost_usd": 0.0123, "model": "gpt-4o-mini"}
  `input_tokens` includes cached tokens. Without `cost_usd`, a `model` is priced from the
  price table (see `evalrun.config.pricing`); with neither, the cost stays unknown.

ATIF file - a whole trajectory in Harbor's Agent Trajectory Interchange Format, at
{atif_file} or at Harbor's /logs/agent/trajectory.json (`evalrun.agents.atif_files`): kept as
the sample's trajectory.json; its tool calls stand in for a missing trajectory file, its
`final_metrics` for a missing usage file, its last agent message for an empty stdout.

MCP servers file - a JSON list, one object per server the task offers (empty for most tasks):
  [{"name": "vault", "transport": "stdio", "command": "python3", "args": ["/app/server.py"],
    "url": null}]
  `transport` is `stdio` (start `command` with `args` in the sandbox and speak MCP over its
  stdin/stdout), `sse` or `streamable-http` (connect to `url`). Registering them with the CLI
  is the command's job, e.g. by turning the file into the CLI's own MCP config first.

A malformed line or file is noted on the agent's error; it never fails the run.
The sandbox environment is an allow-list: pass an API key the CLI needs with
`agent.pass_env=[MY_API_KEY]` (its value is read from the host environment, never from config).
"""

from __future__ import annotations

import json
import os
import posixpath
import shlex
import string
from collections.abc import Mapping, Sequence

from pydantic import ValidationError

from evalrun.agents.atif_files import (
    ATIF_ENV,
    ATIF_FILE,
    calls_of,
    final_message,
    read_agent_atif,
    usage_of,
)
from evalrun.agents.base import nothing_to_prepare
from evalrun.agents.coder.tools import SUMMARY_CHARS, clip
from evalrun.config.pricing import resolve_price
from evalrun.errors import SandboxError, UsageError
from evalrun.models.records import AgentResult, ToolCall, Usage
from evalrun.models.writable import tail_text
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.loader import Task

FILES = {  # placeholder -> (file name in the scratch folder, the variable holding its path)
    "prompt_file": ("prompt.md", "EVALRUN_PROMPT_FILE"),
    "trajectory_file": ("trajectory.jsonl", "EVALRUN_TRAJECTORY_FILE"),
    "usage_file": ("usage.json", "EVALRUN_USAGE_FILE"),
    "atif_file": (ATIF_FILE, ATIF_ENV),
    "mcp_servers_file": ("mcp_servers.json", "EVALRUN_MCP_SERVERS_FILE"),
}
PLACEHOLDERS = (*FILES, "workdir")
MAX_TRAJECTORY_STEPS = 5000
STDERR_CHARS = 8000  # the tail of the command's stderr kept on the record and in agent.log
USAGE_FIELDS = (
    "requests",
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)


def placeholders(cmd: str) -> set[str]:
    """The `{names}` used in `cmd`; raises `UsageError` on malformed braces."""
    try:
        return {name for _, name, _, _ in string.Formatter().parse(cmd) if name is not None}
    except ValueError as exc:
        raise UsageError(
            f"agent.cmd: {exc} in {cmd!r} (write {{{{ and }}}} for literal braces)"
        ) from exc


def read_trajectory(text: str) -> tuple[list[ToolCall], list[str]]:
    """Parse the trajectory file: the steps, and a note for each line that was not a step."""
    steps: list[ToolCall] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if len(steps) >= MAX_TRAJECTORY_STEPS:
            problems.append(f"trajectory file: only the first {MAX_TRAJECTORY_STEPS} steps kept")
            break
        try:
            step = ToolCall.model_validate_json(line)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first.get("loc", ())) or "line"
            problems.append(f"trajectory file line {number}: {where}: {first['msg']}")
            continue
        steps.append(step.model_copy(update={"result": clip(step.result, SUMMARY_CHARS)}))
    return steps, problems


def read_usage(text: str | None) -> tuple[Usage, list[str]]:
    """Parse the usage file into `Usage`, pricing it from `model` when no cost is given."""
    if text is None:
        return Usage(cost_source="unknown: the command wrote no usage file"), []
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("expected a JSON object")
        usage = Usage.model_validate({k: v for k, v in data.items() if k in USAGE_FIELDS})
        cost = data.get("cost_usd")
        if cost is not None and not isinstance(cost, int | float):
            raise ValueError(f"cost_usd must be a number, got {cost!r}")
    except (ValueError, ValidationError) as exc:
        note = f"usage file: {exc}".splitlines()[0]
        return Usage(cost_source="unknown: the usage file could not be read"), [note]
    if cost is not None:
        return usage.model_copy(
            update={"cost_usd": float(cost), "cost_source": "reported by the agent"}
        ), []
    model = data.get("model")
    if not isinstance(model, str) or not model:
        source = "unknown: the usage file gives neither cost_usd nor a model to price"
        return usage.model_copy(update={"cost_source": source}), []
    price, source = resolve_price(model)
    cost_usd = None
    if price is not None:
        cost_usd = price.cost(
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
        )
    return usage.model_copy(update={"cost_usd": cost_usd, "cost_source": source}), []


async def _read_optional(sandbox: Sandbox, path: str) -> str | None:
    try:
        data = await sandbox.read_file(path)
    except (FileNotFoundError, IsADirectoryError):
        return None
    return data.decode("utf-8", errors="replace")


async def _scratch_folder(sandbox: Sandbox) -> str:
    """A fresh folder outside the workspace, created (and so writable) by the sandbox's user."""
    made = await sandbox.exec(
        ["bash", "-c", 'mktemp -d "${TMPDIR:-/tmp}/evalrun-agent.XXXXXX"'], timeout_s=60
    )
    folder = made.stdout.strip()
    if not made.ok or not folder.startswith("/"):
        raise SandboxError(f"could not make a scratch folder for the agent: {made.stderr.strip()}")
    return folder


class CommandAgent:
    """See the module docstring."""

    name = "command"
    prepared = nothing_to_prepare

    def __init__(
        self,
        cmd: str | None = None,
        env: Mapping[str, str] | None = None,
        pass_env: Sequence[str] = (),
        timeout_s: float | None = None,
    ):
        self.cmd = cmd or ""
        self.env = {str(k): str(v) for k, v in dict(env or {}).items()}
        self.pass_env = [str(v) for v in pass_env or ()]
        self.timeout_s = timeout_s

    def preflight(self) -> None:
        if not self.cmd.strip():
            raise UsageError(
                "agent.cmd: agent=command needs the command to run, e.g. "
                "agent.cmd='my-agent --yes --prompt-file {prompt_file}'"
            )
        unknown = placeholders(self.cmd) - set(PLACEHOLDERS)
        if unknown:
            known = ", ".join("{" + p + "}" for p in PLACEHOLDERS)
            raise UsageError(
                f"agent.cmd: unknown placeholder(s) {', '.join(sorted(unknown))} in "
                f"{self.cmd!r}; known: {known} (write {{{{ and }}}} for literal braces)"
            )
        missing = [name for name in self.pass_env if name not in os.environ]
        if missing:
            raise UsageError(
                f"agent.pass_env: environment variable(s) {', '.join(missing)} are not set"
            )

    async def run(self, task: Task, sandbox: Sandbox) -> AgentResult:
        folder = await _scratch_folder(sandbox)
        paths = {key: posixpath.join(folder, name) for key, (name, _) in FILES.items()}
        await sandbox.write_file(paths["prompt_file"], task.spec.prompt)
        servers = [s.model_dump(mode="json") for s in task.spec.mcp_servers]
        await sandbox.write_file(paths["mcp_servers_file"], json.dumps(servers, indent=2))
        quoted = {key: shlex.quote(path) for key, path in paths.items()}
        command = self.cmd.format(**quoted, workdir=shlex.quote(sandbox.workdir))
        env = {
            **self.env,
            **{name: os.environ[name] for name in self.pass_env if name in os.environ},
            **{FILES[key][1]: path for key, path in paths.items()},
        }
        result = await sandbox.exec(command, env=env, timeout_s=self.timeout_s)

        problems: list[str] = []
        if result.timed_out:
            problems.append(f"command timed out after {self.timeout_s:g}s")
        elif result.exit_code != 0:
            detail = tail_text(result.stderr.strip(), 500)
            problems.append(f"command exited {result.exit_code}: {detail}".rstrip(": "))
        trajectory_text = await _read_optional(sandbox, paths["trajectory_file"])
        trajectory, notes = read_trajectory(trajectory_text or "")
        problems += notes
        usage_text = await _read_optional(sandbox, paths["usage_file"])
        usage, notes = read_usage(usage_text)
        problems += notes
        own, notes = await read_agent_atif(sandbox, folder, paths["prompt_file"])
        problems += notes
        output = result.stdout
        if own is not None:  # what the agent's ATIF says that nothing else did
            trajectory = trajectory if trajectory_text is not None else calls_of(own)
            usage = usage if usage_text is not None else usage_of(own) or usage
            output = output if output.strip() else final_message(own)
        return AgentResult(
            output=output,
            trajectory=trajectory,
            usage=usage,
            error="; ".join(problems) or None,
            stderr=tail_text(result.stderr, STDERR_CHARS),
            atif=own.to_json() if own is not None else None,
        )
