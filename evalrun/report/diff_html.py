"""The HTML page of `evalrun diff <run-a> <run-b>`, built from a plain dict so the diff command
owns the comparison and this module owns only the looks.

Accepted shape (every key optional; unknown keys are shown, never dropped):

```
{
  "a": "runs/20250101-base",            # label of the baseline run (str, or {"label": ...})
  "b": "runs/20250102-new",             # label of the compared run
  "config": {                           # exactly evalrun.configdiff.ConfigDiff.to_json()
    "changed": {"agent.provider.model": {"a": "m1", "b": "m2"}},   # [a, b] pairs accepted too
    "added":   {"dotted.key": value_in_b},
    "removed": {"dotted.key": value_in_a}
  },
  "tasks": {
    "added":   ["ids only in b"], "removed": ["ids only in a"],
    "changed": ["ids whose fingerprint differs"],       # any list of ids is listed under its key
    "rows": [{"task_id": "001-x", "a": {"pass@1": 0.2}, "b": {"pass@1": 0.6},
              "delta": {"pass@1": 0.4},                     # optional; else b - a
              "significance": {"note": "noise (Fisher p=0.52)"}}]  # any extra key: a column
  },
  "metrics": {                          # suite-level numbers, a -> b
    "pass@1": {"a": 0.50, "b": 0.62,    # optional "delta" (else b - a when both are numbers)
               "paired": {"mean_delta": 0.1, "ci95": [0.02, 0.18], "p": 0.01,
                          "note": "..."}},  # optional: the change over shared tasks
    "cost.total_usd": {"a": 1.2, "b": 0.9, "higher_is_better": false}
  }
}
```

Other top-level keys (e.g. `k`, `significance`) are listed under "Notes": a dict with a `note`
by that note, a plain value as is, anything nested as JSON.

A delta is coloured green when it is an improvement: `higher_is_better` when given, else metrics
named like pass* are better higher and cost*/latency*/error*/flaky* better lower; others stay
neutral.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from html import escape
from typing import Any, TypeGuard

from evalrun.report.page import Cell, page, table, text_cell

LOWER_IS_BETTER = ("cost", "latency", "error", "flaky", "time", "duration")


def render_diff_html(diff_json: dict[str, Any]) -> str:
    """The whole HTML document for a diff dict of the shape in the module docstring."""
    a, b = _label(diff_json.get("a"), "a"), _label(diff_json.get("b"), "b")
    body = [
        f"<h1>evalrun diff · {escape(a)} → {escape(b)}</h1>",
        f'<p class="meta">baseline <b>{escape(a)}</b> compared with <b>{escape(b)}</b></p>',
        *[f'<p class="partial">{escape(line)}</p>' for line in _partial_lines(diff_json)],
        "<h2>Metrics</h2>",
        metrics_table(diff_json.get("metrics") or {}),
        "<h2>Config</h2>",
        config_tables(diff_json.get("config") or {}),
        "<h2>Tasks</h2>",
        tasks_section(diff_json.get("tasks") or {}),
    ]
    rest = {k: v for k, v in diff_json.items() if k not in {"a", "b", "config", "tasks", "metrics"}}
    if rest:
        body += ["<h2>Notes</h2>", other_section(rest)]
    return page(f"evalrun diff · {a} → {b}", "\n".join(body))


def _partial_lines(diff_json: dict[str, Any]) -> list[str]:
    lines = []
    for side in ("a", "b"):
        entry = diff_json.get(side)
        state = entry.get("state") if isinstance(entry, Mapping) else None
        if state and state != "complete":
            lines.append(f"run {side} is {state}: its metrics cover only the recorded cells")
    return lines


def _label(value: Any, default: str) -> str:
    if isinstance(value, Mapping):
        value = value.get("label") or value.get("run_dir") or value.get("run_id")
    return str(value) if value not in (None, "") else default


def _json_pre(value: Any) -> str:
    return f"<pre>{escape(json.dumps(value, indent=2, default=str, ensure_ascii=False))}</pre>"


def _show(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def direction(name: str, entry: Mapping[str, Any]) -> int:
    """+1 when higher is better, -1 when lower is better, 0 when it is neither."""
    if isinstance(entry.get("higher_is_better"), bool):
        return 1 if entry["higher_is_better"] else -1
    lowered = name.lower()
    if lowered.startswith("pass") or ".pass" in lowered:
        return 1
    return -1 if any(word in lowered for word in LOWER_IS_BETTER) else 0


def delta_cell(name: str, entry: Mapping[str, Any]) -> Cell:
    a, b = entry.get("a"), entry.get("b")
    delta = entry.get("delta")
    if delta is None and _is_number(a) and _is_number(b):
        delta = b - a
    if not _is_number(delta):
        return Cell(escape(_show(delta)), None, numeric=True)
    sign = direction(name, entry) * (1 if delta > 0 else -1 if delta < 0 else 0)
    css = {1: "up", -1: "down"}.get(sign, "")
    shown = f"{delta:+.4g}"
    return Cell(f'<span class="{css}">{escape(shown)}</span>', delta, numeric=True)


def _pair(entry: Any) -> Mapping[str, Any]:
    if isinstance(entry, Mapping):
        return entry
    if isinstance(entry, list | tuple) and len(entry) == 2:
        return {"a": entry[0], "b": entry[1]}
    return {"a": None, "b": entry}


def metrics_table(metrics: Mapping[str, Any]) -> str:
    if not metrics:
        return '<p class="muted">No metrics compared.</p>'
    paired = any(isinstance(_pair(raw).get("paired"), Mapping) for raw in metrics.values())
    rows = []
    for name, raw in metrics.items():
        entry = _pair(raw)
        row = [
            text_cell(name),
            _value_cell(entry.get("a")),
            _value_cell(entry.get("b")),
            delta_cell(name, entry),
        ]
        if paired:
            row += _paired_cells(name, entry.get("paired"))
        rows.append(row)
    headers = [("metric", False), ("a", True), ("b", True), ("Δ", True)]
    if paired:
        headers += [("paired Δ over shared tasks [95% CI]", True), ("p", True)]
    return table(headers, rows, css="sortable metrics")


def _paired_cells(name: str, paired: Any) -> list[Cell]:
    """The change over the tasks both runs scored: its mean and interval, and its p-value."""
    if not isinstance(paired, Mapping) or not _is_number(paired.get("mean_delta")):
        return [Cell("", None, numeric=True), Cell("", None, numeric=True)]
    delta = delta_cell(name, {"delta": paired["mean_delta"]})
    ci = paired.get("ci95")
    shown = delta.html
    if isinstance(ci, list | tuple) and len(ci) == 2 and all(map(_is_number, ci)):
        shown += f' <span class="muted">[{ci[0]:+.3f}, {ci[1]:+.3f}]</span>'
    p = paired.get("p")
    note = escape(str(paired.get("note", "")), quote=True)
    p_text = escape(f"{p:.3g}") if _is_number(p) else "—"
    if paired.get("significant"):
        p_text = f"<b>{p_text}</b>"
    return [
        Cell(f'<span title="{note}">{shown}</span>', delta.sort, numeric=True),
        Cell(p_text, p if _is_number(p) else None, numeric=True),
    ]


def _value_cell(value: Any) -> Cell:
    return Cell(escape(_show(value)), value if _is_number(value) else None, _is_number(value))


def config_tables(config: Mapping[str, Any]) -> str:
    changed = config.get("changed") or {}
    added, removed = config.get("added") or {}, config.get("removed") or {}
    if not (changed or added or removed):
        return '<p class="muted">The resolved configs are identical.</p>'
    rows = [
        [
            text_cell(key),
            text_cell("changed"),
            text_cell(_show(p.get("a"))),
            text_cell(_show(p.get("b"))),
        ]
        for key, p in ((k, _pair(v)) for k, v in changed.items())
    ]
    rows += [
        [text_cell(k), text_cell("added"), text_cell("—"), text_cell(_show(v))]
        for k, v in added.items()
    ]
    rows += [
        [text_cell(k), text_cell("removed"), text_cell(_show(v)), text_cell("—")]
        for k, v in removed.items()
    ]
    headers = [("key", False), ("change", False), ("a", False), ("b", False)]
    return table(headers, rows, css="sortable config")


def tasks_section(tasks: Mapping[str, Any]) -> str:
    if not tasks:
        return '<p class="muted">No task differences given.</p>'
    out = []
    for key, value in tasks.items():
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            ids = ", ".join(escape(v) for v in value) or '<span class="muted">none</span>'
            out.append(f"<p><b>{escape(key)} ({len(value)})</b>: {ids}</p>")
        elif isinstance(value, list) and all(
            isinstance(v, Mapping) and "task_id" in v for v in value
        ):
            title = "per task" if key == "rows" else key
            out.append(f"<h3>{escape(title)}</h3>" + task_rows_table(value))
        else:
            out.append(f"<h3>{escape(key)}</h3>" + _json_pre(value))
    return "".join(out)


ROW_KEYS = ("task_id", "a", "b", "delta")


def _note(value: Any) -> str:
    """A row's or the diff's extra field as one line: its `note` when it has one."""
    if isinstance(value, Mapping) and "note" in value:
        return str(value["note"])
    return _show(value)


def task_rows_table(rows: list[Mapping[str, Any]]) -> str:
    """Per-task metrics: one `a → b Δ` column per metric name found in any row (a click sorts
    by the delta), then one column per extra row key (e.g. `significance`, shown by its
    `note`). A row's own `delta` map wins over b - a."""
    names = list(dict.fromkeys(n for r in rows for side in ("a", "b") for n in (r.get(side) or {})))
    extra = list(dict.fromkeys(k for r in rows for k in r if k not in ROW_KEYS))
    headers: list[tuple[str, bool]] = [("task", False)]
    headers += [(f"{name} a → b", True) for name in names]
    headers += [(key, False) for key in extra]
    body = []
    for row in rows:
        a, b, deltas = row.get("a") or {}, row.get("b") or {}, row.get("delta") or {}
        cells = [text_cell(str(row["task_id"]))]
        for name in names:
            entry = {"a": a.get(name), "b": b.get(name), "delta": deltas.get(name)}
            delta = delta_cell(name, entry)
            shown = f"{escape(_show(entry['a']))} → {escape(_show(entry['b']))}"
            cells.append(Cell(f"{shown} {delta.html}", delta.sort, numeric=True))
        cells += [text_cell(_note(row.get(key))) for key in extra]
        body.append(cells)
    return table(headers, body, css="sortable taskdiff")


def other_section(rest: Mapping[str, Any]) -> str:
    """Top-level keys this page has no section for: one line each, or JSON when nested."""
    items = []
    for key, value in rest.items():
        simple = not isinstance(value, Mapping | list) or (
            isinstance(value, Mapping) and "note" in value
        )
        shown = escape(_note(value)) if simple else _json_pre(value)
        items.append(f"<li><b>{escape(str(key))}</b>: {shown}</li>")
    return f"<ul>{''.join(items)}</ul>"
