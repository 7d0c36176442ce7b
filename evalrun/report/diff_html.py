"""The HTML page of `evalrun diff <run-a> <run-b>`, built from the diff's `RunDiff`
(`evalrun.models.diff`, what `evalrun.analysis.diff.diff_runs` returns), so the diff command owns
the comparison and this module owns only the looks (templates/diff.html.j2, autoescaped).

Figures are rounded by kind (`evalrun.analysis.diff.fmt_value`); a delta is green when it is an
improvement (the metric's `higher_is_better`; a task's pass rates are better higher) and its
significance sits beside it. Each task row links to its samples in both runs' report.html
(relative to where the page is written). The page fits 1280 px.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any
from urllib.parse import quote

from evalrun.analysis.diff import fmt_change, fmt_value, significance_text, task_significance_text
from evalrun.models.diff import (
    ConfigChanges,
    Figure,
    MetricDelta,
    RunDiff,
    TaskRow,
)
from evalrun.report.page import render


def delta_view(name: str, delta: Figure, higher_is_better: bool) -> dict[str, Any]:
    """The delta of one metric: its text, CSS class (up/down: better/worse) and sort value."""
    if delta is None:
        return {"text": "—", "css": "", "sort": None}
    sign = (1 if higher_is_better else -1) * (1 if delta > 0 else -1 if delta < 0 else 0)
    return {
        "text": fmt_change(name, delta),
        "css": {1: "up", -1: "down"}.get(sign, ""),
        "sort": delta,
    }


def _shown(name: str, value: Any) -> str:
    return "—" if value is None else fmt_value(name, value)


def metric_rows(metrics: dict[str, MetricDelta]) -> list[dict[str, Any]]:
    rows = []
    for name, entry in metrics.items():
        paired = entry.paired
        ci = paired.ci95 if paired else None
        rows.append(
            {
                "name": name,
                "a": _shown(name, entry.a),
                "a_sort": entry.a,
                "b": _shown(name, entry.b),
                "b_sort": entry.b,
                "delta": delta_view(name, entry.delta, entry.higher_is_better),
                "significance": significance_text(paired),
                "significant": bool(paired and paired.significant),
                "interval": f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "",
                "note": paired.note if paired else "",
            }
        )
    return rows


def _report_href(run_label: str, out_dir: Path | None) -> str | None:
    """The run's report.html as a link from the page's folder (None: no run directory)."""
    report = Path(run_label) / "report.html"
    if not report.is_file():
        return None
    target = report.resolve()
    base = (out_dir or Path.cwd()).resolve()
    return quote(os.path.relpath(target, base))


def task_rows(
    rows: list[TaskRow], hrefs: dict[str, str | None], k_names: list[str]
) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        indexes = (("a", row.index.a), ("b", row.index.b))
        links = [(side, f"{hrefs[side]}#t-{index}") for side, index in indexes if hrefs[side]]
        metrics = [
            {
                "ab": f"{_shown(name, row.a.get(name))} → {_shown(name, row.b.get(name))}",
                "delta": delta_view(name, row.delta.get(name), True),
            }
            for name in k_names
        ]
        a, b = row.a, row.b
        out.append(
            {
                "task_id": row.task_id,
                "changed": row.fingerprint_changed,
                "passes": f"{a.get('passes')}/{a.get('n')} → {b.get('passes')}/{b.get('n')}",
                "metrics": metrics,
                "significance": task_significance_text(row.significance),
                "p": row.significance.p,
                "significant": row.significance.significant,
                "links": links,
            }
        )
    return out


def config_rows(config: ConfigChanges) -> list[tuple[str, str, str, str]]:
    def shown(value: Any) -> str:
        if value is None:
            return "—"
        return value if isinstance(value, str) else json.dumps(value, default=str)

    rows = [(key, "option", shown(p.a), shown(p.b)) for key, p in config.options.items()]
    rows += [(key, "suite", shown(p.a), shown(p.b)) for key, p in config.suite.items()]
    rows += [(key, "changed", shown(p.a), shown(p.b)) for key, p in config.changed.items()]
    rows += [(k, "added", "—", shown(v)) for k, v in config.added.items()]
    rows += [(k, "removed", shown(v), "—") for k, v in config.removed.items()]
    return rows


def render_diff_html(
    diff: RunDiff,
    out_dir: Path | None = None,
    *,
    reports: tuple[str, str] | None = None,
    home: str | None = None,
) -> str:
    """The whole HTML document for a diff; `out_dir`: where it will be written (the task rows
    link to both runs' report.html relative to it), unless `reports` gives the links to the
    two runs' pages; `home`: a link back to the page listing the runs (`evalrun view`)."""
    a, b = diff.a.label, diff.b.label
    tasks = diff.tasks
    names = dict.fromkeys(n for r in tasks.rows for side in (r.a, r.b) for n in side)
    k_names = [n for n in names if n.startswith(("pass@", "pass^"))]
    links = reports or (_report_href(a, out_dir), _report_href(b, out_dir))
    hrefs = dict(zip("ab", links, strict=True))
    id_lists = [("added", tasks.added), ("removed", tasks.removed), ("changed", tasks.changed)]
    partial = [
        f"run {name} is {side.state}: its metrics cover only the recorded cells"
        for name, side in (("a", diff.a), ("b", diff.b))
        if side.state and side.state != "complete"
    ]
    notes = [("k", str(diff.k)), ("significance", diff.significance.note)]
    return render(
        "diff.html.j2",
        title=f"evalrun diff · {a} → {b}",
        a=a,
        b=b,
        hrefs=hrefs,
        verdict=diff.verdict,
        partial=partial,
        metrics=metric_rows(diff.metrics),
        config=config_rows(diff.config),
        id_lists=id_lists,
        k_names=k_names,
        rows=task_rows(tasks.rows, hrefs, k_names),
        notes=notes,
        home=home,
    )
