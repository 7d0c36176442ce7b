"""The bundled benchmark: the oracle scores 1.0 (twice over: verdicts are deterministic), the
untouched workspace 0.0, and `check` catches an oracle broken on purpose in a copy."""

from __future__ import annotations

import json
import shutil

from evalrun.tasks.loader import load_suite
from tests.atif_check import checked_trajectories
from tests.cli.test_main import evalrun
from tests.conftest import REPO

TASKS = REPO / "tasks"


def test_suite_shape():
    tasks = load_suite(TASKS)
    assert len(tasks) >= 20
    python = [t for t in tasks if "python" in t.spec.tags]
    assert len(python) >= 12
    levels = {
        d: sum(t.spec.difficulty.value == d for t in tasks) for d in ("easy", "medium", "hard")
    }
    assert all(n >= 5 for n in levels.values()), levels
    assert sum(bool(t.spec.judges) for t in tasks) >= 3
    assert all(t.layout.wrong_dirs for t in tasks), "every task ships a wrong/ overlay"


def test_oracle_scores_one_twice_and_noop_scores_zero(tmp_path):
    gold = evalrun(f"run_dir={tmp_path / 'gold'}", "trials=2", "concurrency=2")
    assert gold.returncode == 0, gold.stdout + gold.stderr
    summary = json.loads((tmp_path / "gold" / "summary.json").read_text())
    assert summary["errors"] == 0
    assert summary["overall"]["pass_hat"]["2"] == 1.0, [
        (t["task_id"], t["passes"]) for t in summary["tasks"] if t["passes"] < 2
    ]
    # Every sample has its trajectory.json (ATIF): the prompt, what the oracle did, no tokens
    # (none were counted: unknown, not 0).
    prompts = {
        t["id"]: t["prompt"]
        for t in json.loads((tmp_path / "gold" / "plan.json").read_text())["tasks"]
    }
    documents = checked_trajectories(tmp_path / "gold")
    assert len(documents) == 2 * len(prompts)
    for document in documents:
        first, last = document["steps"][0], document["steps"][-1]
        assert first == {
            "step_id": 1,
            "source": "user",
            "message": prompts[document["extra"]["evalrun"]["task_id"]],
        }
        assert last["source"] == "agent" and document["agent"]["name"] == "oracle"
        assert "total_prompt_tokens" not in document["final_metrics"]
    noop = evalrun(f"run_dir={tmp_path / 'noop'}", "agent=noop", "concurrency=2")
    assert noop.returncode == 0, noop.stderr
    summary = json.loads((tmp_path / "noop" / "summary.json").read_text())
    assert summary["errors"] == 0
    assert summary["overall"]["pass_at"]["1"] == 0.0


def test_check_catches_a_bundled_oracle_broken_on_purpose(tmp_path):
    suite = tmp_path / "suite"
    for name in ("001-fizzbuzz-off-by-one", "019-sqlite-close-issue"):
        shutil.copytree(TASKS / name, suite / name)
    # Weaken 019's oracle: it only checks that the issue is closed, not what else changed.
    (suite / "019-sqlite-close-issue" / "verify" / "verify.sh").write_text(
        "python3 - <<'PY'\n"
        "import sqlite3, sys\n"
        "db = sqlite3.connect('tracker.db')\n"
        "state = db.execute(\"select state from issues where title like 'Login button misaligned%'\").fetchone()\n"
        "sys.exit(0 if state and state[0] == 'closed' else 1)\n"
        "PY\n"
    )
    proc = evalrun("check", f"tasks_dir={suite}")
    assert proc.returncode == 1
    tail = proc.stdout.split("dishonest verifier(s):")[-1]
    assert "019-sqlite-close-issue" in tail and "001-fizzbuzz" not in tail
    assert "wrong/also-unassigned: expected fail, got pass" in proc.stdout
