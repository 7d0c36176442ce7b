"""junit.xml from a real run: what a CI system would show for each task."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from evalrun.report.junit import write_junit
from evalrun.report.rundata import load_run


def cases(run_dir) -> dict[str, ET.Element]:
    root = ET.parse(run_dir / "junit.xml").getroot()
    return {c.get("name"): c for c in root.iter("testcase")}


def props(case: ET.Element) -> dict[str, str]:
    return {p.get("name"): p.get("value") for p in case.find("properties")}


def test_the_run_writes_a_parseable_junit_with_one_testcase_per_task(run_dir):
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("4", "2", "1")
    suite = root.find("testsuite")
    assert suite.get("name") == "suite"
    assert {p.get("name"): p.get("value") for p in suite.find("properties")}["pass@1"] == "0.5556"
    found = cases(run_dir)
    assert list(found) == ["001-pass", "002-flaky", "003-fail", "004-error"]
    assert found["002-flaky"].get("classname") == "suite.demo"
    assert found["003-fail"].get("classname") == "suite.files"
    assert all(float(c.get("time")) > 0 for c in found.values())


def test_a_task_that_passed_every_trial_has_no_failure(run_dir):
    case = cases(run_dir)["001-pass"]
    assert case.find("failure") is None and case.find("error") is None
    assert props(case)["pass@3"] == "1.0000"


def test_a_flaky_task_fails_with_the_verify_reason_and_its_pass_at_k(run_dir):
    case = cases(run_dir)["002-flaky"]
    failure = case.find("failure")
    assert failure.get("type") == "verify"
    assert failure.get("message").startswith("2/3 scored trials passed: FAIL: answer.txt")
    assert "trial 1: FAIL: answer.txt does not contain 42 <img src=x" in failure.text
    p = props(case)
    assert (p["pass@1"], p["pass@3"], p["pass^3"], p["flaky"]) == (
        "0.6667",
        "1.0000",
        "0.0000",
        "true",
    )


def test_control_characters_in_verify_output_are_dropped_not_fatal(run_dir):
    raw = (run_dir / "samples.jsonl").read_text()
    assert "\\u001b[31m" in raw and "\\u0001" in raw  # the run really recorded them
    failure = cases(run_dir)["003-fail"].find("failure")
    assert "FAIL: wrong answer red  end" in failure.get("message")
    assert "\x1b" not in failure.text and "\x01" not in failure.text


def test_harness_errors_are_error_elements_not_failures(run_dir):
    case = cases(run_dir)["004-error"]
    assert case.find("failure") is None
    error = case.find("error")
    assert error.get("type") == "harness"
    assert error.get("message") == "3 harness error(s): setup.sh failed (exit 3): boom"


def test_an_interrupted_run_reports_unrun_tasks_as_skipped(run_dir):
    (run_dir / "summary.json").unlink()
    samples = run_dir / "samples.jsonl"
    first_task = [line for line in samples.read_text().splitlines() if '"001-pass"' in line]
    samples.write_text("\n".join(first_task) + "\n")
    write_junit(load_run(run_dir))
    found = cases(run_dir)
    assert found["001-pass"].find("skipped") is None
    assert found["003-fail"].find("skipped") is not None
    root = ET.parse(run_dir / "junit.xml").getroot()
    assert (root.get("tests"), root.get("skipped"), root.get("failures")) == ("4", "3", "0")
