"""The oracle verdict: inject the hidden verify/ folder after the agent, run verify.sh, read exit 0.

The agent's final message is written to a file outside the workspace and its path handed to
verify.sh in `EVALRUN_ANSWER_FILE`, so answer tasks can grade what the agent said.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from evalrun.errors import SandboxError
from evalrun.records import Outcome
from evalrun.sandbox.base import Sandbox
from evalrun.sandbox.output import tail_text
from evalrun.tasks import ANSWER_ENV, VERIFY_SCRIPT, Task

VERIFY_TAIL_CHARS = 4000


@dataclass(frozen=True)
class Verdict:
    outcome: Outcome
    reason: str | None
    exit_code: int | None
    output: str
    duration_s: float
    timed_out: bool = False


async def grade(task: Task, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
    """Run the task's oracle in `sandbox`. A sandbox failure is an `error`, never a `fail`."""
    answer_path = posixpath.join(sandbox.private_dir, "answer.txt")
    try:
        await sandbox.write_file(answer_path, answer)
        await sandbox.put(task.layout.verify_dir, ".")
        result = await sandbox.exec(
            ["bash", VERIFY_SCRIPT], env={ANSWER_ENV: answer_path}, timeout_s=timeout_s
        )
    except (SandboxError, OSError) as exc:
        return Verdict(Outcome.error, f"verify could not run: {exc}", None, "", 0.0)
    output = tail_text((result.stdout + result.stderr).strip(), VERIFY_TAIL_CHARS)
    if result.timed_out:
        reason = f"verify.sh timed out after {timeout_s:g}s"
        return Verdict(Outcome.failed, reason, None, output, result.duration_s, timed_out=True)
    if result.exit_code == 0:
        return Verdict(Outcome.passed, None, 0, output, result.duration_s)
    return Verdict(
        Outcome.failed,
        _reason(output, result.exit_code),
        result.exit_code,
        output,
        result.duration_s,
    )


def _reason(output: str, exit_code: int | None) -> str:
    """The verify script's own `FAIL: ...` line, else its last line, else the exit code."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in lines:
        if line.startswith("FAIL"):
            return line[:500]
    if lines:
        return lines[-1][:500]
    return f"verify.sh exited {exit_code} without output"
