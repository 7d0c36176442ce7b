"""The shell every HTML report shares: jinja2 templates with autoescape, one stylesheet, one
small script.

Every page is a template under `evalrun/report/templates/` rendered by `render`: jinja2 escapes
every value put into it (agent output, verifier output, task files are untrusted text), so only
markup evalrun builds itself - the SVG plots (`evalrun.report.svg`, which escapes its labels) -
is passed in as `Markup`. The page loads nothing: a Content-Security-Policy forbids every fetch
and allows only the one inline script whose sha256 is in the policy, so even text that escaped
the templates (it should not) could not run script.

The script (templates/report.js) sorts tables on a header click, opens a sample's drill-down
when its link is followed, filters the run report (failures only, a text filter) and - only when
the URL carries `?selftest=1` - exercises all of that and writes the verdict into
`<pre id="selftest">` for the headless-browser test.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined
from markupsafe import Markup

from evalrun.models.summary import Estimate

TEMPLATES = files("evalrun.report") / "templates"
CSS = (TEMPLATES / "report.css").read_text(encoding="utf-8")
SCRIPT = (TEMPLATES / "report.js").read_text(encoding="utf-8")
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
CSP = (
    f"default-src 'none'; script-src 'sha256-{_SCRIPT_HASH}'; style-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


@dataclass(frozen=True)
class Card:
    """A headline number: its label, its formatted value, and its estimate (± and interval)."""

    label: str
    value: str
    est: Estimate | None = None


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


def interval_title(est: Estimate) -> str:
    """Hover text naming a figure's exact 95% interval and how it was computed."""
    if est.low is None or est.high is None:
        return f"no interval: fewer than 2 tasks to estimate it from ({est.method})"
    return f"95% CI {est.interval(3)} ({est.method}, {est.tasks} tasks)"


def bar_width(value: float | None) -> str:
    """A 0..1 rate as a CSS width."""
    return f"{max(0.0, min(value or 0.0, 1.0)) * 100:.0f}%"


def sort_key(value: Any) -> str:
    """What a header click sorts a cell by (`data-v`; empty sorts last)."""
    return "" if value is None else str(value)


@cache
def environment() -> Environment:
    env = Environment(
        loader=FileSystemLoader(str(TEMPLATES)),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )
    env.filters.update(
        rate=fmt_rate,
        seconds=fmt_s,
        usd=fmt_usd,
        width=bar_width,
        v=sort_key,
        ci_title=interval_title,
    )
    return env


def render(template: str, **context: Any) -> str:
    """A whole HTML document from `template` (autoescaped) with the shared CSS, script, CSP."""
    shell = {"css": Markup(CSS), "script": Markup(SCRIPT), "csp": Markup(CSP)}
    return environment().get_template(template).render(**shell, **context)


def svg(markup: str) -> Markup:
    """A plot built by `evalrun.report.svg` (which escapes every label) for a template."""
    return Markup(markup)
