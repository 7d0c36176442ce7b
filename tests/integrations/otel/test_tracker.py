"""`tracker=otel` against a real Arize Phoenix on 127.0.0.1: a run of claude_code (against the
model API stand-in, on the local sandbox) is sent as OTLP spans when it ends, and read back
through Phoenix's REST API - the span tree, the GenAI / OpenInference attributes of each model
call as the gateway metered it, a harness error's status - and a backend that is not there costs
the run nothing.

Phoenix is installed apart from evalrun's environment (its dependencies would break evalrun's
own; scripts/test.sh makes the venv once, cached): `$EVALRUN_PHOENIX_VENV`, by default
/var/cache/evalrun-test/phoenix-venv.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.agents.conftest import real_suite, run_eval
from tests.agents.test_presets import FIX, KEY_VAR, SECRET, TYPO, overrides
from tests.api_standins import ApiStandin, Turn, say, tool
from tests.conftest import require_engine

PHOENIX_VENV = Path(os.environ.get("EVALRUN_PHOENIX_VENV", "/var/cache/evalrun-test/phoenix-venv"))
MODEL = "claude-sonnet-4-5"
__all__ = ["real_suite"]  # fixture


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory) -> Iterator[str]:
    """A Phoenix server on 127.0.0.1 with its own working folder; its base URL."""
    binary = PHOENIX_VENV / "bin" / "phoenix"
    require_engine(binary.exists(), f"Arize Phoenix ({binary}; scripts/test.sh installs it)")
    port, grpc = _free_port(), _free_port()
    work = tmp_path_factory.mktemp("phoenix")
    env = {
        **os.environ,
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_WORKING_DIR": str(work),
    }
    log = (work / "phoenix.log").open("wb")
    server = subprocess.Popen([str(binary), "serve"], env=env, stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/healthz", timeout=2):
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(
                        f"Phoenix did not start: {(work / 'phoenix.log').read_text()[-2000:]}"
                    )
                time.sleep(0.5)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=30)
        log.close()


def _spans(url: str, project: str, want: int) -> list[dict]:
    """The spans Phoenix holds for `project`, once it has `want` (it ingests asynchronously)."""
    deadline = time.monotonic() + 30
    found: list[dict] = []
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/v1/projects/{project}/spans?limit=1000") as reply:
                found = json.load(reply)["data"]
        except OSError:
            found = []
        if len(found) >= want:
            return found
        time.sleep(0.3)
    return found


def test_a_run_is_read_back_from_phoenix_as_a_span_tree(phoenix, real_suite, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_VAR, SECRET)
    script = [tool("Bash", command=FIX), Turn(text="Fixed.", input_tokens=300, output_tokens=7)]
    with ApiStandin([*script, say("never")], model=MODEL) as server:
        done = run_eval(
            real_suite(TYPO, "001-fizzbuzz-off-by-one"),
            tmp_path / "run",
            *overrides("claude_code", "local", server.url, MODEL),
            "ids=[003-error-message-typo]",
            "tracker=otel",
            f"tracker.endpoint={phoenix}",
            "tracker.service_name=otel-test",
        )
    assert done.exit_code == 0, done.console
    record = done.only
    assert record.outcome == "pass" and len(record.agent.model_calls) == 2

    spans = _spans(phoenix, "otel-test", 7)  # run, sample, 3 phases, 2 model calls
    by_id = {s["context"]["span_id"]: s for s in spans}
    names = sorted(s["name"] for s in spans)
    phases = ["evalrun.setup", "evalrun.agent", "evalrun.verify"]
    run_and_sample = [f"evalrun.run {record.run_id}", f"evalrun.sample {TYPO}#0"]
    assert names == sorted([*run_and_sample, *phases, f"chat {MODEL}", f"chat {MODEL}"])
    assert len({s["context"]["trace_id"] for s in spans}) == 1

    def parent(span: dict) -> str | None:
        up = by_id.get(span["parent_id"] or "")
        return up["name"] if up else None

    tree = {s["name"]: parent(s) for s in spans}
    assert tree[f"evalrun.run {record.run_id}"] is None
    assert tree[f"evalrun.sample {TYPO}#0"] == f"evalrun.run {record.run_id}"
    for phase in ("setup", "agent", "verify"):
        assert tree[f"evalrun.{phase}"] == f"evalrun.sample {TYPO}#0"
    assert tree[f"chat {MODEL}"] == "evalrun.agent"

    run = next(s for s in spans if s["parent_id"] is None)["attributes"]
    assert (run["evalrun.agent"], run["evalrun.model"], run["evalrun.pass@1"]) == (
        "claude_code",
        MODEL,
        1.0,
    )
    sample = next(s for s in spans if s["name"].startswith("evalrun.sample"))["attributes"]
    assert sample["evalrun.outcome"] == "pass"
    assert sample["gen_ai.usage.input_tokens"] == record.agent.usage.input_tokens == 400
    calls = sorted(
        (s for s in spans if s["name"].startswith("chat")), key=lambda s: s["start_time"]
    )
    metered = record.agent.model_calls
    for span, call in zip(calls, metered, strict=True):
        attributes = span["attributes"]
        assert attributes["gen_ai.system"] == "anthropic"
        assert attributes["gen_ai.request.model"] == call.model == MODEL
        assert attributes["gen_ai.usage.input_tokens"] == call.input_tokens
        assert attributes["gen_ai.usage.output_tokens"] == call.output_tokens
        assert attributes["llm.cost.total"] == pytest.approx(call.cost_usd)
        assert span["span_kind"] == "LLM"
    assert [c["attributes"]["gen_ai.usage.output_tokens"] for c in calls] == [20, 7]
    agent = next(s for s in spans if s["name"] == "evalrun.agent")
    assert agent["start_time"] <= calls[0]["start_time"] <= calls[1]["start_time"]
    assert calls[1]["end_time"] <= agent["end_time"]


def test_an_unreachable_backend_is_said_once_and_the_run_is_kept(make_task, tmp_path, capfd):
    suite = make_task().parent
    port = _free_port()  # nothing listens here
    done = run_eval(
        suite,
        tmp_path / "run",
        "agent=oracle",
        "sandbox=local",
        "tracker=otel",
        f"tracker.endpoint=http://127.0.0.1:{port}",
        "tracker.timeout_s=2",
    )
    assert done.exit_code == 0
    assert done.only.outcome == "pass"
    assert (tmp_path / "run" / "summary.json").is_file()
    said = [line for line in capfd.readouterr().err.splitlines() if "otel:" in line]
    assert len(said) == 1
    assert f"5 spans not sent to http://127.0.0.1:{port}/v1/traces" in said[0]
    assert "Connection refused" in said[0] and "retrying" not in said[0]
    assert f"the run is kept in {tmp_path / 'run'}" in said[0]


def test_a_harness_error_is_a_sample_span_with_status_error(phoenix, make_task, tmp_path):
    make_task("001-answer")
    suite = make_task("002-broken", files={"setup/setup.sh": "echo boom >&2; exit 3\n"}).parent
    done = run_eval(
        suite,
        tmp_path / "run",
        "agent=oracle",
        "sandbox=local",
        "max_retries=0",
        "max_errors=10",
        "tracker=otel",
        f"tracker.endpoint={phoenix}",
        "tracker.service_name=otel-errors",
    )
    assert done.exit_code == 0, done.console
    broken = next(r for r in done.records if r.task_id == "002-broken")
    assert broken.outcome == "error"

    ran = [p for r in done.records for p in (r.phases.setup, r.phases.agent, r.phases.verify)]
    spans = _spans(phoenix, "otel-errors", 1 + len(done.records) + sum(p is not None for p in ran))
    samples = {
        s["attributes"]["evalrun.task_id"]: s for s in spans if "evalrun.task_id" in s["attributes"]
    }
    assert samples["002-broken"]["status_code"] == "ERROR"
    assert samples["002-broken"]["status_message"] == broken.reason
    assert samples["002-broken"]["attributes"]["evalrun.outcome"] == "error"
    assert samples["001-answer"]["status_code"] == "UNSET"
    assert samples["001-answer"]["attributes"]["evalrun.outcome"] == "pass"
