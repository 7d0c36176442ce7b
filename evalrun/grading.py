"""The oracle verdict: the task's own format injects its hidden verifier after the agent and judges.

How a verifier is run and read is the format's business (`TaskFormat.grade`: verify.sh's exit
code for evalrun tasks, tests/test.sh's reward file for Harbor tasks). What grading adds is the
rule every format shares: when the sandbox itself fails, the outcome is `error` - never `fail`.
"""

from __future__ import annotations

from evalrun.errors import SandboxError
from evalrun.formats.base import Verdict
from evalrun.records import Outcome
from evalrun.sandbox.base import Sandbox
from evalrun.tasks import Task

__all__ = ["Verdict", "grade"]


async def grade(task: Task, sandbox: Sandbox, answer: str, timeout_s: float) -> Verdict:
    """Run the task's oracle in `sandbox` on the agent's final `answer`."""
    try:
        return await task.format.grade(sandbox, answer, timeout_s)
    except (SandboxError, OSError) as exc:
        return Verdict(Outcome.error, f"verify could not run: {exc}", None, "", 0.0)
