"""The shell every HTML report shares: one self-contained page, its CSS and its small script.

The page loads nothing: a Content-Security-Policy forbids every fetch, and allows only the one
inline script whose sha256 is in the policy - so even text that escaped `html.escape` (it should
not) could not run script. The script sorts tables on a header click, opens a sample's drill-down
when its link is followed, and - only when the URL carries `?selftest=1` - exercises both and
writes the verdict into `<pre id="selftest">` for the headless-browser test.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

from evalrun.stats import Estimate

CSS = """
:root { --fg:#1d2330; --muted:#667085; --line:#e4e7ec; --bg:#fff; --soft:#f6f7f9;
  --pass:#2e9e5b; --fail:#d64545; --error:#b08900; --accent:#3b6fd8; }
* { box-sizing: border-box; }
body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  color: var(--fg); background: var(--bg); }
main { max-width: 1280px; margin: 0 auto; padding: 20px 28px 60px; }
h1 { font-size: 22px; margin: 0 0 4px; } h2 { font-size: 17px; margin: 30px 0 10px;
  padding-bottom: 4px; border-bottom: 1px solid var(--line); }
.meta { color: var(--muted); margin: 0 0 16px; } .meta b { color: var(--fg); font-weight: 600; }
.partial { border: 1px solid var(--error); border-radius: 8px; padding: 8px 12px;
  margin: 0 0 16px; }
.cards { display: grid; grid-template-columns: repeat(auto-fill, minmax(130px, 1fr)); gap: 10px; }
.card { background: var(--soft); border: 1px solid var(--line); border-radius: 8px;
  padding: 10px 12px; } .card .v { font-size: 22px; font-weight: 650; }
.card .l { color: var(--muted); font-size: 12px; }
.card .pm { font-size: 12px; color: var(--muted); white-space: nowrap; }
td.rate .ci { position: absolute; bottom: 2px; height: 3px; border-radius: 2px;
  background: #1d3f8f; opacity: 0.45; z-index: 0; } td.rate .pm { color: var(--muted); }
.plots { display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-start; }
svg.plot { background: var(--soft); border: 1px solid var(--line); border-radius: 8px;
  max-width: 100%; height: auto; }
table { border-collapse: collapse; width: 100%; margin: 4px 0 8px;
  font-variant-numeric: tabular-nums; }
th, td { padding: 5px 9px; border-bottom: 1px solid var(--line); text-align: left;
  vertical-align: top; } td.n, th.n { text-align: right; }
th { background: var(--soft); font-weight: 600; white-space: nowrap; position: sticky; top: 0; }
table.sortable th { cursor: pointer; user-select: none; }
table.sortable th::after { content: " ↕"; color: #b0b5bf; font-size: 11px; }
th[aria-sort=ascending]::after { content: " ▲"; color: var(--accent); }
th[aria-sort=descending]::after { content: " ▼"; color: var(--accent); }
tbody tr:hover { background: #f3f6fd; } tbody td:first-child { white-space: nowrap; }
td.rate { position: relative; min-width: 64px; } td.rate .bar { position: absolute; left: 0;
  top: 4px; bottom: 4px; background: #dfe8fb; z-index: 0; } td.rate span.t { position: relative; }
.dot { display: inline-block; width: 11px; height: 11px; border-radius: 3px; margin-right: 2px;
  vertical-align: middle; } .pass { background: var(--pass); } .fail { background: var(--fail); }
.error { background: var(--error); } .pill { color: #fff; border-radius: 10px; padding: 0 7px;
  font-size: 12px; } .flaky { color: #9a6700; font-weight: 600; } .muted { color: var(--muted); }
.up { color: var(--pass); } .down { color: var(--fail); }
pre { background: #0f172a; color: #e2e8f0; padding: 10px 12px; border-radius: 6px;
  overflow: auto; max-height: 420px; white-space: pre-wrap; word-break: break-word;
  font: 12px/1.45 ui-monospace, "DejaVu Sans Mono", monospace; }
details { margin: 4px 0; } summary { cursor: pointer; padding: 4px 2px; }
details.task > summary { font-weight: 600; } details.task { border: 1px solid var(--line);
  border-radius: 8px; padding: 4px 10px; } .sample-body { padding: 4px 0 8px 18px; }
ol.steps { padding-left: 22px; } ol.steps li { margin-bottom: 6px; }
.kv { display: grid; grid-template-columns: max-content 1fr; gap: 2px 14px; }
#selftest:empty { display: none; }
"""

SCRIPT = r"""
(function () {
  "use strict";
  var problems = [];
  window.addEventListener("error", function (e) { problems.push("uncaught: " + e.message); });
  document.addEventListener("securitypolicyviolation", function (e) {
    problems.push("blocked load: " + e.blockedURI); });
  function key(td, num) {
    var v = td ? td.getAttribute("data-v") : null;
    if (v === null || v === "") return null;
    return num ? parseFloat(v) : v.toLowerCase();
  }
  function sortBy(th) {
    var table = th.closest("table"), cells = th.parentNode.cells;
    var idx = Array.prototype.indexOf.call(cells, th), num = th.dataset.type === "num";
    var dir = th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    Array.prototype.forEach.call(cells, function (c) { c.removeAttribute("aria-sort"); });
    th.setAttribute("aria-sort", dir);
    var sign = dir === "ascending" ? 1 : -1, body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = key(a.cells[idx], num), y = key(b.cells[idx], num);
      if (x === null || y === null) return (x === null) - (y === null);
      return x < y ? -sign : x > y ? sign : 0;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }
  document.querySelectorAll("table.sortable th").forEach(function (th) {
    th.tabIndex = 0;
    th.addEventListener("click", function () { sortBy(th); });
    th.addEventListener("keydown", function (e) {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th); } });
  });
  function reveal(id) {
    var el = id && document.getElementById(id);
    for (var p = el; p; p = p.parentElement) { if (p.tagName === "DETAILS") p.open = true; }
    if (el) el.scrollIntoView();
  }
  window.addEventListener("hashchange", function () {
    reveal(decodeURIComponent(location.hash.slice(1))); });
  if (location.hash) reveal(decodeURIComponent(location.hash.slice(1)));

  function selftest() {
    var lines = [], ok = true;
    function check(name, cond) { lines.push((cond ? "ok   " : "FAIL ") + name); ok = ok && !!cond; }
    var table = document.querySelector("table.sortable");
    check("a sortable table", table);
    var th = table && table.querySelector("th[data-type=num]");
    if (th) {
      var idx = Array.prototype.indexOf.call(th.parentNode.cells, th);
      var column = function () {
        return Array.prototype.map.call(table.tBodies[0].rows, function (r) {
          return key(r.cells[idx], true); }).filter(function (v) { return v !== null; });
      };
      th.click(); var up = column();
      th.click(); var down = column();
      check("click sorts '" + th.textContent + "' ascending " + JSON.stringify(up),
        up.every(function (v, i) { return i === 0 || up[i - 1] <= v; }));
      check("second click sorts descending " + JSON.stringify(down),
        down.every(function (v, i) { return i === 0 || down[i - 1] >= v; }));
    }
    var sample = document.querySelector("details.sample");
    if (sample) {
      reveal(sample.id); sample.open = false;
      sample.querySelector("summary").click();
      var body = sample.querySelector(".sample-body");
      check("drill-down " + sample.id + " opens",
        sample.open && body && body.getBoundingClientRect().height > 0);
    }
    lines.push("tables " + document.querySelectorAll("table").length +
      ", rows " + document.querySelectorAll("tbody tr").length +
      ", plots " + document.querySelectorAll("svg.plot").length +
      ", samples " + document.querySelectorAll("details.sample").length);
    check("no script error and no blocked load", problems.length === 0);
    lines = lines.concat(problems);
    document.getElementById("selftest").textContent =
      (ok ? "SELFTEST PASS" : "SELFTEST FAIL") + "\n" + lines.join("\n");
  }
  if (new URLSearchParams(location.search).get("selftest") === "1") {
    window.addEventListener("load", function () { setTimeout(selftest, 50); });
  }
})();
"""

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; script-src 'sha256-{_SCRIPT_HASH}'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def page(title: str, body: str) -> str:
    """A whole HTML document around `body` (already-escaped HTML)."""
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)}</title><style>{CSS}</style></head>\n<body><main>\n"
        f'{body}\n<pre id="selftest"></pre>\n</main><script>{SCRIPT}</script></body></html>\n'
    )


def fmt_rate(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_s(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f}s" if value < 1 else f"{value:.1f}s"


def fmt_usd(value: float | None) -> str:
    if value is None:
        return "—"
    return f"${value:.4f}" if value < 1 else f"${value:,.2f}"


@dataclass(frozen=True)
class Cell:
    """One table cell: `html` is shown (already escaped), `sort` is what a header click sorts by
    (None sorts last either way)."""

    html: str
    sort: float | str | None = None
    numeric: bool = False
    css: str = ""


def text_cell(text: str) -> Cell:
    return Cell(escape(text), text)


def num_cell(value: float | None, shown: str) -> Cell:
    return Cell(escape(shown), value, numeric=True)


def rate_cell(value: float | None, digits: int = 2) -> Cell:
    """A 0..1 rate with a bar behind the number."""
    if value is None:
        return Cell("—", None, numeric=True)
    bar = f'<span class="bar" style="width:{max(0.0, min(value, 1.0)) * 100:.0f}%"></span>'
    return Cell(f'{bar}<span class="t">{value:.{digits}f}</span>', value, True, "rate")


def interval_title(est: Estimate) -> str:
    """Hover text naming a figure's exact 95% interval and how it was computed."""
    if est.low is None or est.high is None:
        return f"no interval: fewer than 2 tasks to estimate it from ({est.method})"
    return f"95% CI {est.interval(3)} ({est.method}, {est.tasks} tasks)"


def estimate_cell(value: float | None, est: Estimate | None, digits: int = 2) -> Cell:
    """A rate cell with its uncertainty: `0.62 ± 0.11`, the 95% interval drawn as a line across
    the bar and named on hover. Sorts by the value."""
    if est is None or est.half_width is None or value is None:
        return rate_cell(value, digits)
    bar = f'<span class="bar" style="width:{max(0.0, min(value, 1.0)) * 100:.0f}%"></span>'
    assert est.low is not None and est.high is not None
    ci = (
        f'<span class="ci" style="left:{est.low * 100:.1f}%;'
        f'width:{max(est.high - est.low, 0.0) * 100:.1f}%"></span>'
    )
    text = (
        f'<span class="t" title="{escape(interval_title(est), quote=True)}">{value:.{digits}f}'
        f'<span class="pm"> ± {est.half_width:.{digits}f}</span></span>'
    )
    return Cell(bar + ci + text, value, True, "rate")


def table(headers: Sequence[tuple[str, bool]], rows: Sequence[Sequence[Cell]], *, css: str) -> str:
    """`headers` are (label, numeric); a table with class `sortable` sorts on header clicks."""
    head = "".join(
        f"<th{' class=n data-type=num' if numeric else ''}>{escape(label)}</th>"
        for label, numeric in headers
    )
    body = []
    for row in rows:
        cells = []
        for c in row:
            classes = " ".join(x for x in ("n" if c.numeric else "", c.css) if x)
            attr = f' class="{classes}"' if classes else ""
            sort = "" if c.sort is None else escape(str(c.sort), quote=True)
            cells.append(f'<td{attr} data-v="{sort}">{c.html}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (
        f'<table class="{css}"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
    )


def cards(items: Sequence[tuple[str, str] | tuple[str, str, Estimate | None]]) -> str:
    """Headline numbers: (label, value) or (label, value, its estimate) - values already
    formatted (escaped here); an estimate adds `± half-width` and its interval on hover."""
    inner = []
    for label, value, *rest in items:
        est = rest[0] if rest else None
        pm = title = ""
        if est is not None and est.half_width is not None:
            pm = f'<div class="pm">± {est.half_width:.2f} · {escape(est.interval())}</div>'
            title = f' title="{escape(interval_title(est), quote=True)}"'
        inner.append(
            f'<div class="card"{title}><div class="v">{escape(value)}</div>{pm}'
            f'<div class="l">{escape(label)}</div></div>'
        )
    return f'<div class="cards">{"".join(inner)}</div>'
