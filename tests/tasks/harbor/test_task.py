"""Harbor / Terminal-Bench 2.0 task folders: load -> run -> grade -> check, next to native tasks.

The example tasks under tests/fixtures/harbor/ were written for these tests:
`word-count` (org-prefixed name, numeric version, reward.txt), `stats-partial` (partial credit
through reward.json, a literal [verifier.env]) and `tool-version` (its own Dockerfile and
Terminal-Bench's /tests and /logs/verifier paths; runs only where task images can be built,
see tests/sandbox/docker/test_images.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from evalrun.agents.noop import NoopAgent
from evalrun.agents.oracle import OracleAgent
from evalrun.cli.hydra import compose_config
from evalrun.errors import TaskFormatError, UsageError
from evalrun.models.records import AgentResult, Outcome, SampleRecord
from evalrun.run.engine import Batch, execute, run_sample
from evalrun.run.plan import build
from evalrun.run.trial import Limits
from evalrun.sandbox.base import Network
from evalrun.sandbox.local import LocalBackend
from evalrun.tasks.base import Difficulty
from evalrun.tasks.loader import load_suite, load_task
from tests.conftest import REPO, require_engine

FIXTURES = REPO / "tests" / "fixtures" / "harbor"
LIMITS = Limits(setup_s=30, agent_s=30, verify_s=30, max_retries=0, retry_backoff_s=0.01)

MINIMAL_TOML = '[metadata]\ntags = ["demo"]\n'
REWARD_ONE = 'echo 1 > "$VERIFIER_DIR/reward.txt"\n'


def harbor_task(root: Path, name: str = "demo", *, files: dict[str, str] | None = None) -> Path:
    """Write a small Harbor task folder (rewards 1 when answer.txt holds 42) and return it."""
    folder = root / name
    defaults = {
        "task.toml": MINIMAL_TOML,
        "instruction.md": "Write 42 into answer.txt.\n",
        "environment/README.md": "the answer goes in answer.txt\n",
        "tests/test.sh": textwrap.dedent(
            """\
            if [ "$(cat answer.txt 2>/dev/null)" = 42 ]; then r=1; else r=0; echo "FAIL: not 42"; fi
            echo $r > "$VERIFIER_DIR/reward.txt"
            """
        ),
        "solution/solve.sh": "echo 42 > answer.txt\necho done\n",
    }
    defaults.update(files or {})
    for rel, text in defaults.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def run(task, agent, backend=None) -> SampleRecord:
    return asyncio.run(run_sample(task, 0, agent, backend or LocalBackend(), LIMITS, "t"))


# --- loading -----------------------------------------------------------------------------------


def test_fixture_tasks_map_onto_the_task_model():
    tasks = {t.id: t for t in load_suite(FIXTURES)}
    assert sorted(tasks) == ["stats-partial", "tool-version", "word-count"]

    words = tasks["word-count"]
    assert words.spec.prompt.startswith("How many words are in `notes/essay.txt`?")
    assert words.spec.difficulty is Difficulty.easy  # "Easy" in task.toml: any letter case
    assert words.spec.tags == ("text", "shell")
    assert words.spec.agent_timeout_s == 120.0
    assert words.format.name == "harbor"
    assert words.format.kept_fields["task.name"] == "evalrun-examples/word-count"
    assert words.format.config.schema_label == "1.0"  # `version = 1.0`, a TOML float
    assert words.format.image is None

    stats = tasks["stats-partial"]
    assert stats.format.kept_fields["task.name"] == "stats-partial"  # no org/ prefix
    assert stats.format.config.schema_label == "1.1"

    image = tasks["tool-version"].format.image
    assert image is not None and image.context_dir == FIXTURES / "tool-version" / "environment"
    assert image.build_timeout_s == 300.0


def test_absent_difficulty_means_medium_and_a_version_may_be_an_integer(tmp_path):
    task = load_task(harbor_task(tmp_path, files={"task.toml": "version = 2\n"}))
    assert task.spec.difficulty is Difficulty.medium
    assert task.format.config.schema_label == "2"
    assert task.spec.max_steps > 0 and task.spec.tags == ()


@pytest.mark.parametrize(
    ("toml", "warning"),
    [
        ("[verifer]\ntimeout_sec = 5\n", "unknown table [verifer] (did you mean 'verifier'?)"),
        (
            "[verifier]\ntimeout_secs = 5\n",
            "unknown key [verifier] 'timeout_secs' (did you mean 'timeout_sec'?)",
        ),
        ("colour = 'red'\n", "unknown key 'colour'"),
        ("[task]\nformat = 'harbor'\n", "unknown key [task] 'format'"),
    ],
)
def test_a_key_harbor_ignores_loads_with_a_warning_and_strict_refuses_it(tmp_path, toml, warning):
    folder = harbor_task(tmp_path, files={"task.toml": toml})
    task = load_task(folder)
    assert task.format.warnings == (f"{folder / 'task.toml'}: {warning}",)
    with pytest.raises(TaskFormatError) as err:
        load_task(folder, strict=True)
    assert str(err.value).startswith(f"{folder / 'task.toml'}: field ")
    assert warning in str(err.value) and "strict_formats" in str(err.value)


def test_metadata_is_free_form_and_unused_fields_are_kept_unchecked(tmp_path):
    toml = (
        "[metadata]\nreward_type = 'binary'\ndificulty = 'hard'\n"
        "[task]\nname = 'a/b/c'\nkeywords = 'not-a-list'\n"
    )
    task = load_task(harbor_task(tmp_path, files={"task.toml": toml}))
    assert task.format.warnings == ()  # Harbor's [metadata] takes any key
    assert task.spec.difficulty is Difficulty.medium  # a misspelt key is kept, not guessed
    assert task.format.kept_fields == {
        "metadata.reward_type": "binary",
        "metadata.dificulty": "hard",
        "task.name": "a/b/c",
        "task.keywords": "not-a-list",
    }


@pytest.mark.parametrize(
    ("toml", "key", "words"),
    [
        (
            "[metadata]\ndifficulty = 'extreme'\n",
            "metadata.difficulty",
            "'easy', 'medium' or 'hard'",
        ),
        ("[agent]\ntimeout_sec = -1\n", "agent.timeout_sec", "greater than 0"),
        ("[metadata]\ntags = 'python'\n", "metadata.tags", "valid tuple"),
        ("[environment]\nnetwork_mode = 'open'\n", "environment.network_mode", "'no-network'"),
        ("[environment]\nworkdir = 'app'\n", "environment.workdir", "absolute path"),
        ("[environment]\nworkdir = '/usr/app'\n", "environment.workdir", "/usr"),
        ("[environment]\nmemory = 'lots'\n", "environment.memory", "a size like '2G'"),
        ("[[steps]]\nname = '../up'\n", "steps.0.name", "letters, digits"),
        ("[verifier.env]\nN = 3\n", "verifier.env.N", "valid string"),
    ],
)
def test_a_bad_value_evalrun_uses_names_file_and_key(tmp_path, toml, key, words):
    folder = harbor_task(tmp_path, files={"task.toml": toml})
    with pytest.raises(TaskFormatError) as err:
        load_task(folder)
    message = str(err.value)
    assert str(folder / "task.toml") in message
    assert f"field '{key}'" in message
    assert words in message


def test_malformed_toml(tmp_path):
    folder = harbor_task(tmp_path, files={"task.toml": "[verifier\ntimeout_sec = 5\n"})
    with pytest.raises(TaskFormatError, match=r"task.toml: not valid TOML"):
        load_task(folder)


@pytest.mark.parametrize(
    ("drop", "words"),
    [
        ("instruction.md", "instruction.md: missing"),
        ("tests/test.sh", "tests/test.sh: missing"),
    ],
)
def test_missing_required_files_are_named(tmp_path, drop, words):
    folder = harbor_task(tmp_path)
    (folder / drop).unlink()
    with pytest.raises(TaskFormatError, match=words):
        load_task(folder)


def test_a_folder_in_both_formats_or_neither_is_refused(tmp_path, make_task):
    native = make_task()
    (native / "task.toml").write_text(MINIMAL_TOML)
    with pytest.raises(TaskFormatError, match=r"holds both task.yaml .* and task.toml"):
        load_task(native)
    empty = tmp_path / "empty-task"
    empty.mkdir()
    with pytest.raises(TaskFormatError, match=r"needs a task.yaml .* or a task.toml"):
        load_task(empty)


# --- running and grading -----------------------------------------------------------------------


@pytest.fixture
def mixed_suite(make_task, tmp_path) -> Path:
    """Two native tasks and the Harbor fixtures in one tasks_dir."""
    suite = make_task("001-answer").parent
    make_task("002-second")
    for name in ("word-count", "stats-partial", "tool-version"):
        shutil.copytree(FIXTURES / name, suite / name)
    return suite


def test_a_mixed_tasks_dir_runs_both_formats(mixed_suite):
    runnable = [t for t in load_suite(mixed_suite) if t.format.sandbox_spec.image is None]
    assert [(t.id, t.format.name) for t in runnable] == [
        ("001-answer", "evalrun"),
        ("002-second", "evalrun"),
        ("stats-partial", "harbor"),
        ("word-count", "harbor"),
    ]
    for agent, expected in ((OracleAgent(), Outcome.passed), (NoopAgent(), Outcome.failed)):
        records: list[SampleRecord] = []
        cells = [(t, 0) for t in runnable]
        asyncio.run(
            execute(cells, Batch(agent, LocalBackend(), LIMITS, "t", 2), on_record=records.append)
        )
        assert {r.task_id: r.outcome for r in records} == {t.id: expected for t in runnable}
        rewards = {r.task_id: r.scores.get("reward") for r in records}
        assert rewards["001-answer"] is None  # native tasks have no reward
        assert rewards["word-count"] == (1.0 if expected is Outcome.passed else 0.0)


def test_gold_solution_output_is_the_final_answer():
    task = load_task(FIXTURES / "word-count")
    rec = run(task, OracleAgent())
    assert rec.outcome is Outcome.passed
    assert rec.agent.output == "count.txt now holds 26\n"
    assert rec.verify_exit_code == 0


def test_fractional_reward_is_kept_as_a_score_and_the_threshold_decides():
    strict = load_task(FIXTURES / "stats-partial")
    rec = run(strict, NoopAgent())
    assert rec.outcome is Outcome.failed
    assert rec.scores == {"reward": 0.5, "reward.helpers_correct": 2.0}
    assert rec.reason.startswith("reward 0.5 < threshold 1: FAIL: median([3, 1, 2]) is wrong")

    lenient = load_task(FIXTURES / "stats-partial", reward_threshold=0.5)
    rec = run(lenient, NoopAgent())
    assert rec.outcome is Outcome.passed
    assert rec.scores["reward"] == 0.5


@pytest.mark.parametrize(
    ("script", "words"),
    [
        ("echo 'all good'\n", "wrote no reward: neither reward.txt nor reward.json"),
        ('echo lots > "$VERIFIER_DIR/reward.txt"\n', "reward.txt is not a number: 'lots'"),
        ('echo nan > "$VERIFIER_DIR/reward.txt"\n', "not a finite number"),
        ('echo \'{"a": 1, "b": 0}\' > "$VERIFIER_DIR/reward.json"\n', "no 'reward' key"),
        ('echo \'{"reward": "yes"}\' > "$VERIFIER_DIR/reward.json"\n', "is not a number"),
        ("echo '{oops' > \"$VERIFIER_DIR/reward.json\"\n", "reward.json is not valid JSON"),
    ],
)
def test_no_usable_reward_is_a_fail_with_its_reason_never_a_silent_zero(tmp_path, script, words):
    """The verifier ran in the agent's workspace: the agent could have caused it, so it is a
    fail (an error would be retried and left out of every pass rate)."""
    task = load_task(harbor_task(tmp_path, files={"tests/test.sh": script}))
    rec = run(task, OracleAgent())
    assert rec.outcome is Outcome.failed
    assert words in rec.reason
    assert rec.scores == {}


def test_reward_json_with_a_single_key_or_a_bare_number(tmp_path):
    single = harbor_task(
        tmp_path,
        "single",
        files={"tests/test.sh": 'echo \'{"score": 1}\' > "$VERIFIER_DIR/reward.json"\n'},
    )
    bare = harbor_task(
        tmp_path, "bare", files={"tests/test.sh": 'echo 0.25 > "$VERIFIER_DIR/reward.json"\n'}
    )
    assert run(load_task(single), NoopAgent()).outcome is Outcome.passed
    rec = run(load_task(bare), NoopAgent())
    assert (rec.outcome, rec.scores) == (Outcome.failed, {"reward": 0.25})


class PlantingAgent:
    """Tries to pass without doing the work: plants a reward and its own tests/test.sh."""

    name = "planter"

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        listing = await sandbox.exec("ls -A", timeout_s=10)
        await sandbox.write_file(f"{sandbox.private_dir}/verifier/reward.txt", "1")
        await sandbox.write_file("tests/test.sh", 'echo 1 > "$VERIFIER_DIR/reward.txt"\n')
        return AgentResult(output=listing.stdout)


def test_tests_arrive_only_after_the_agent_and_planted_rewards_are_wiped():
    task = load_task(FIXTURES / "word-count")
    rec = run(task, PlantingAgent())
    assert rec.agent.output.split() == ["notes"]  # environment/ only: no tests/, no solution/
    assert rec.outcome is Outcome.failed
    assert rec.scores == {"reward": 0.0}


def test_test_sh_sees_an_allow_listed_environment_and_a_verifier_dir_outside(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALRUN_HOST_SECRET", "hunter2")
    script = textwrap.dedent(
        """\
        fail() { echo "FAIL: $1"; echo 0 > "$VERIFIER_DIR/reward.txt"; exit 0; }
        [ -z "${EVALRUN_HOST_SECRET:-}" ] || fail "host variable leaked"
        [ "$TASK_FLAVOUR" = mint ] || fail "[verifier.env] not applied"
        case "$VERIFIER_DIR" in "$PWD"*) fail "VERIFIER_DIR inside the workspace" ;; esac
        [ -z "$(ls -A "$VERIFIER_DIR")" ] || fail "VERIFIER_DIR not fresh"
        [ -f tests/test.sh ] || fail "not run from the workspace root"
        echo 1 > "$VERIFIER_DIR/reward.txt"
        """
    )
    toml = '[verifier]\ntimeout_sec = 30\n[verifier.env]\nTASK_FLAVOUR = "mint"\n'
    task = load_task(harbor_task(tmp_path, files={"tests/test.sh": script, "task.toml": toml}))
    rec = run(task, NoopAgent())
    assert rec.outcome is Outcome.passed, rec.reason


def test_the_task_toml_verifier_timeout_wins(tmp_path):
    toml = "[verifier]\ntimeout_sec = 0.5\n"
    task = load_task(
        harbor_task(tmp_path, files={"task.toml": toml, "tests/test.sh": "sleep 20\n"})
    )
    rec = run(task, OracleAgent())
    assert rec.outcome is Outcome.failed
    assert rec.timed_out_phase == "verify"
    assert rec.reason == "tests/test.sh timed out after 0.5s"


def test_a_failing_solve_script_is_recorded_on_the_agent(tmp_path):
    task = load_task(
        harbor_task(tmp_path, files={"solution/solve.sh": "echo broken >&2; exit 4\n"})
    )
    rec = run(task, OracleAgent())
    assert rec.outcome is Outcome.failed
    assert "solve.sh failed (exit 4): broken" in rec.reason


@pytest.mark.bwrap
def test_harbor_fixtures_run_on_bwrap():
    require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
    from evalrun.sandbox.bwrap.backend import BwrapBackend

    backend = BwrapBackend(max_processes=128, memory_mb=2048)
    for name in ("word-count", "stats-partial"):
        task = load_task(FIXTURES / name)
        assert run(task, OracleAgent(), backend).outcome is Outcome.passed
        assert run(task, NoopAgent(), backend).outcome is Outcome.failed


# --- planning: tasks a backend cannot host -----------------------------------------------------


def plan_for(suite: Path, *overrides: str):
    return build(compose_config([f"tasks_dir={suite}", "run_dir=/tmp/evalrun-plan", *overrides]))


def test_an_image_task_is_skipped_with_its_reason_on_a_broad_slice(mixed_suite, capsys):
    plan = plan_for(mixed_suite)
    assert "tool-version" not in [t.id for t in plan.tasks]
    assert len(plan.tasks) == 4
    err = capsys.readouterr().err
    assert "skipped tool-version (cannot run): needs its own image" in err
    assert "sandbox=local cannot run task images (use sandbox=docker)" in err


def test_an_image_task_named_explicitly_is_refused(mixed_suite):
    with pytest.raises(
        UsageError, match="cannot run on sandbox=local:\n  tool-version: needs its own image"
    ):
        plan_for(mixed_suite, "ids=[tool-version,word-count]")


def test_limit_counts_only_tasks_that_can_run(mixed_suite):
    plan = plan_for(mixed_suite, "tags=[shell,demo]", "limit=3")
    assert [t.id for t in plan.tasks] == ["001-answer", "002-second", "word-count"]


def test_features_evalrun_cannot_provide_skip_the_task(tmp_path):
    harbor_task(tmp_path, "gpu-task", files={"task.toml": "[environment]\ngpus = 1\n"})
    mcp = (
        "[[environment.mcp_servers]]\nname = 'search'\n"
        "url = 'http://search:8000/mcp'\nheaders = {Authorization = 'Bearer ${TOKEN}'}\n"
    )
    harbor_task(tmp_path, "mcp-task", files={"task.toml": mcp})
    harbor_task(tmp_path, "plain")
    with pytest.raises(UsageError) as err:
        plan_for(tmp_path, "ids=[gpu-task,mcp-task]")
    assert "gpu-task: needs 1 GPU(s); sandbox=local has none (sandbox=docker gives" in str(
        err.value
    )
    assert "HTTP headers for MCP server 'search'" in str(err.value)
    assert [t.id for t in plan_for(tmp_path).tasks] == ["plain"]


def test_host_variable_templates_are_filled_or_the_task_cannot_load(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALRUN_TEST_TOKEN", "from-the-host")
    monkeypatch.delenv("EVALRUN_TEST_UNSET", raising=False)
    toml = (
        '[verifier.env]\nTOKEN = "${EVALRUN_TEST_TOKEN}"\nMODE = "${EVALRUN_TEST_UNSET:-fast}"\n'
        '[solution.env]\nURL = "http://${EVALRUN_TEST_UNSET:-localhost}:8000/"\n'
    )
    task = load_task(harbor_task(tmp_path, "templated", files={"task.toml": toml}))
    assert task.format.verifier_env == {"TOKEN": "from-the-host", "MODE": "fast"}
    assert task.format.solution_env == {"URL": "http://localhost:8000/"}
    harbor_task(
        tmp_path, "unset", files={"task.toml": '[environment.env]\nK = "${EVALRUN_TEST_UNSET}"\n'}
    )
    with pytest.raises(UsageError) as err:
        plan_for(tmp_path, "ids=[unset]")
    assert "field 'environment.env.K': ${EVALRUN_TEST_UNSET} is not set on the host" in str(
        err.value
    )


def test_reward_threshold_is_a_config_knob(tmp_path):
    shutil.copytree(FIXTURES / "stats-partial", tmp_path / "stats-partial")
    plan = plan_for(tmp_path, "reward_threshold=0.5")
    assert plan.tasks[0].format.reward_threshold == 0.5
    assert plan.config["reward_threshold"] == 0.5
    with pytest.raises(UsageError, match="reward_threshold: expected a positive number"):
        plan_for(tmp_path, "reward_threshold=0")


# --- the CLI, end to end -----------------------------------------------------------------------


def evalrun(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        timeout=300,
    )


def test_cli_runs_and_checks_a_mixed_tasks_dir(mixed_suite, tmp_path):
    run_dir = tmp_path / "run"
    proc = evalrun(f"tasks_dir={mixed_suite}", f"run_dir={run_dir}", "agent=noop")
    assert proc.returncode == 0, proc.stderr
    assert "skipped tool-version" in proc.stderr
    lines = [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]
    by_task = {line["task_id"]: line for line in lines}
    assert sorted(by_task) == ["001-answer", "002-second", "stats-partial", "word-count"]
    assert by_task["stats-partial"]["outcome"] == "fail"
    assert by_task["stats-partial"]["scores"]["reward"] == 0.5
    summary = json.loads((run_dir / "summary.json").read_text())
    [skipped] = summary["skipped"]  # what the terminal said, for scripts reading summary.json
    assert (skipped["id"], skipped["kind"]) == ("tool-version", "cannot run")
    assert skipped["reason"].startswith("needs its own image")

    check = evalrun("check", f"tasks_dir={mixed_suite}")
    assert check.returncode == 0, check.stdout + check.stderr
    assert "all 4 verifiers honest" in check.stdout
    row = next(line for line in check.stdout.splitlines() if "stats-partial" in line)
    assert "ok (reward 1)" in row and "ok (reward 0.5)" in row


def test_check_catches_a_harbor_oracle_that_rewards_the_untouched_workspace(tmp_path):
    harbor_task(tmp_path, "too-kind", files={"tests/test.sh": REWARD_ONE})
    proc = evalrun("check", f"tasks_dir={tmp_path}")
    assert proc.returncode == 1
    assert "too-kind untouched: expected fail, got pass" in proc.stdout


# --- environment/: the workspace, its setup.sh, the healthcheck, the network policy -------------


def test_environment_setup_sh_runs_in_the_workspace_first_and_is_removed(tmp_path):
    files = {
        "environment/setup.sh": "printf 42 > seeded.txt\n",
        "tests/test.sh": (
            '[ -f seeded.txt ] && [ ! -e setup.sh ] && r=1 || { r=0; echo "FAIL: $(ls)"; }\n'
            'echo $r > "$VERIFIER_DIR/reward.txt"\n'
        ),
    }
    rec = run(load_task(harbor_task(tmp_path, files=files)), NoopAgent())
    assert rec.outcome is Outcome.passed, rec.reason


def test_a_failing_environment_setup_sh_is_a_harness_error(tmp_path):
    files = {"environment/setup.sh": "echo 'no seed' >&2; exit 3\n"}
    rec = run(load_task(harbor_task(tmp_path, files=files)), OracleAgent())
    assert rec.outcome is Outcome.error
    assert rec.reason == "environment/setup.sh failed (exit 3): no seed"


def test_a_healthcheck_that_never_passes_stops_the_sample_before_the_agent(tmp_path):
    toml = (
        "[environment.healthcheck]\ncommand = 'test -f ready || { echo not ready; false; }'\n"
        "interval_sec = 0\nretries = 2\n"
    )
    rec = run(load_task(harbor_task(tmp_path, files={"task.toml": toml})), OracleAgent())
    assert rec.outcome is Outcome.error
    assert rec.reason.startswith("healthcheck failed 2 times (exit 1): test -f ready")
    assert rec.reason.endswith(": not ready")
    assert rec.phases.agent is None


U, NONE, PUBLIC, ALLOW = Network.unspecified, Network.none, Network.public, Network.allowlist


@pytest.mark.parametrize(
    ("toml", "networks"),
    [
        ("", (U, U)),
        ("[environment]\nallow_internet = false\n", (NONE, NONE)),
        ("[environment]\nnetwork_mode = 'public'\nallow_internet = false\n", (PUBLIC, PUBLIC)),
        ("[environment]\nnetwork_mode = 'allowlist'\n", (NONE, NONE)),  # empty: deny all
        ("[environment]\nallowed_hosts = ['pypi.org']\n", (ALLOW, ALLOW)),
        ("[agent]\nnetwork_mode = 'no-network'\n", (NONE, U)),
        (
            "[environment]\nnetwork_mode = 'no-network'\n[verifier]\nnetwork_mode = 'public'\n",
            (NONE, PUBLIC),
        ),
        (
            "[environment]\nallow_internet = true\n[agent]\nnetwork_mode = 'no-network'\n",
            (NONE, PUBLIC),
        ),
    ],
)
def test_the_network_policy_follows_harbors_baseline_and_phase_overrides(tmp_path, toml, networks):
    """Each phase its own network (the agent's phase with the setup): a task that wants the
    network only for its verifier runs, where Harbor's refused such a split before."""
    task = load_task(harbor_task(tmp_path, files={"task.toml": toml}))
    assert task.format.sandbox_spec.networks == networks
    assert task.format.unsupported == ()


@pytest.mark.parametrize(
    ("toml", "hosts"),
    [
        (
            "[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['PyPI.org.', '*.pythonhosted.org']\n",
            (("pypi.org", "*.pythonhosted.org"), ("pypi.org", "*.pythonhosted.org")),
        ),
        (  # the verifier's phase its own list; the agent's the baseline's
            "[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['10.0.0.0/8']\n"
            "[verifier]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['deb.example']\n",
            (("10.0.0.0/8",), ("deb.example",)),
        ),
        (
            "[agent]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['git.example']\n",
            (("git.example",), ()),
        ),
    ],
)
def test_each_phase_may_reach_only_the_hosts_its_allow_list_names(tmp_path, toml, hosts):
    task = load_task(harbor_task(tmp_path, files={"task.toml": toml}))
    assert task.format.sandbox_spec.hosts == hosts


@pytest.mark.parametrize("entry", ["https://pypi.org", "pypi.org:443", "pypi.org/simple", "*.", ""])
def test_an_allowed_host_that_is_not_a_host_is_refused_naming_the_field(tmp_path, entry):
    toml = f"[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['{entry}']\n"
    with pytest.raises(TaskFormatError, match=r"environment\.allowed_hosts.*expected a hostname"):
        load_task(harbor_task(tmp_path, files={"task.toml": toml}))


def test_the_instruction_loses_its_canary_lines_as_in_harbor(tmp_path):
    text = "# BENCHMARK DATA SHOULD NEVER APPEAR. canary GUID 1234\n\nWrite 42 into answer.txt.\n"
    task = load_task(harbor_task(tmp_path, files={"instruction.md": text}))
    assert task.spec.prompt == "Write 42 into answer.txt.\n"


def test_task_limits_become_the_spec_and_unenforced_ones_are_warned_once(
    tmp_path, capsys, monkeypatch
):
    toml = '[environment]\ncpus = 2\nmemory = "1G"\nstorage = "512M"\n'
    harbor_task(tmp_path, "limited", files={"task.toml": toml})
    harbor_task(tmp_path, "plain")
    spec = load_task(tmp_path / "limited").format.sandbox_spec
    assert (spec.cpus, spec.memory_mb, spec.storage_mb) == (2, 1024, 512)
    monkeypatch.setattr("evalrun.run.plan._warned_unenforced", set())
    plan_for(tmp_path)
    plan_for(tmp_path)  # a second plan in the same process (a multirun job) says nothing again
    err = capsys.readouterr().err
    assert err.count("sandbox=local does not enforce these task limits") == 1
    for name in ("cpus", "memory_mb", "storage_mb"):
        assert f"{name} of 1 task(s) (limited)" in err
    plan_for(tmp_path, "sandbox=bwrap")  # bwrap enforces a task's memory_mb and storage_mb
    err = capsys.readouterr().err
    assert "sandbox=bwrap does not enforce these task limits" in err
    assert "cpus of 1 task(s) (limited)" in err and "memory_mb" not in err and "storage" not in err


def test_an_allow_list_that_a_sandbox_cannot_enforce_is_said_once_and_runs_with_its_network(
    tmp_path, capsys, monkeypatch
):
    """bwrap and local cannot filter by host: the task runs with the sandbox's network (as
    `public`), and the run says so before it starts; docker enforces it (its own tests)."""
    toml = "[environment]\nnetwork_mode = 'allowlist'\nallowed_hosts = ['pypi.org']\n"
    harbor_task(tmp_path, "allow-listed", files={"task.toml": toml})
    monkeypatch.setattr("evalrun.run.plan._warned_unenforced", set())
    plan = plan_for(tmp_path)
    assert [t.id for t in plan.tasks] == ["allow-listed"]
    err = capsys.readouterr().err
    assert "sandbox=local does not enforce these task limits" in err
    assert "allowed_hosts: the sandbox's whole network" in err
    assert "allowed_hosts of 1 task(s) (allow-listed)" in err
