"""docs/summary-schema.md documents every field summary.json carries, under the right version."""

from __future__ import annotations

import dataclasses
import json
import re

from pydantic import BaseModel

from evalrun.models.summary import Summary
from tests.conftest import REPO

DOC = REPO / "docs" / "summary-schema.md"


def documented(section: str) -> set[str]:
    """Field names in the first column of the table under the heading naming `section`."""
    text = DOC.read_text()
    found = re.search(rf"^## [^\n]*`{section}`[^\n]*\n(.*?)(?=^## )", text, re.S | re.M)
    assert found, f"no section for {section} in {DOC}"
    return set(re.findall(r"^\| `(\w+)` \|", found.group(1), re.M))


def fields(model: type) -> set[str]:
    if dataclasses.is_dataclass(model):
        return {f.name for f in dataclasses.fields(model)}
    return set(model.model_fields) | set(model.model_computed_fields)  # both are written


def models(model: type) -> dict[str, type]:
    """`model` and every model or dataclass reachable through its fields, by class name."""
    out = {model.__name__: model}
    if dataclasses.is_dataclass(model):
        return out
    for info in model.model_fields.values():
        for arg in [info.annotation, *getattr(info.annotation, "__args__", ())]:
            for inner in [arg, *getattr(arg, "__args__", ())]:
                if isinstance(inner, type) and (
                    issubclass(inner, BaseModel) or dataclasses.is_dataclass(inner)
                ):
                    out |= models(inner)
    return out


def test_every_summary_field_is_documented():
    found = models(Summary)
    assert set(found) >= {
        "Summary",
        "GroupStats",
        "TaskStats",
        "LatencyStats",
        "CostStats",
        "Estimate",
    }
    for name, model in found.items():
        assert documented(name) == fields(model), name


def test_the_documented_version_is_the_one_written(run_dir):
    data = json.loads((run_dir / "summary.json").read_text())
    assert data["schema_version"] == Summary.model_fields["schema_version"].default == 1
    assert DOC.read_text().startswith("# summary.json — schema version 1")
