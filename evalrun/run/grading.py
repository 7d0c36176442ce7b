"""The oracle verdict: the task's own format injects its hidden verifier after the agent and judges.

How a verifier is run and read is the format's business (`TaskFormat.grade`: verify.sh's exit
code for evalrun tasks, tests/test.sh's reward file for Harbor tasks). What grading adds are the
rules every format shares:

1. Before any of it, the agent phase ends (`Sandbox.end_agent`): every process the agent left is
   killed and checked gone, and the verifier gets a fresh HOME and TMPDIR. Then, before the
   hidden verifier goes in, what the agent changed is recorded (`evalrun.run.workspace_diff`) when
   the workspace's starting listing was taken, and the verifier's python start-up hook is
   written (`evalrun.verifier.hardening`; unless the task or the run turned verifier hardening off).
2. Once the agent phase has begun, anything that stops the verifier from reaching a verdict
   because of the workspace's state - a permission taken away, a path planted where a hidden
   file goes, a file missing, the verifier crashing, no reward file - is a `fail` with a reason
   naming it. File and process failures inside the sandbox surface as `OSError`.
3. `error` is only what the agent cannot cause: the sandbox itself failing (`SandboxError`:
   engine down, bubblewrap not starting, an agent process the harness could not kill). Errors
   are retried and kept out of pass rates, so an agent must never be able to turn its fail into
   one.
"""

from __future__ import annotations

from evalrun.errors import SandboxError
from evalrun.models.records import Outcome, WorkspaceDiff
from evalrun.run.workspace_diff import Snapshot, changes_since
from evalrun.sandbox.base import Sandbox
from evalrun.tasks.base import Verdict
from evalrun.tasks.loader import Task
from evalrun.verifier import hardening

__all__ = ["Verdict", "grade"]


async def grade(
    task: Task, sandbox: Sandbox, answer: str, timeout_s: float, before: Snapshot | None = None
) -> tuple[Verdict, WorkspaceDiff | None]:
    """End the agent phase in `sandbox`, record what changed since `before` (None: nothing
    recorded), then run the task's oracle on the agent's `answer`."""
    changes = None
    try:
        await sandbox.end_agent()
        if before is not None:
            changes = await changes_since(sandbox, before)
        if task.verifier_hardening:
            await hardening.install(sandbox, task)
        return await task.format.grade(sandbox, answer, timeout_s), changes
    except SandboxError as exc:
        return Verdict(Outcome.error, f"verify could not run: {exc}", None, "", 0.0), changes
    except OSError as exc:
        reason = f"the verifier could not run in the workspace the agent left: {exc}"
        return Verdict(Outcome.failed, reason, None, "", 0.0), changes
