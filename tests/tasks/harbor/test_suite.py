"""A Harbor suite as published suites write it (tests/fixtures/harbor-suite/, see its README):
every key of Harbor's task.toml models, keys Harbor does not define in every table, a
multi-step task, network policies, a workspace at /app, prebuilt images, and a broken folder
among good ones. Every good task loads and runs, the broken one is reported and skipped, and
the run completes - on local, bwrap and docker. A no-network task cannot reach a loopback server
this test runs, on bwrap and on docker, while a task that needs the network reaches it there.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from evalrun.cli.hydra import compose_config
from evalrun.errors import ExitCode, UsageError
from evalrun.run.plan import build
from evalrun.tasks.harbor.keys import TASK_TOML, ListOf, unknown_keys
from evalrun.tasks.loader import scan_suite
from tests.conftest import REPO, require_engine

SUITE = REPO / "tests" / "fixtures" / "harbor-suite"
BASE_IMAGE = "evalrun-base:bookworm"  # the suite's prebuilt-image task names it
GOOD = ["kitchen-sink", "missing-image", "multi-step", "needs-accelerators", "needs-network"]
GOOD += ["no-network", "prebuilt-image"]


def models(schema: dict, path: str = "task.toml") -> dict[int, tuple[str, dict]]:
    """Every table model reachable in Harbor's catalogue, once each (by identity), with the first
    place it appears: `[verifier.environment]` is the `[environment]` model again."""
    found = {id(schema): (path, schema)}
    for key, inner in schema.items():
        inner = inner.schema if isinstance(inner, ListOf) else inner
        if isinstance(inner, dict) and id(inner) not in found:
            found.update(
                {k: v for k, v in models(inner, f"{path}.{key}").items() if k not in found}
            )
    return found


def keys_used(raw: dict, schema: dict, seen: dict[int, set[str]]) -> None:
    """Record, per model, which of its keys `raw` uses."""
    for key, value in raw.items():
        if key not in schema:
            continue
        seen.setdefault(id(schema), set()).add(key)
        inner = schema[key]
        if isinstance(inner, dict) and isinstance(value, dict):
            keys_used(value, inner, seen)
        elif isinstance(inner, ListOf) and isinstance(value, list):
            for item in value:
                if isinstance(item, dict):
                    keys_used(item, inner.schema, seen)


def corpus_tomls() -> dict[str, dict]:
    return {
        folder.name: tomllib.loads((folder / "task.toml").read_text())
        for folder in sorted(SUITE.iterdir())
        if (folder / "task.toml").is_file()
    }


def test_the_corpus_uses_every_key_of_harbors_models():
    seen: dict[int, set[str]] = {}
    for raw in corpus_tomls().values():
        keys_used(raw, TASK_TOML, seen)
    missing = {
        f"{path}.{key}"
        for model, (path, schema) in models(TASK_TOML).items()
        for key in schema
        if key not in seen.get(model, set())
    }
    assert missing == set()


def test_the_corpus_has_keys_harbor_lacks_in_every_table():
    has_extra = {
        re.sub(r"\[\d+\]", "[]", unknown.table)
        for raw in corpus_tomls().values()
        for unknown in unknown_keys(raw)
    }
    expected = {
        "", "task", "task.authors[]", "artifacts[]", "verifier", "verifier.collect[]", "agent",
        "solution", "environment", "environment.healthcheck", "environment.tpu",
        "environment.mcp_servers[]", "verifier.environment", "steps[]", "steps[].agent",
        "steps[].verifier", "steps[].healthcheck", "steps[].artifacts[]",
    }  # fmt: skip
    assert expected <= has_extra


def test_every_good_folder_loads_and_the_broken_one_is_reported():
    suite = scan_suite(SUITE)
    assert [t.id for t in suite.tasks] == GOOD
    (broken,) = suite.unloadable
    assert broken.task_id == "broken"
    assert (broken.path, broken.field) == (SUITE / "broken" / "task.toml", "agent.timeout_sec")
    assert "valid number" in broken.reason and "'soon'" in broken.reason
    sink = next(t for t in suite.tasks if t.id == "kitchen-sink")
    assert "canary" not in sink.spec.prompt  # Harbor strips canary lines from instructions
    assert sink.spec.prompt.startswith("Add up the numbers")
    kept = sink.format.kept_fields
    assert kept["metadata.reward_type"] == "binary"
    assert kept["verifier.tests.runner"] == "bash"
    assert kept["agent.max_steps"] == 30
    assert kept["environment.skills_dir"] == "/app/skills"
    assert "verifier.env.GREETING" not in kept  # used (and possibly secret): never shown


def test_strict_formats_makes_the_unknown_keys_errors():
    suite = scan_suite(SUITE, strict=True)
    assert {u.task_id for u in suite.unloadable} == {
        "broken", "kitchen-sink", "multi-step", "needs-accelerators"
    }  # fmt: skip
    sink = next(u for u in suite.unloadable if u.task_id == "kitchen-sink")
    assert sink.field == "artifacts.1.x_kept" or sink.field.startswith("artifacts")
    assert "unknown table [verifier.tests]" in sink.reason


def test_naming_a_broken_folder_in_ids_is_an_error():
    with pytest.raises(UsageError) as err:
        build(compose_config([f"tasks_dir={SUITE}", "ids=[broken,no-network]", "run_dir=/tmp/x"]))
    assert "ids: cannot load what was asked for" in str(err.value)
    assert "broken/task.toml: field 'agent.timeout_sec'" in str(err.value)


def test_bwrap_without_a_network_skips_the_task_that_needs_one():
    plan = build(compose_config([f"tasks_dir={SUITE}", "sandbox=bwrap", "run_dir=/tmp/x"]))
    skipped = {s.id: s.reason for s in plan.skipped}
    assert skipped["needs-network"].startswith("needs the network; sandbox=bwrap has none")
    assert "no-network" in [t.id for t in plan.tasks]


# --- the whole suite through the CLI, on each backend --------------------------------------------


def docker_ready() -> bool:
    """A Docker engine answers and holds the base image (the prebuilt-image task's too)."""
    try:
        import docker

        client = docker.from_env()
        client.ping()
        client.images.get(BASE_IMAGE)
    except Exception:
        return False
    return True


@pytest.fixture(scope="module")
def probe_server() -> Iterator[tuple[int, str]]:
    """A loopback TCP server on the host that answers every connection with a token."""
    token = f"token-{os.getpid()}"
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(token.encode() + b"\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], token
    stop.set()
    server.close()


def evalrun(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "evalrun.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200", **env},
        timeout=600,
    )


def run_suite(
    tmp: Path, server: tuple[int, str], *overrides: str
) -> tuple[subprocess.CompletedProcess, dict]:
    port, token = server
    env = {"EVALRUN_PROBE_PORT": str(port), "EVALRUN_PROBE_REPLY": token}
    proc = evalrun(f"tasks_dir={SUITE}", f"run_dir={tmp}", "concurrency=2", *overrides, env=env)
    lines = (
        (tmp / "samples.jsonl").read_text().splitlines() if (tmp / "samples.jsonl").exists() else []
    )
    records = {r["task_id"]: r for r in map(json.loads, lines)}
    return proc, records


def assert_completed_with_skips(proc: subprocess.CompletedProcess, run_dir: Path) -> dict:
    assert proc.returncode == ExitCode.UNLOADABLE, proc.stderr
    for warning in scan_suite(SUITE).warnings:  # each unknown key named once, file and key
        assert proc.stderr.count(warning.replace(str(REPO), str(REPO))) == 1, warning
    assert "skipped broken (cannot load):" in proc.stderr
    assert "broken/task.toml: field 'agent.timeout_sec'" in proc.stdout  # listed at the end
    plan = json.loads((run_dir / "plan.json").read_text())
    assert json.loads((run_dir / "summary.json").read_text())["skipped"] == plan["skipped"]
    return {s["id"]: s for s in plan["skipped"]}


def test_the_suite_runs_on_local(tmp_path, probe_server):
    proc, records = run_suite(tmp_path / "run", probe_server)
    skipped = assert_completed_with_skips(proc, tmp_path / "run")
    assert {k: v["kind"] for k, v in skipped.items()} == {
        "broken": "cannot load",
        "kitchen-sink": "cannot run",  # its workspace must be at /app
        "missing-image": "cannot run",
        "needs-accelerators": "cannot run",
        "prebuilt-image": "cannot run",
    }
    assert {k: (r["outcome"], r["reason"]) for k, r in records.items()} == {
        "multi-step": ("pass", None),
        "needs-network": ("pass", None),
        "no-network": ("pass", None),  # unshare --net: no network for this one sample
    }
    assert records["multi-step"]["scores"] == {
        "reward": 1.0, "step:scaffold": 1.0, "step:implement": 1.0
    }  # fmt: skip

    show = evalrun("show", str(tmp_path / "run"), "multi-step", env={})
    assert show.returncode == 0, show.stderr
    assert re.search(r"steps\[0\]\.agent\.x_budget +5\n", show.stdout)
    assert re.search(r'steps\[0\]\.healthcheck\.x_note +"kept"\n', show.stdout)
    assert "steps[0].artifacts" in show.stdout
    report = (tmp_path / "run" / "report.html").read_text()
    assert "Skipped: 5 tasks did not run" in report
    assert "steps[0].x_owner" in report


@pytest.mark.bwrap
def test_the_suite_runs_on_bwrap_and_no_network_means_none(tmp_path, probe_server):
    require_engine(shutil.which("bwrap") is not None, "bubblewrap (apt-get install bubblewrap)")
    proc, records = run_suite(
        tmp_path / "run", probe_server, "sandbox=bwrap", "sandbox.network=host"
    )
    skipped = assert_completed_with_skips(proc, tmp_path / "run")
    assert sorted(skipped) == ["broken", "missing-image", "needs-accelerators", "prebuilt-image"]
    assert {k: r["outcome"] for k, r in records.items()} == dict.fromkeys(
        ["kitchen-sink", "multi-step", "needs-network", "no-network"], "pass"
    )
    _, token = probe_server
    assert records["needs-network"]["agent"]["output"].strip() == f"reached {token}"
    assert records["no-network"]["agent"]["output"].startswith("unreachable")
    assert records["kitchen-sink"]["agent"]["output"] == "awk says 55\n"


@pytest.mark.docker
def test_the_suite_runs_on_docker_and_no_network_means_none(tmp_path, probe_server):
    require_engine(docker_ready(), f"a Docker engine with the base image {BASE_IMAGE}")
    proc, records = run_suite(
        tmp_path / "run",
        probe_server,
        "sandbox=docker",
        "sandbox.network=host",
        "sandbox.public_network=host",
    )
    skipped = assert_completed_with_skips(proc, tmp_path / "run")
    assert sorted(skipped) == ["broken", "missing-image", "needs-accelerators"]
    assert "could not be pulled" in skipped["missing-image"]["reason"]
    assert {k: r["outcome"] for k, r in records.items()} == dict.fromkeys(
        ["kitchen-sink", "multi-step", "needs-network", "no-network", "prebuilt-image"], "pass"
    ), {k: r["reason"] for k, r in records.items()}
    _, token = probe_server
    assert records["needs-network"]["agent"]["output"].strip() == f"reached {token}"
    assert records["no-network"]["agent"]["output"].startswith("unreachable")


def test_docs_harbor_md_lists_every_key_of_harbors_models():
    docs = (REPO / "docs" / "harbor.md").read_text()
    table = docs.split("## Every task.toml key", 1)[1].split("\n## ", 1)[0]
    missing = {
        f"{path}.{key}"
        for path, schema in models(TASK_TOML).values()
        for key in schema
        if not re.search(rf"[`\[.\s]{re.escape(key)}[`\],\s]", table)
    }
    assert missing == set()
