"""junit.xml: the run as JUnit test results, so CI systems show it natively.

One `<testcase>` per task: `classname` is `<suite>.<first tag>` (the suite is the tasks folder's
name; CI tools group on the dots), `name` is the task id, `time` the seconds its samples took.
- `<failure type="verify">` when the task did not pass every scored trial; the message is the
  first verify reason, the body every failing trial's reason and verify output.
- `<error type="harness">` when a sample ended in a harness error (no verdict; kept out of rates).
- `<skipped>` when no sample of the task was recorded (an interrupted run).
- `<properties>` carry pass@k / pass^k per task, and the run's identity and overall rates on the
  `<testsuite>`.
Text is stripped of ANSI codes and characters XML 1.0 forbids, so every parser accepts the file.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

from evalrun.models.records import Outcome, SampleRecord
from evalrun.models.summary import TaskStats
from evalrun.report.rundata import JUNIT_FILE, RunFiles, clean_text

OUTPUT_TAIL = 1500  # characters of verify output quoted per failing trial


def write_junit(run: RunFiles) -> Path:
    path = run.run_dir / JUNIT_FILE
    tree = ET.ElementTree(junit_element(run))
    ET.indent(tree)
    tree.write(path, encoding="utf-8", xml_declaration=True)
    return path


def _seconds(recs: list[SampleRecord]) -> float:
    return sum(v for r in recs for v in r.phases.model_dump().values() if v is not None)


def _rate(value: float | None) -> str:
    return "" if value is None else f"{value:.4f}"


def _properties(parent: ET.Element, values: dict[str, str]) -> None:
    props = ET.SubElement(parent, "properties")
    for name, value in values.items():
        ET.SubElement(props, "property", name=name, value=value)


def _tail(text: str) -> str:
    text = clean_text(text).strip()
    return text if len(text) <= OUTPUT_TAIL else "..." + text[-OUTPUT_TAIL:]


def testcase(suite: str, stats: TaskStats, recs: list[SampleRecord]) -> ET.Element:
    classname = f"{suite}.{stats.tags[0]}" if stats.tags else suite
    case = ET.Element(
        "testcase", classname=classname, name=stats.task_id, time=f"{_seconds(recs):.3f}"
    )
    props = {"difficulty": stats.difficulty, "passes": f"{stats.passes}/{stats.n}"}
    props |= {f"pass@{k}": _rate(v) for k, v in stats.pass_at.items() if v is not None}
    props |= {f"pass^{k}": _rate(v) for k, v in stats.pass_hat.items() if v is not None}
    props["flaky"] = str(stats.flaky).lower()
    _properties(case, props)
    if not recs:
        ET.SubElement(case, "skipped", message="no sample recorded (the run was interrupted?)")
        return case
    failed = [r for r in recs if r.outcome is Outcome.failed]
    errored = [r for r in recs if r.outcome is Outcome.error]
    if failed:
        first = clean_text(failed[0].reason) or "verify failed"
        failure = ET.SubElement(
            case,
            "failure",
            type="verify",
            message=f"{stats.passes}/{stats.n} scored trials passed: {first}"[:500],
        )
        failure.text = "\n\n".join(
            f"trial {r.trial}: {clean_text(r.reason)}\n{_tail(r.verify_output)}" for r in failed
        )
    if errored:
        error = ET.SubElement(
            case,
            "error",
            type="harness",
            message=f"{len(errored)} harness error(s): {clean_text(errored[0].reason)}"[:500],
        )
        error.text = "\n".join(f"trial {r.trial}: {clean_text(r.reason)}" for r in errored)
    out = ET.SubElement(case, "system-out")
    out.text = "\n".join(
        f"trial {r.trial}: {r.outcome.value}" + (f" - {clean_text(r.reason)}" if r.reason else "")
        for r in recs
    )
    return case


def junit_element(run: RunFiles) -> ET.Element:
    s = run.summary
    suite = Path(run.plan.tasks_dir or "tasks").name or "tasks"
    cases = [
        testcase(suite, t, [r for r in run.records if r.task_id == t.task_id]) for t in s.tasks
    ]
    counts = {
        "tests": str(len(cases)),
        "failures": str(sum(c.find("failure") is not None for c in cases)),
        "errors": str(sum(c.find("error") is not None for c in cases)),
        "skipped": str(sum(c.find("skipped") is not None for c in cases)),
        "time": f"{_seconds(run.records):.3f}",
    }
    root = ET.Element("testsuites", {"name": "evalrun", **counts})
    started = run.started_at
    stamp = datetime.fromtimestamp(started).isoformat(timespec="seconds") if started else ""
    testsuite = ET.SubElement(root, "testsuite", {"name": suite, "timestamp": stamp, **counts})
    props = {"run_id": s.run_id, "agent": run.agent, "sandbox": run.plan.sandbox}
    props |= {"trials": str(run.plan.trials), "run_dir": str(run.run_dir)}
    if run.state is not None:  # complete, or partial N/M (missing cells: ...)
        props["state"] = run.state.describe()
    props |= {f"pass@{k}": _rate(v) for k, v in s.overall.pass_at.items() if v is not None}
    props |= {f"pass^{k}": _rate(v) for k, v in s.overall.pass_hat.items() if v is not None}
    _properties(testsuite, props)
    testsuite.extend(cases)
    return root
