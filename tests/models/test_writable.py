"""Nothing an agent shapes can make a record unwritable or cost another sample its record
(DESIGN.md, threat model rule 2): file names in any encoding, a folder chain 3000 deep, 20 MB of
binary output, a trajectory 10,000 levels deep - each played by one sample of a real run beside
normal ones, on local and bwrap (file names on docker too). Every sample keeps exactly one
readable record, the run ends as usual, ls / show / report read it and a resume runs nothing
twice. The bounds themselves are checked on records made by hand."""

from __future__ import annotations

import base64
import io
import tempfile
from pathlib import Path

import pytest
from rich.console import Console

from evalrun.cli.commands.runs import ls_command, report_command, show_command
from evalrun.models import writable as writable_module
from evalrun.models.records import (
    AgentResult,
    FileChange,
    Outcome,
    SampleRecord,
    ToolCall,
    WorkspaceDiff,
    writable,
)
from evalrun.models.writable import MAX_DEPTH, MAX_ITEMS
from evalrun.run import workspace_diff
from evalrun.run.trial import AGENT_OUTPUT_CHARS
from evalrun.rundir.log import RunLog
from evalrun.sandbox.common.owner import MARKER_FILE, current_owner
from tests.agents.conftest import FIXTURES, Finished, run_eval
from tests.agents.fixtures.record_poisoner import deep
from tests.sandbox.conftest import backend_params, build_backend

NAMES = r"""
printf 'x\n' > "$(printf '\377\376.txt')"
printf 'x\n' > "$(printf 'esc\033[31m\nline')"
"""
CHAIN = """
p=$(printf 'd/%.0s' $(seq 1000))
(for i in 1 2 3; do mkdir -p "$p" && cd "$p" || exit 0; done)
"""
BINARY_OUTPUT = "head -c 20000000 /dev/urandom\n"


def poisoning(attack: str) -> str:
    """An agent command that plays `attack` where the workspace holds poison.txt and solves
    the task elsewhere; base64, so no shell or Hydra quoting can change it."""
    script = f"if [ -e poison.txt ]; then\n{attack}\nelse echo 42 > answer.txt; fi\n"
    return f"echo {base64.b64encode(script.encode()).decode()} | base64 -d | bash"


@pytest.fixture
def suite(make_task) -> Path:
    """Two tasks asking for 42 in answer.txt; the second one's samples are the poisoned ones."""
    make_task("001-answer")
    return make_task("002-poisoned", files={"setup/poison.txt": "x\n"}).parent


def assert_every_cell_has_one_readable_record(done: Finished) -> dict[str, list[SampleRecord]]:
    assert done.exit_code == 0, done.console
    cells = sorted((r.task_id, r.trial) for r in done.records)
    assert cells == [("001-answer", 0), ("001-answer", 1), ("002-poisoned", 0), ("002-poisoned", 1)]
    by_task: dict[str, list[SampleRecord]] = {}
    for rec in done.records:
        by_task.setdefault(rec.task_id, []).append(rec)
    assert [r.outcome for r in by_task["001-answer"]] == [Outcome.passed] * 2
    assert [r.outcome for r in by_task["002-poisoned"]] == [Outcome.failed] * 2, [
        r.reason for r in by_task["002-poisoned"]
    ]
    assert RunLog.open(done.run_dir).state().complete
    return by_task


def our_sample_roots() -> list[Path]:
    """Sample temp roots this process made and left behind."""
    owner = current_owner()
    return [
        root
        for root in Path(tempfile.gettempdir()).glob("evalrun-*")
        if (root / MARKER_FILE).is_file() and owner in (root / MARKER_FILE).read_text()
    ]


def assert_readable_and_resumed_without_rerunning(
    done: Finished, suite: Path, *overrides: str
) -> None:
    out = io.StringIO()
    console = Console(file=out, width=200)
    assert ls_command([str(done.run_dir.parent)], console) == 0
    assert show_command([str(done.run_dir), "002-poisoned"], console) == 0
    assert report_command([str(done.run_dir)], console) == 0
    assert "\x1b" not in out.getvalue()  # no control character of the agent's reached it
    again = run_eval(suite, done.run_dir, *overrides)
    assert again.exit_code == 0, again.console
    assert "4 samples already recorded, 0 to run" in again.console
    assert len(again.records) == 4


@pytest.mark.parametrize("backend_id", backend_params(["local", "bwrap"]))
def test_a_sample_poisoning_its_record_costs_no_record(backend_id, suite, tmp_path, request):
    build_backend(backend_id, request)  # skip, or fail in CI, when the engine is missing
    overrides = (
        f"sandbox={backend_id}",
        "agent=command",
        f"agent.cmd='{poisoning(NAMES + CHAIN + BINARY_OUTPUT)}'",
        "trials=2",
        "max_retries=0",
    )
    done = run_eval(suite, tmp_path / "run", *overrides)
    poisoned = assert_every_cell_has_one_readable_record(done)["002-poisoned"]
    for rec in poisoned:
        assert rec.workspace_diff is not None
        paths = [f.path for f in rec.workspace_diff.files]
        assert "\\xff\\xfe.txt" in paths and "esc\\x1b[31m\\x0aline" in paths
        assert "d/" * workspace_diff.MAX_DEPTH + "d" in paths
        assert len(rec.agent.output) <= AGENT_OUTPUT_CHARS + 100
    assert our_sample_roots() == []  # the 3000-deep sample roots were removed
    assert_readable_and_resumed_without_rerunning(done, suite, *overrides)


@pytest.mark.docker
def test_file_names_in_any_encoding_cost_no_record_on_docker(suite, tmp_path, request):
    build_backend("docker", request)
    overrides = (
        "sandbox=docker",
        "agent=command",
        f"agent.cmd='{poisoning(NAMES)}'",
        "trials=2",
        "max_retries=0",
    )
    done = run_eval(suite, tmp_path / "run", *overrides)
    for rec in assert_every_cell_has_one_readable_record(done)["002-poisoned"]:
        assert rec.workspace_diff is not None
        assert [f.path for f in rec.workspace_diff.files] == [
            "\\xff\\xfe.txt",
            "esc\\x1b[31m\\x0aline",
        ]
    assert_readable_and_resumed_without_rerunning(done, suite, *overrides)


def test_a_python_agents_10k_deep_trajectory_costs_no_record(suite, tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(FIXTURES))
    overrides = ("agent=python", "agent.factory=record_poisoner:make_agent", "trials=2")
    done = run_eval(suite, tmp_path / "run", *overrides)
    for rec in assert_every_cell_has_one_readable_record(done)["002-poisoned"]:
        steps = rec.agent.trajectory
        assert len(steps) == MAX_ITEMS
        assert "[record cut: trajectory: the last 5 of 10005 not recorded]" in (rec.reason or "")
        for step in steps[:2]:  # made with its args, and given them afterwards
            node = step.args["deep"]
            while isinstance(node, dict):
                node = node["a"]
            assert node == f"[nested more than {MAX_DEPTH} levels deep: not recorded]"
        odd = steps[0].args
        assert (odd["bytes"], odd["set"], odd["7"], odd["big"]) == (
            "\\xff",
            [1, 2],
            "int key",
            "1" + "0" * 40,
        )
        assert odd["object"].startswith("<object object at ")
        assert rec.agent.output == "wrong \\xff\\xfe" and rec.agent.error == "agent \\ud800"
    assert_readable_and_resumed_without_rerunning(done, suite, *overrides)


# --- the bounds, on records made by hand --------------------------------------------------------
def record(**fields) -> SampleRecord:
    return SampleRecord(
        run_id="r",
        task_id="t",
        fingerprint="f",
        trial=0,
        outcome=Outcome.failed,
        started_at=0.0,
        finished_at=1.0,
        **fields,
    )


def round_trip(rec: SampleRecord) -> SampleRecord:
    return SampleRecord.model_validate_json(writable(rec).model_dump_json())


def test_undecodable_text_anywhere_is_written_as_its_bytes_escaped():
    changed = FileChange(path="\udcff\udcfe.txt", change="added", diff="+\udcff\n")
    rec = record(
        reason="FAIL: \udcff",
        verify_output="\udcfe",
        judge_reasons={"j\udcff": "said \ud800"},
        workspace_diff=WorkspaceDiff(files=[changed]),
    )
    back = round_trip(rec)
    assert (back.reason, back.verify_output) == ("FAIL: \\xff", "\\xfe")
    assert back.judge_reasons == {"j\\xff": "said \\ud800"}
    assert back.workspace_diff is not None
    assert (back.workspace_diff.files[0].path, back.workspace_diff.files[0].diff) == (
        "\\xff\\xfe.txt",
        "+\\xff\n",
    )
    plain = record(reason="nothing odd")
    assert writable(plain) == plain


def test_args_set_around_validation_are_cut_at_the_record():
    """A step built without validation (model_construct) still reaches the store bounded."""
    raw = ToolCall.model_construct(name="x", args={"deep": deep(5000)})
    back = round_trip(record(agent=AgentResult(trajectory=[raw])))
    node, levels = back.agent.trajectory[0].args["deep"], 0
    while isinstance(node, dict):
        node, levels = node["a"], levels + 1
    assert node == f"[nested more than {MAX_DEPTH} levels deep: not recorded]"
    assert levels == MAX_DEPTH - 5  # in the record, agent, trajectory, step and args: 40 in all


def test_a_record_over_its_size_budget_is_cut_then_minimal(monkeypatch):
    monkeypatch.setattr(writable_module, "MAX_RECORD_CHARS", 50_000)
    rec = record(reason="FAIL: wrong", agent=AgentResult(output="o" * 60_000))
    cut = round_trip(rec)
    assert len(cut.agent.output) < 4_100 and cut.agent.output.endswith("o" * 100)
    assert cut.reason == "FAIL: wrong [record cut: over 50,000 characters: every text cut]"
    monkeypatch.setattr(writable_module, "MAX_RECORD_CHARS", 1_000)
    least = round_trip(rec)
    assert (least.outcome, least.agent, least.trial) == (Outcome.failed, AgentResult(), 0)
    assert least.reason == (
        "FAIL: wrong [the full record could not be written: more than 1,000 characters even "
        "with texts cut]"
    )
