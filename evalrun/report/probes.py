"""Per-expectation pass rates of a probe run, from the `expect:<name>` scores on its samples.

A probe's overall pass rate is its pass@1 like any task's; this adds *which* expectations give
way and how often - e.g. "edit-precision: used edit 5/5, diff at most 3 lines 2/5". Written to
`<run_dir>/probes.json` and printed after the run's own report.

A tracker that judged the probes' `assertions:` (`tracker=opik` runs them as an Opik test suite,
`evalrun.integrations.opik.suite`) hands its per-probe pass rates over with
`write_assertion_results`; they
sit beside the expectations as `opik:assertions`. This module never imports a tracker.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from evalrun.console import styled
from evalrun.models.records import Outcome, SampleRecord
from evalrun.probes.format import SCORE_PREFIX

PROBES_FILE = "probes.json"
ASSERTIONS_FILE = "probes_opik.json"  # a tracker's judged assertions, per probe
OPIK_KEY = "opik:assertions"


def expectation_rates(records: Iterable[SampleRecord]) -> dict[str, dict[str, dict]]:
    """probe id -> expectation -> {"passed": c, "samples": n, "rate": c/n}; errors left out."""
    counts: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    for rec in records:
        if rec.outcome is Outcome.error:
            continue
        for key, value in rec.scores.items():
            if key.startswith(SCORE_PREFIX) and value is not None:
                tally = counts[rec.task_id][key.removeprefix(SCORE_PREFIX)]
                tally[0] += value >= 1.0
                tally[1] += 1
    return {
        probe: {name: {"passed": c, "samples": n, "rate": c / n} for name, (c, n) in names.items()}
        for probe, names in sorted(counts.items())
    }


def write_assertion_results(run_dir: Path, results: dict[str, Any]) -> None:
    """What a tracker's judge made of the probes' assertions: `{"probes": {probe: {"passed",
    "samples", "rate"}}, ...}`, read back by `report_expectations`."""
    (Path(run_dir) / ASSERTIONS_FILE).write_text(json.dumps(results, indent=2) + "\n")


def read_assertion_results(run_dir: Path) -> dict[str, dict[str, Any]]:
    """probe id -> {"passed", "samples", "rate"} from a tracker's assertion run; {} when none."""
    path = Path(run_dir) / ASSERTIONS_FILE
    try:
        return dict(json.loads(path.read_text()).get("probes", {}))
    except (OSError, ValueError, AttributeError):
        return {}


def report_expectations(run_dir: Path, records: list[SampleRecord], console: Console) -> None:
    """Write probes.json and print the table; does nothing for a run without probe samples."""
    rates = expectation_rates(records)
    if not rates:
        return
    for probe, entry in read_assertion_results(run_dir).items():
        if probe in rates:
            rates[probe][OPIK_KEY] = entry
    (Path(run_dir) / PROBES_FILE).write_text(json.dumps(rates, indent=2) + "\n")
    table = Table(title="Probe expectations (pass rate over samples)", header_style="bold")
    for column in ("probe", "expectation", "passed", "rate"):
        table.add_column(column)
    for probe, names in rates.items():
        for i, (name, entry) in enumerate(names.items()):
            colour = "green" if entry["rate"] == 1 else "red" if entry["rate"] == 0 else "yellow"
            table.add_row(
                probe if i == 0 else "",
                name,
                f"{entry['passed']}/{entry['samples']}",
                styled(f"[{colour}]{{}}[/]", f"{entry['rate']:.2f}"),
            )
    console.print(table)
