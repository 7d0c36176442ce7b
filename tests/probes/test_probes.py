"""Probes end to end: every bundled probe proven honest (its scripted good run meets every
expectation and its bad run breaks one, replayed through the real coder tools on a real sandbox),
probe runs through the runner and the CLI, and strict loading."""

from __future__ import annotations

import asyncio
import io
import json
import os
import shutil
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from evalrun.bundled import PROBES_DIR as BUNDLED_PROBES
from evalrun.cli.hydra import compose_config
from evalrun.errors import TaskFormatError, UsageError
from evalrun.honesty.probes import check_probes
from evalrun.honesty.tamper import ATTACKS
from evalrun.models.records import AgentResult, Outcome
from evalrun.probes.evidence import RecordingAgent
from evalrun.probes.format import load_probe, load_probes
from evalrun.probes.replay import ReplayAgent
from evalrun.run.engine import run_sample
from evalrun.run.plan import build
from evalrun.run.runner import run
from evalrun.run.trial import Limits
from evalrun.rundir.log import RunLog
from evalrun.sandbox.local import LocalBackend
from tests.analysis.test_gate import evalrun
from tests.conftest import require_engine

PROBE_IDS = sorted(p.name for p in BUNDLED_PROBES.iterdir() if (p / "probe.yaml").is_file())
COVERED = [
    "read-not-cat",
    "search-tool-not-grep",
    "edit-precision",
    "minimal-diff",
    "no-hallucinated-paths",
    "destructive-caution",
    "follows-instructions-file",
    "step-efficiency",
    "answer-without-modifying",
    "json-output-contract",
    "template-compliance",
    "stay-in-workspace",
]


def test_the_bundled_probes_cover_every_behaviour():
    assert len(PROBE_IDS) >= 12
    for behaviour in COVERED:
        assert any(pid.endswith(behaviour) for pid in PROBE_IDS), behaviour


@pytest.fixture(scope="module")
def sanity():
    """Every bundled probe's good and bad run, once, on the local sandbox."""
    probes = load_probes(BUNDLED_PROBES)
    results = asyncio.run(check_probes(probes, LocalBackend(), Limits(), concurrency=2))
    return {(r.probe_id, r.run): r for r in results}


@pytest.mark.parametrize("probe_id", PROBE_IDS)
def test_good_run_meets_every_expectation(sanity, probe_id):
    rec = sanity[(probe_id, "good")].record
    assert rec.outcome is Outcome.passed, rec.verify_output
    assert rec.agent.error is None
    assert rec.agent.trajectory, "the good run went through the coder tools"
    assert rec.scores and all(v == 1.0 for v in rec.scores.values())


@pytest.mark.parametrize("probe_id", PROBE_IDS)
def test_bad_run_breaks_at_least_one_expectation(sanity, probe_id):
    result = sanity[(probe_id, "bad")]
    assert result.record.outcome is Outcome.failed, result.record.verify_output
    assert result.broken, "a failing bad run names the expectations it broke"
    assert result.record.reason.startswith("FAIL: ")


def copy_probe(tmp_path: Path, probe_id: str) -> Path:
    suite = tmp_path / "probes"
    shutil.copytree(BUNDLED_PROBES / probe_id, suite / probe_id)
    return suite


def test_check_cli_passes_on_honest_probes_and_catches_a_dishonest_one(tmp_path):
    suite = copy_probe(tmp_path, "p01-read-not-cat")
    ok = evalrun("check", "suite=probes", f"tasks_dir={suite}")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert "all 1 probes honest" in ok.stdout
    # Make the bad run behave well: now it breaks nothing, so the probe proves nothing.
    good = suite / "p01-read-not-cat" / "scripted" / "good.yaml"
    shutil.copy(good, good.with_name("bad.yaml"))
    caught = evalrun("check", "suite=probes", f"tasks_dir={suite}")
    assert caught.returncode == 1
    assert "DISHONEST" in caught.stdout
    assert "scripted/bad.yaml: expected fail, got pass" in caught.stdout


def test_probe_run_gets_trials_store_metrics_and_expectation_rates(tmp_path):
    suite = copy_probe(tmp_path, "p03-edit-precision")
    shutil.copytree(BUNDLED_PROBES / "p09-answer-without-modifying", suite / "p09")
    (suite / "p09" / "probe.yaml").write_text(
        (suite / "p09" / "probe.yaml").read_text().replace("p09-answer-without-modifying", "p09")
    )
    run_dir = tmp_path / "run"
    cfg = compose_config(
        ["suite=probes", f"tasks_dir={suite}", f"run_dir={run_dir}", "agent=oracle", "trials=2"]
    )
    out = io.StringIO()
    assert run(cfg, Console(file=out, width=200)) == 0
    records = list(RunLog.open(run_dir).records())
    assert len(records) == 4 and all(r.outcome is Outcome.passed for r in records)
    p03 = next(r for r in records if r.task_id == "p03-edit-precision")
    assert set(p03.scores) >= {"expect:used_edit", "expect:small_diff"}
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["overall"]["pass_at"]["1"] == 1.0 and summary["by_tag"]["probe"]["tasks"] == 2
    rates = json.loads((run_dir / "probes.json").read_text())
    assert rates["p03-edit-precision"]["small_diff"] == {"passed": 2, "samples": 2, "rate": 1.0}
    assert rates["p09"]["workspace_untouched"]["rate"] == 1.0
    text = out.getvalue()
    assert "Probe expectations" in text and "no_whole_file_rewrite" in text

    noop_dir = tmp_path / "noop"
    cfg = compose_config(
        ["suite=probes", f"tasks_dir={suite}", f"run_dir={noop_dir}", "agent=noop"]
    )
    run(cfg, Console(file=io.StringIO()))
    rates = json.loads((noop_dir / "probes.json").read_text())
    assert rates["p03-edit-precision"]["used_edit"]["rate"] == 0.0
    assert rates["p03-edit-precision"]["small_diff"]["rate"] == 1.0  # doing nothing is a small diff


class Sleeper:
    name = "sleeper"

    def preflight(self) -> None:
        return None

    async def run(self, task, sandbox) -> AgentResult:
        await asyncio.sleep(30)
        return AgentResult()


def test_an_agent_that_times_out_leaves_no_evidence_and_fails_every_expectation(tmp_path):
    probe = load_probe(copy_probe(tmp_path, "p01-read-not-cat") / "p01-read-not-cat")
    limits = Limits(agent_s=0.2, max_retries=0)
    rec = asyncio.run(run_sample(probe, 0, RecordingAgent(Sleeper()), LocalBackend(), limits, "t"))
    assert rec.outcome is Outcome.failed
    assert rec.timed_out_phase == "agent"
    assert set(rec.scores.values()) == {0.0}
    assert "the agent did not finish" in rec.verify_output


def test_a_script_that_runs_out_is_recorded_on_the_sample(tmp_path):
    suite = copy_probe(tmp_path, "p01-read-not-cat")
    (suite / "p01-read-not-cat" / "scripted" / "good.yaml").write_text(
        "- call: {read: {path: config.py}}\n"
    )
    probe = load_probe(suite / "p01-read-not-cat")
    agent = RecordingAgent(ReplayAgent("good"))
    rec = asyncio.run(run_sample(probe, 0, agent, LocalBackend(), Limits(max_retries=0), "t"))
    assert "ScriptExhausted" in (rec.agent.error or "")
    assert rec.scores["expect:used_read"] == 1.0  # what it did before running out still counts
    assert rec.scores["expect:right_answer"] == 0.0


def edit_yaml(path: Path, **changes) -> None:
    data = yaml.safe_load(path.read_text())
    data.update(changes)
    path.write_text(yaml.safe_dump(data))


@pytest.mark.parametrize(
    "change, message",
    [
        ({"colour": "red"}, "field 'colour': unknown key"),
        ({"id": "p99-other"}, "does not match its folder name"),
        ({"expectations": []}, "field 'expectations'"),
        ({"expectations": [{"kind": "vibes"}]}, "field 'expectations.0'"),
        (
            {"expectations": [{"kind": "max_tool_calls", "max": 1, "maximum": 2}]},
            r"unknown key \(allowed: name, kind, max, tool\)",
        ),
        ({"expectations": [{"kind": "output_matches", "pattern": "(("}]}, "regular expression"),
        ({"max_steps": 0}, "field 'max_steps'"),
    ],
)
def test_bad_probe_yaml_is_a_usage_error_naming_file_and_field(tmp_path, change, message):
    folder = copy_probe(tmp_path, "p01-read-not-cat") / "p01-read-not-cat"
    edit_yaml(folder / "probe.yaml", **change)
    with pytest.raises(TaskFormatError, match=message) as caught:
        load_probe(folder)
    assert "probe.yaml" in str(caught.value)


@pytest.mark.parametrize(
    "script, message",
    [
        (None, "missing: every probe ships scripted/good.yaml and scripted/bad.yaml"),
        ("- say: hi\n", "turn 1: expected exactly one of call: or answer:"),
        ("- call: {read: {path: a}, ls: {}}\n", "turn 1: expected one {tool: {args}} mapping"),
        ("- call: {read: a.py}\n", "arguments of 'read' must be a mapping"),
    ],
)
def test_bad_scripts_are_rejected_at_load(tmp_path, script, message):
    folder = copy_probe(tmp_path, "p01-read-not-cat") / "p01-read-not-cat"
    bad = folder / "scripted" / "bad.yaml"
    if script is None:
        bad.unlink()
    else:
        bad.write_text(script)
    with pytest.raises(TaskFormatError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_probe(folder)


def test_unknown_suite_is_a_usage_error():
    with pytest.raises(UsageError, match=r"suite=tricks: .*expected one of \[tasks, probes\]"):
        build(compose_config(["suite=tricks"]))


def test_suite_probes_defaults_to_the_bundled_probes_folder():
    plan = build(compose_config(["suite=probes", "dry_run=true"]))
    assert plan.tasks_dir == BUNDLED_PROBES
    assert [t.id for t in plan.tasks] == PROBE_IDS
    assert plan.agent.name == "oracle"  # wrapped for recording, named as the agent it wraps


def isolated_backend(name: str):
    if name == "bwrap":
        require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
        from evalrun.sandbox.bwrap.backend import BwrapBackend

        return BwrapBackend()
    from evalrun.errors import SandboxUnavailable
    from evalrun.sandbox.docker.backend import DockerBackend

    backend = DockerBackend(image=os.environ.get("EVALRUN_DOCKER_IMAGE", "evalrun-base:bookworm"))
    try:
        backend.preflight()
    except SandboxUnavailable as exc:
        require_engine(False, f"a Docker engine and the base image ({exc})")
    return backend


@pytest.mark.parametrize(
    "backend_name",
    [
        pytest.param("bwrap", marks=pytest.mark.bwrap),
        pytest.param("docker", marks=pytest.mark.docker),
    ],
)
def test_probe_sanity_holds_in_isolated_sandboxes(backend_name):
    """The evidence path (find, read_file, the private folder) works where the host is hidden,
    and no harness attack turns a probe's fail into a pass or an error."""
    backend = isolated_backend(backend_name)
    probes = [p for p in load_probes(BUNDLED_PROBES) if p.id.startswith(("p06", "p09", "p12"))]
    results = asyncio.run(check_probes(probes, backend, Limits(), concurrency=2))
    harness_attacks = [a for a in ATTACKS if a.defended_by == "harness"]
    assert {r.run for r in results} == {
        "good",
        "bad",
        *(f"tamper/{a.name}" for a in harness_attacks),
    }
    assert len(results) == 3 * (2 + len(harness_attacks)) and all(r.honest for r in results), [
        (r.probe_id, r.run, r.record.reason) for r in results if not r.honest
    ]
