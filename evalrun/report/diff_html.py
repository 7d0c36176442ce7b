"""The HTML page of `evalrun diff <run-a> <run-b>`, built from the diff's plain dict (the
`--json` output, `evalrun.analysis.diff.diff_runs`), so the diff command owns the comparison and
this
module owns only the looks (templates/diff.html.j2, autoescaped).

What the page reads (every key optional; other top-level keys are listed under "Notes"):

```
{
  "a": {"label": "runs/base", "state": "complete"},  "b": {...}    # or plain labels
  "verdict": "pass@1 0.62 → 0.71 (+0.09, p=0.03, significant)",
  "config": {"changed": {key: {"a": .., "b": ..}}, "added": {key: b}, "removed": {key: a}},
  "tasks": {"added": [ids], "removed": [ids], "changed": [ids],
            "rows": [{"task_id", "a": {metric: value}, "b": {...}, "delta": {...},
                      "significance": {"p", "significant", "note"},
                      "index": {"a": n, "b": n}}]},          # the task's #t-<n> in each report
  "metrics": {name: {"a", "b", "delta", "higher_is_better", "paired": {...}}}
}
```

Figures are rounded by kind (`evalrun.analysis.diff.fmt_value`); a delta is green when it is an
improvement (`higher_is_better` when given, else pass* better higher and cost*/latency*/error*/
flaky* better lower) and its significance sits beside it. Each task row links to its samples in
both runs' report.html (relative to where the page is written). The page fits 1280 px.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeGuard
from urllib.parse import quote

from evalrun.analysis.diff import fmt_change, fmt_value, significance_text
from evalrun.report.page import render

LOWER_IS_BETTER = ("cost", "latency", "error", "flaky", "time", "duration")


def direction(name: str, entry: Mapping[str, Any]) -> int:
    """+1 when higher is better, -1 when lower is better, 0 when it is neither."""
    if isinstance(entry.get("higher_is_better"), bool):
        return 1 if entry["higher_is_better"] else -1
    lowered = name.lower()
    if lowered.startswith("pass") or ".pass" in lowered:
        return 1
    return -1 if any(word in lowered for word in LOWER_IS_BETTER) else 0


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _pair(entry: Any) -> Mapping[str, Any]:
    if isinstance(entry, Mapping):
        return entry
    if isinstance(entry, list | tuple) and len(entry) == 2:
        return {"a": entry[0], "b": entry[1]}
    return {"a": None, "b": entry}


def _label(value: Any, default: str) -> str:
    if isinstance(value, Mapping):
        value = value.get("label") or value.get("run_dir") or value.get("run_id")
    return str(value) if value not in (None, "") else default


def delta_view(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """The delta of one metric: its text, CSS class (up/down: better/worse) and sort value."""
    a, b, delta = entry.get("a"), entry.get("b"), entry.get("delta")
    if delta is None and _number(a) and _number(b):
        delta = b - a
    if not _number(delta):
        return {"text": "—" if delta is None else str(delta), "css": "", "sort": None}
    sign = direction(name, entry) * (1 if delta > 0 else -1 if delta < 0 else 0)
    return {
        "text": fmt_change(name, delta),
        "css": {1: "up", -1: "down"}.get(sign, ""),
        "sort": delta,
    }


def _shown(name: str, value: Any) -> str:
    return "—" if value is None else fmt_value(name, value)


def metric_rows(metrics: Mapping[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for name, raw in metrics.items():
        entry = _pair(raw)
        paired = entry.get("paired") if isinstance(entry.get("paired"), Mapping) else None
        ci = (paired or {}).get("ci95")
        rows.append(
            {
                "name": name,
                "a": _shown(name, entry.get("a")),
                "a_sort": entry.get("a") if _number(entry.get("a")) else None,
                "b": _shown(name, entry.get("b")),
                "b_sort": entry.get("b") if _number(entry.get("b")) else None,
                "delta": delta_view(name, entry),
                "significance": significance_text(dict(paired)) if paired else "",
                "significant": bool(paired and paired.get("significant")),
                "interval": f"[{ci[0]:+.2f}, {ci[1]:+.2f}]"
                if isinstance(ci, list | tuple) and len(ci) == 2 and all(map(_number, ci))
                else "",
                "note": str((paired or {}).get("note", "")),
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
    rows: list[Mapping[str, Any]], hrefs: dict[str, str | None], k_names: list[str]
) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        a, b, deltas = row.get("a") or {}, row.get("b") or {}, row.get("delta") or {}
        sig = row.get("significance") or {}
        index = row.get("index") or {}
        links = [
            (side, f"{hrefs[side]}#t-{index[side]}")
            for side in ("a", "b")
            if hrefs.get(side) and isinstance(index.get(side), int)
        ]
        metrics = []
        for name in k_names:
            entry = {"a": a.get(name), "b": b.get(name), "delta": deltas.get(name)}
            metrics.append(
                {
                    "ab": f"{_shown(name, entry['a'])} → {_shown(name, entry['b'])}",
                    "delta": delta_view(name, entry),
                }
            )
        passes = (
            f"{a.get('passes')}/{a.get('n')} → {b.get('passes')}/{b.get('n')}"
            if "passes" in a and "passes" in b
            else ""
        )
        out.append(
            {
                "task_id": str(row.get("task_id")),
                "changed": bool(row.get("fingerprint_changed")),
                "passes": passes,
                "metrics": metrics,
                "significance": _task_significance(sig),
                "p": sig.get("p") if _number(sig.get("p")) else None,
                "significant": bool(sig.get("significant")),
                "links": links,
            }
        )
    return out


def _task_significance(sig: Mapping[str, Any]) -> str:
    if not sig:
        return ""
    if sig.get("note") == "no change":
        return "no change"
    if _number(sig.get("p")):
        return f"p={sig['p']:.2g}, {'significant' if sig.get('significant') else 'noise'}"
    return str(sig.get("note", ""))


def config_rows(config: Mapping[str, Any]) -> list[tuple[str, str, str, str]]:
    def shown(value: Any) -> str:
        if value is None:
            return "—"
        return value if isinstance(value, str) else json.dumps(value, default=str)

    rows = [
        (key, "changed", shown(_pair(p).get("a")), shown(_pair(p).get("b")))
        for key, p in (config.get("changed") or {}).items()
    ]
    rows += [(k, "added", "—", shown(v)) for k, v in (config.get("added") or {}).items()]
    rows += [(k, "removed", shown(v), "—") for k, v in (config.get("removed") or {}).items()]
    return rows


def _note(value: Any) -> tuple[str, bool]:
    """A top-level extra key as (text, is_json)."""
    if isinstance(value, Mapping) and "note" in value:
        return str(value["note"]), False
    if isinstance(value, Mapping | list):
        return json.dumps(value, indent=2, default=str, ensure_ascii=False), True
    return str(value), False


def render_diff_html(diff_json: dict[str, Any], out_dir: Path | None = None) -> str:
    """The whole HTML document for a diff dict; `out_dir`: where it will be written (the task
    rows link to both runs' report.html relative to it)."""
    a, b = _label(diff_json.get("a"), "a"), _label(diff_json.get("b"), "b")
    tasks = diff_json.get("tasks") or {}
    rows = [r for r in tasks.get("rows") or [] if isinstance(r, Mapping) and "task_id" in r]
    names = list(dict.fromkeys(n for r in rows for s in ("a", "b") for n in (r.get(s) or {})))
    k_names = [n for n in names if n.startswith(("pass@", "pass^"))]
    hrefs = {"a": _report_href(a, out_dir), "b": _report_href(b, out_dir)}
    id_lists = [
        (key, value)
        for key, value in tasks.items()
        if key != "rows" and isinstance(value, list) and all(isinstance(v, str) for v in value)
    ]
    partial = []
    for side in ("a", "b"):
        entry = diff_json.get(side)
        state = entry.get("state") if isinstance(entry, Mapping) else None
        if state and state != "complete":
            partial.append(f"run {side} is {state}: its metrics cover only the recorded cells")
    known = {"a", "b", "config", "tasks", "metrics", "verdict", "config_not_result_relevant"}
    notes = [(str(k), *_note(v)) for k, v in diff_json.items() if k not in known]
    return render(
        "diff.html.j2",
        title=f"evalrun diff · {a} → {b}",
        a=a,
        b=b,
        hrefs=hrefs,
        verdict=diff_json.get("verdict"),
        partial=partial,
        metrics=metric_rows(diff_json.get("metrics") or {}),
        config=config_rows(diff_json.get("config") or {}),
        id_lists=id_lists,
        k_names=k_names,
        rows=task_rows(rows, hrefs, k_names),
        notes=notes,
    )
