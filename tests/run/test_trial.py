"""The trial's grading rules: the verifier's start-up hook is written after the agent phase, unless
the task or the run turned verifier hardening off - and then a stdin verifier is shadowable again."""

from __future__ import annotations

import asyncio
import textwrap

import pytest

from evalrun.agents.oracle import OracleAgent
from evalrun.models.records import Outcome
from evalrun.run.trial import Limits, Trial
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.loader import load_task
from evalrun.verifier import hardening

STDIN_VERIFIER = textwrap.dedent(
    """\
    python3 - <<'PY'
    import json, sys
    sys.exit(0 if json.load(open("answer.json")) == {"answer": 42} else 1)
    PY
    """
)
SHADOW = 'print("PASS"); raise SystemExit(0)\n'


@pytest.mark.parametrize(
    ("task_says", "run_says", "hardened"),
    [(None, True, True), (False, True, False), (None, False, False), (True, False, False)],
)
def test_the_hook_is_written_unless_the_task_or_the_run_turns_it_off(
    make_task, task_says, run_says, hardened
):
    spec = {} if task_says is None else {"verifier_hardening": task_says}
    folder = make_task(spec=spec, files={"verify/verify.sh": STDIN_VERIFIER})
    task = load_task(folder, verifier_hardening=run_says)
    assert task.verifier_hardening is hardened

    async def scenario():
        async with LocalBackend().open("grading") as box:
            await task.format.prepare(box, 30)
            await box.write_file("json.py", SHADOW)  # the agent's reward hack
            trial = Trial(task, 0, OracleAgent(), Limits(verify_s=30), "grading")
            verdict, _ = await trial.grade(box, task, "")
            try:
                await box.read_file(hardening.hook_path(box))
                written = True
            except FileNotFoundError:
                written = False
            return verdict, written

    verdict, written = asyncio.run(scenario())
    assert written is hardened
    assert verdict.outcome is (Outcome.failed if hardened else Outcome.passed)
