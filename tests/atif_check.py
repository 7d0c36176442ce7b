"""Checks every trajectory.json evalrun writes two ways: against evalrun's ATIF models, and
against a JSON Schema written from Harbor's RFC 0001 apart from those models
(tests/fixtures/atif/), plus the two rules the schema cannot say."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema

from evalrun.models.atif import Trajectory
from tests.conftest import REPO

SCHEMA = json.loads((REPO / "tests/fixtures/atif/atif-v1.8.schema.json").read_text())


def schema_problems(document: dict[str, Any]) -> list[str]:
    """What the RFC's schema and its two cross-field rules say is wrong with `document`."""
    validator = jsonschema.Draft202012Validator(SCHEMA)
    problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(document)]
    for index, step in enumerate(document.get("steps", [])):
        if step.get("step_id") != index + 1:
            problems.append(f"steps[{index}].step_id is {step.get('step_id')}")
        calls = {c["tool_call_id"] for c in step.get("tool_calls") or []}
        for result in (step.get("observation") or {}).get("results", []):
            if result.get("source_call_id") not in (None, *calls):
                problems.append(f"steps[{index}] answers a call it did not make")
    return problems


def checked_trajectories(run_dir: Path) -> list[dict[str, Any]]:
    """Every sample's trajectory.json of `run_dir`, each proven valid both ways; one per
    record of samples.jsonl."""
    records = (run_dir / "samples.jsonl").read_text().splitlines()
    paths = sorted(run_dir.glob("samples/*/*/trajectory.json"))
    assert len(paths) == len(records), (len(paths), len(records))
    documents = []
    for path in paths:
        document = json.loads(path.read_text())
        Trajectory.model_validate(document)
        assert schema_problems(document) == [], (path, schema_problems(document))
        documents.append(document)
    return documents
