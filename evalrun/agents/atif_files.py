"""Reading back the ATIF trajectory an agent wrote itself, with no glue from its author.

An agent that already speaks ATIF (`evalrun.models.atif`) leaves its trajectory where either
runner looks for it:

  $EVALRUN_ATIF_FILE             evalrun's: a fresh path in the agent's scratch folder
                                 (`{atif_file}` in a command agent's `agent.cmd`)
  /logs/agent/trajectory.json    Harbor's: where its installed agents write theirs

The second path is shared by every sample of a host (`sandbox=local`), so a file there is taken
only when it was written during this agent run (newer than the prompt file evalrun wrote just
before starting it). A file that is there but is not valid ATIF is noted on the agent's error
and left out; it never fails the sample. What is kept goes on `AgentResult.atif`, and the
sample's trajectory.json is made from it (`evalrun.rundir.trajectory`). When the agent gave no
other account of its steps or usage, they are read from the document (`calls_of`, `usage_of`).
"""

from __future__ import annotations

import shlex

from evalrun.agents.coder.tools import SUMMARY_CHARS, clip
from evalrun.errors import UsageError
from evalrun.models.atif import Content, Trajectory, read_atif
from evalrun.models.records import ToolCall, Usage
from evalrun.sandbox.base import Sandbox

ATIF_FILE = "trajectory.json"  # in the agent's scratch folder
ATIF_ENV = "EVALRUN_ATIF_FILE"
HARBOR_ATIF = "/logs/agent/trajectory.json"


async def read_agent_atif(
    sandbox: Sandbox, scratch: str, started: str
) -> tuple[Trajectory | None, list[str]]:
    """The ATIF document the agent wrote in this run (see the module docstring), and a note for
    one that was not valid. `started`: a file written just before the agent started."""
    notes: list[str] = []
    for path in (f"{scratch}/{ATIF_FILE}", HARBOR_ATIF):
        if path == HARBOR_ATIF and not await _written_since(sandbox, path, started):
            continue
        try:
            data = await sandbox.read_file(path)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            continue
        try:
            return read_atif(data, f"the agent's ATIF file {path}"), notes
        except UsageError as exc:
            notes.append(str(exc))
    return None, notes


async def _written_since(sandbox: Sandbox, path: str, started: str) -> bool:
    fresh = f"test -f {shlex.quote(path)} && test {shlex.quote(path)} -nt {shlex.quote(started)}"
    return (await sandbox.exec(["bash", "-c", fresh], timeout_s=60)).ok


def calls_of(document: Trajectory) -> list[ToolCall]:
    """The document's tool calls as evalrun's trajectory: each with the result its step's
    observation gave it, the first call of a step with that step's tokens."""
    calls: list[ToolCall] = []
    for step in document.steps:
        results = {
            r.source_call_id: r.content
            for r in (step.observation.results if step.observation else [])
        }
        for n, call in enumerate(step.tool_calls or []):
            made = ToolCall(
                name=call.function_name,
                args=call.arguments,
                result=clip(_text(results.get(call.tool_call_id)), SUMMARY_CHARS),
            )
            if n == 0 and step.metrics is not None:
                made.input_tokens = step.metrics.prompt_tokens
                made.output_tokens = step.metrics.completion_tokens
            calls.append(made)
    return calls


def usage_of(document: Trajectory) -> Usage | None:
    """The document's own totals as a `Usage` (the agent's report), or None when it has none."""
    totals = document.final_metrics
    if totals is None or totals.total_prompt_tokens is None:
        return None
    return Usage(
        input_tokens=totals.total_prompt_tokens,
        output_tokens=totals.total_completion_tokens or 0,
        cache_read_tokens=totals.total_cached_tokens or 0,
        cost_usd=totals.total_cost_usd,
        cost_source="reported by the agent (its ATIF final_metrics)"
        if totals.total_cost_usd is not None
        else "unknown: the agent's ATIF final_metrics give no cost",
    )


def final_message(document: Trajectory) -> str:
    """The text of the document's last agent message, the agent's answer when it gave none."""
    for step in reversed(document.steps):
        text = _text(step.message)
        if step.source == "agent" and text.strip():
            return text
    return ""


def _text(content: Content | None) -> str:
    """A message or result as text; a media part as `[image: <path>]`."""
    if content is None or isinstance(content, str):
        return content or ""
    texts = []
    for part in content:
        where = part.source.path if part.source is not None else ""
        texts.append(part.text if part.text is not None else f"[{part.type}: {where}]")
    return "\n".join(texts)
