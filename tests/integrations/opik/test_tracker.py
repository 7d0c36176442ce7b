"""`tracker=opik`, `evalrun push` and `evalrun sync` through the real opik SDK.

No Opik server is reachable here: the SDK talks to `tests/opik_standin.py`, a local HTTP stand-in
for the part of Opik's REST API it uses, which records every request it receives.
"""

from __future__ import annotations

import io
import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from rich.console import Console

from evalrun.analysis.metrics import summarize
from evalrun.cli.hydra import compose_config
from evalrun.cli.main import main
from evalrun.models.records import Outcome, SampleRecord
from evalrun.run.plan import build
from evalrun.run.runner import run
from evalrun.rundir.store import RunStore
from tests.conftest import REPO
from tests.opik_standin import OpikStandIn

ENV_SECRET = "sk-env-secret-0123456789"
CONFIG_SECRET = "tok-config-secret-9876543210"


@pytest.fixture
def suite(make_task):
    make_task("001-answer", spec={"tags": ["demo", "math"]})
    return make_task(
        "002-wrong-gold", spec={"difficulty": "hard"}, files={"solution/answer.txt": "41"}
    ).parent


@pytest.fixture
def opik_env(monkeypatch, tmp_path):
    """No Opik settings from this machine: a fresh HOME, no key, no URL, no project override."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("OPIK_API_KEY", "OPIK_URL_OVERRIDE", "OPIK_WORKSPACE", "EVAL_PROJECT_NAME"):
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture
def standin(opik_env):
    with OpikStandIn() as server:
        opik_env.setenv("OPIK_URL_OVERRIDE", server.url)
        yield server


def dead_url() -> str:
    with socket.socket() as sock:  # a port nothing listens on once this is closed
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/api/"


def evaluate(suite: Path, run_dir: Path, *overrides: str) -> int:
    cfg = compose_config(
        [f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=2", "tracker=opik", *overrides]
    )
    return run(cfg, Console(file=io.StringIO(), width=200))


def samples(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / "samples.jsonl").read_text().splitlines()]


def cli(*args: str) -> int:
    with pytest.raises(SystemExit) as exit_info:
        main(list(args))
    return exit_info.value.code


def test_a_run_is_one_experiment_with_its_config_traces_and_scores(
    suite, tmp_path, standin, monkeypatch
):
    monkeypatch.setenv("OPENAI_API_KEY", ENV_SECRET)
    run_dir = tmp_path / "run"
    code = evaluate(suite, run_dir, f"+provider.headers_env.Authorization={CONFIG_SECRET}")
    assert code == 0
    assert standin.unhandled == []

    [experiment] = standin.experiments.values()
    assert experiment["name"] == "run" and experiment["project_name"] == "evalrun"
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    meta = dict(experiment["metadata"])
    reproduction = meta.pop("reproduction")
    assert meta.pop("run_state")["label"] == "complete" and experiment["status"] == "completed"
    assert meta == config  # the full resolved config, as redacted in the run directory
    assert meta["provider"]["headers_env"]["Authorization"] == "***"
    plan = json.loads((run_dir / "plan.json").read_text())
    assert reproduction["task_fingerprints"] == {t["id"]: t["fingerprint"] for t in plan["tasks"]}
    assert reproduction["cells"] == 4 and reproduction["recorded_at"] == "run"
    head = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True)
    assert reproduction["git"]["evalrun"]["sha"] == head.stdout.decode().strip()
    assert reproduction["packages"]["opik"] and reproduction["packages"]["evalrun"]

    for request in standin.requests:  # no secret anywhere on the wire
        wire = request.raw + json.dumps(request.headers)
        assert ENV_SECRET not in wire and CONFIG_SECRET not in wire, request.path

    records = samples(run_dir)
    assert len(standin.traces) == len(records) == 4 == len(standin.trace_writes)
    for record in records:
        [trace] = [
            t
            for t in standin.traces.values()
            if t["input"]["task_id"] == record["task_id"] and t["input"]["trial"] == record["trial"]
        ]
        assert trace["input"]["prompt"] == "Write the number 42 into answer.txt."
        assert trace["output"]["outcome"] == record["outcome"]
        scores = standin.scores_of(trace["id"])
        assert scores["pass"]["value"] == (1.0 if record["outcome"] == "pass" else 0.0)
        assert scores["latency_s"]["value"] > 0
        span_names = {s["name"] for s in standin.spans.values() if s["trace_id"] == trace["id"]}
        assert {"setup", "agent", "verify"} <= span_names

    assert {r["task_id"]: r["outcome"] for r in records} == {
        "001-answer": "pass",
        "002-wrong-gold": "fail",
    }
    items = standin.items_of("evalrun-suite-v1")
    assert sorted((i["data"]["task_id"], i["data"]["difficulty"]) for i in items) == [
        ("001-answer", "easy"),
        ("002-wrong-gold", "hard"),
    ]
    linked = standin.experiment_items
    assert sorted(i["trace_id"] for i in linked) == sorted(standin.traces)
    assert {i["dataset_item_id"] for i in linked} == {i["id"] for i in items}

    summary = json.loads((run_dir / "summary.json").read_text())
    scores = {s["name"]: s["value"] for s in experiment["experiment_scores"]}
    assert scores["pass@1"] == summary["overall"]["pass_at"]["1"] == 0.5
    assert scores["pass^2"] == 0.5 and scores["error_rate"] == 0.0


def test_dataset_items_are_not_duplicated_across_runs(suite, tmp_path, standin):
    assert evaluate(suite, tmp_path / "run-a") == 0
    assert evaluate(suite, tmp_path / "run-b") == 0
    assert len(standin.items_of("evalrun-suite-v1")) == 2
    assert len(standin.calls("PUT", "v1/private/datasets/items")) == 1  # the second sent nothing
    assert len(standin.experiments) == 2 and len(standin.experiment_items) == 8


def test_opik_down_then_push_sends_everything_once(suite, tmp_path, opik_env, capsys):
    opik_env.setenv("OPIK_URL_OVERRIDE", dead_url())
    run_dir = tmp_path / "run"
    assert evaluate(suite, run_dir) == 0
    err = capsys.readouterr().err
    assert err.count("opik:") == 1, err
    assert "unreachable" in err and f"evalrun push {run_dir}" in err
    assert "Traceback" not in err
    assert len(samples(run_dir)) == 4 and (run_dir / "summary.json").is_file()

    with OpikStandIn() as server:
        opik_env.setenv("OPIK_URL_OVERRIDE", server.url)
        assert cli("push", str(run_dir)) == 0
        assert "4 samples sent" in capsys.readouterr().out
        assert len(server.trace_writes) == len(server.experiment_items) == 4
        [experiment] = server.experiments.values()
        assert experiment["metadata"]["reproduction"]["recorded_at"] == "run"
        writes = len(server.requests)

        assert cli("push", str(run_dir)) == 0
        assert "0 samples sent, 4 already there" in capsys.readouterr().out
        assert len(server.trace_writes) == len(server.experiment_items) == 4
        assert len(server.experiments) == 1
        sent_again = [r.path for r in server.requests[writes:] if r.method in ("PUT", "POST")]
        assert "v1/private/traces/batch" not in sent_again
        assert "v1/private/experiments/items" not in sent_again


def test_opik_dying_mid_run_is_reported_once_and_push_catches_up(
    suite, tmp_path, standin, opik_env, capsys
):
    """The tracker's own life-cycle, with the server dying between start and the samples."""
    run_dir = tmp_path / "run"
    cfg = compose_config(
        [f"tasks_dir={suite}", f"run_dir={run_dir}", "tracker=opik", "tracker.flush_timeout_s=2"]
    )
    plan = build(cfg)
    store = RunStore(run_dir)
    store.create()
    store.write_config(plan.config)
    store.write_plan(plan.to_plan_file())
    plan.tracker.start(plan)
    assert len(standin.experiments) == 1
    standin.go_down()
    records = []
    for task in plan.tasks:
        now = time.time()
        record = SampleRecord(
            run_id=plan.run_id,
            task_id=task.id,
            fingerprint=task.fingerprint,
            trial=0,
            outcome=Outcome.passed,
            started_at=now,
            finished_at=now + 1,
        )
        store.append(record)
        plan.tracker.record(record)
        records.append(record)
    store.close()
    plan.tracker.finish(
        summarize(records, plan.to_plan_file().task_meta(), run_id=plan.run_id, trials=1)
    )
    err = capsys.readouterr().err
    # Which failure is seen first depends on timing: a request the tracker makes while recording
    # (the server disconnects), or the flush at the end. Either way it is said once.
    assert err.count("opik:") == 1, err
    assert "not everything reached Opik" in err or "an Opik request failed" in err, err
    assert f"evalrun push {run_dir}" in err and "Traceback" not in err

    with OpikStandIn() as revived:  # the old one stays down: nothing late can land twice
        opik_env.setenv("OPIK_URL_OVERRIDE", revived.url)
        assert cli("push", str(run_dir)) == 0
        assert len(revived.trace_writes) == len(revived.experiment_items) == 2
        [experiment] = revived.experiments.values()
        assert experiment["id"] == next(iter(standin.experiments))  # the same experiment id


def test_push_of_a_run_made_without_opik(suite, tmp_path, standin, capsys):
    run_dir = tmp_path / "run"
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}"])
    assert run(cfg, Console(file=io.StringIO())) == 0
    assert cli("push", str(run_dir), "tracker.project=later") == 0
    [experiment] = standin.experiments.values()
    assert experiment["project_name"] == "later"
    assert experiment["metadata"]["reproduction"]["recorded_at"] == "push"
    assert {t["input"]["prompt"] for t in standin.traces.values()} == {
        "Write the number 42 into answer.txt."
    }
    assert json.loads((run_dir / "opik.json").read_text())["project"] == "later"


def test_push_waits_for_the_writer_and_marks_a_partial_run_in_the_experiment(
    suite, tmp_path, standin, capsys
):
    from tests.rundir.test_store import _holder

    run_dir = tmp_path / "run"
    cfg = compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}", "trials=2"])
    assert run(cfg, Console(file=io.StringIO())) == 0
    lines = (run_dir / "samples.jsonl").read_text().splitlines(keepends=True)
    (run_dir / "samples.jsonl").write_text("".join(lines[:3]))  # as if killed after 3 of 4

    holder = _holder(run_dir)
    try:
        assert cli("push", str(run_dir)) == 2  # another process is writing the run
        assert f"being written by pid {holder.pid}" in " ".join(capsys.readouterr().err.split())
        assert standin.requests == [] and not (run_dir / "opik.json").exists()
    finally:
        holder.kill()
        holder.wait()
    assert cli("push", str(run_dir)) == 0
    [experiment] = standin.experiments.values()
    state = experiment["metadata"]["run_state"]
    assert (state["complete"], state["recorded"], state["cells"]) == (False, 3, 4)
    assert state["label"] == f"partial 3/4 (missing cells: {state['missing'][0]})"
    assert experiment["status"] == "cancelled"


def test_sync_upserts_the_suite_dataset_once(suite, standin, capsys):
    assert cli("sync", f"tasks_dir={suite}", "tracker.dataset=my-suite") == 0
    assert cli("sync", f"tasks_dir={suite}", "tracker.dataset=my-suite") == 0
    assert "synced 2 tasks from" in capsys.readouterr().out
    assert len(standin.items_of("my-suite")) == 2
    assert len(standin.calls("PUT", "v1/private/datasets/items")) == 1
    assert standin.traces == {} and standin.experiments == {}


def test_sync_without_a_suite_upserts_the_bundled_tasks_and_probes(standin, capsys):
    from evalrun.bundled import PROBES_DIR as BUNDLED_PROBES
    from evalrun.bundled import TASKS_DIR as BUNDLED_TASKS

    assert cli("sync") == 0
    out = capsys.readouterr().out
    assert "Opik dataset evalrun-tasks-v1" in out and "Opik dataset evalrun-probes-v1" in out
    tasks = [p for p in BUNDLED_TASKS.iterdir() if (p / "task.yaml").is_file()]
    probes = [p for p in BUNDLED_PROBES.iterdir() if (p / "probe.yaml").is_file()]
    assert len(standin.items_of("evalrun-tasks-v1")) == len(tasks)
    assert len(standin.items_of("evalrun-probes-v1")) == len(probes) >= 12


def test_unconfigured_opik_is_reported_once_and_the_run_completes(
    suite, tmp_path, opik_env, capsys
):
    assert evaluate(suite, tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert err.count("opik:") == 1 and "not configured" in err and "OPIK_URL_OVERRIDE" in err


def test_push_refuses_what_is_not_a_run_directory(tmp_path, standin, capsys):
    assert cli("push", str(tmp_path)) == 2
    assert "is not a run directory: config.yaml and plan.json not found" in capsys.readouterr().err
    assert standin.requests == []


def test_push_to_an_unreachable_opik_says_so(suite, tmp_path, opik_env, capsys):
    run_dir = tmp_path / "run"
    assert (
        run(
            compose_config([f"tasks_dir={suite}", f"run_dir={run_dir}"]),
            Console(file=io.StringIO()),
        )
        == 0
    )
    opik_env.setenv("OPIK_URL_OVERRIDE", dead_url())
    assert cli("push", str(run_dir)) == 2
    assert "unreachable" in capsys.readouterr().err


def test_each_multirun_job_is_its_own_experiment(suite, tmp_path, standin):
    sweep = tmp_path / "sweep"
    args = ["-m", f"tasks_dir={suite}", "tracker=opik", "trials=1,2", f"hydra.sweep.dir={sweep}"]
    proc = subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    by_name = {e["name"]: e for e in standin.experiments.values()}
    assert sorted(by_name) == ["sweep/0", "sweep/1"]
    assert [by_name[f"sweep/{n}"]["metadata"]["trials"] for n in (0, 1)] == [1, 2]
    traces_per_experiment = sorted(
        sum(i["experiment_id"] == e["id"] for i in standin.experiment_items)
        for e in by_name.values()
    )
    assert traces_per_experiment == [2, 4]
    assert len(standin.items_of("evalrun-suite-v1")) == 2


def test_cli_start_up_imports_neither_opik_nor_litellm():
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "import evalrun.cli.main"],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    heavy = [line for line in proc.stderr.splitlines() if "opik" in line or "litellm" in line]
    assert heavy == []


def test_a_suite_given_by_reference_names_its_commit_in_the_experiment_config(
    suite_repo, tmp_path, standin, monkeypatch
):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    reference = f"git+file://{suite_repo['path']}@v1#tasks"
    assert evaluate(Path(), tmp_path / "run", f"tasks_dir={reference}", "trials=1") == 0
    [experiment] = standin.experiments.values()
    source = experiment["metadata"]["reproduction"]["tasks_source"]
    assert source["reference"] == reference
    assert source["checkouts"] == [
        {"url": f"file://{suite_repo['path']}", "commit": suite_repo["v1"], "ref": "v1",
         "subdir": "tasks"}
    ]  # fmt: skip
    plan = json.loads((tmp_path / "run" / "plan.json").read_text())
    assert plan["provenance"]["tasks_source"] == source
