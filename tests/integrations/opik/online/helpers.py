"""Shared set-up for the online evaluation tests: a live project logged into the Opik stand-in
through the real SDK, and a stand-in judge model that scores by what a conversation says."""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rich.console import Console

from evalrun.cli.hydra import compose_config
from tests.openai_standin import Received, Reply, answer

LIVE = "support-bot"
JUDGE_KEY = "sk-online-judge-4242"
COT = "1. Read the whole conversation. 2. Weigh it against the criteria. 3. Give 0-10."
QUALITY = re.compile(r"\[quality (\d+)\]")


def log_threads(
    threads: dict[str, list[tuple[str, str]]], project: str = LIVE, day: int = 2
) -> None:
    """Log each thread's turns as traces of `project` on 2026-11-<day>, as a production app
    would."""
    import opik

    client = opik.Opik(project_name=project, _show_misconfiguration_message=False)
    start = datetime(2026, 11, day, tzinfo=UTC)
    for n, (thread_id, turns) in enumerate(threads.items()):
        for m, (user, assistant) in enumerate(turns):
            client.trace(
                name="chat",
                input={"question": user},
                output={"answer": assistant},
                thread_id=thread_id,
                start_time=start + timedelta(minutes=10 * n + m),
                end_time=start + timedelta(minutes=10 * n + m, seconds=5),
            )
    client.flush()
    client.end()


def judge_reply(request: Received) -> Reply:
    """G-Eval's chain of thought, or a score read from the conversation's last `[quality N]` mark
    (how it ended); a conversation without a mark gets an unparseable answer."""
    system = request.body["messages"][0]["content"]
    if system.startswith("Based on the following task description"):
        return answer(COT)
    marks = [int(m) for m in QUALITY.findall(request.body["messages"][-1]["content"])]
    if not marks:
        return answer("I would rather not say.")
    score = marks[-1]
    return answer(json.dumps({"score": score, "reason": f"quality mark {score} in the thread"}))


def online_overrides(base_url: str, run_dir: Path, *more: str) -> list[str]:
    return [
        f"project={LIVE}",
        "judge=default",
        f"provider.base_url={base_url}",
        "provider.model=standin-model",
        "provider.api_key_env=ONLINE_JUDGE_KEY",
        "workers=1",
        "retry_backoff_s=0",
        f"run_dir={run_dir}",
        *more,
    ]


def online(base_url: str, run_dir: Path, *more: str) -> tuple[int, str]:
    """Run `evalrun online` in-process; (exit code, what it printed)."""
    from evalrun.integrations.opik.online import run_online

    out = io.StringIO()
    cfg = compose_config(online_overrides(base_url, run_dir, *more), config_name="online")
    code = run_online(cfg, Console(file=out, width=200), overrides=list(more))
    return code, out.getvalue()
