"""Plots as inline SVG strings, drawn in Python so a report opens with no script library and no
network. Three shapes cover the reports: a line chart (pass@k against k), a box plot with every
sample as a dot (latency of one phase), and horizontal bars (cost per task, pass@1 per job).

Every label passes through `html.escape`; hovering a mark shows its exact value (SVG `<title>`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from evalrun.analysis.metrics import percentile

OUTCOME_COLORS = {"pass": "#2e9e5b", "fail": "#d64545", "error": "#b08900"}
PALETTE = ("#3b6fd8", "#e08a1e", "#2e9e5b", "#a24bc4", "#d64545", "#1f9fb5", "#7a7a7a")
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def nice_ticks(hi: float, count: int = 5) -> list[float]:
    """Round tick values from 0 to at least `hi` (steps of 1, 2 or 5 times a power of ten)."""
    if hi <= 0 or not math.isfinite(hi):
        return [0.0, 1.0]
    raw = hi / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    ticks = [0.0]
    while ticks[-1] < hi - 1e-12:
        ticks.append(round(ticks[-1] + step, 12))
    return ticks


def short_number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:.0f}"
    if abs(value) >= 1:
        return f"{value:.3g}"
    return f"{value:.2g}"


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _open(width: int, height: int, label: str) -> str:
    return (
        f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{escape(label)}" {_FONT}>'
        f'<text x="{width / 2:.0f}" y="14" text-anchor="middle" font-size="13" '
        f'font-weight="600">{escape(label)}</text>'
    )


def _y_grid(ticks: Sequence[float], py: Callable[[float], float], left: int, plot_w: int) -> str:
    """A faint horizontal line and a value label at each tick of the y axis."""
    return "".join(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{py(t):.1f}" y2="{py(t):.1f}" '
        f'stroke="#e3e3e3"/><text x="{left - 6}" y="{py(t) + 4:.1f}" text-anchor="end">'
        f"{short_number(t)}</text>"
        for t in ticks
    )


def _legend(x: int, y: int, label: str, limit: int, stroke: str) -> str:
    """One legend row at the right of a chart: a line drawn with `stroke` (its colour, width
    and dashes as SVG attributes), then the label, cut to `limit` characters."""
    return (
        f'<line x1="{x + 12}" x2="{x + 32}" y1="{y}" y2="{y}" {stroke}/>'
        f'<text x="{x + 38}" y="{y + 4}">{escape(_cut(label, limit))}'
        f"<title>{escape(label)}</title></text>"
    )


@dataclass(frozen=True)
class Series:
    label: str
    points: Sequence[tuple[float, float | None]]  # (x, y); y None leaves a gap
    color: str
    dashed: bool = False
    thin: bool = False  # secondary lines (per group) under the headline ones
    # (x, low, high): the 95% interval at each x, drawn as a shaded band around the line
    band: Sequence[tuple[float, float, float]] = ()


def line_chart(
    series: Sequence[Series], *, title: str, xs: Sequence[int], x_label: str, y_max: float = 1.0
) -> str:
    """Lines over integer x values (e.g. k = 1..trials), y from 0 to `y_max`."""
    width, height, left, right, top, bottom = 500, 250, 44, 150, 26, 36
    plot_w, plot_h = width - left - right, height - top - bottom
    lo, hi = min(xs, default=1), max(xs, default=1)

    def px(x: float) -> float:
        return left + (plot_w / 2 if hi == lo else (x - lo) / (hi - lo) * plot_w)

    def py(y: float) -> float:
        return top + plot_h - y / y_max * plot_h

    out = [_open(width, height, title), _y_grid(nice_ticks(y_max, 4), py, left, plot_w)]
    for tick_x in xs:
        tick_y = top + plot_h + 16
        out.append(f'<text x="{px(tick_x):.1f}" y="{tick_y}" text-anchor="middle">{tick_x}</text>')
    out.append(
        f'<text x="{left + plot_w / 2:.0f}" y="{height - 4}" text-anchor="middle">'
        f"{escape(x_label)}</text>"
    )
    for s in series:
        if len(s.band) > 1:
            edge = [(px(x), py(hi)) for x, _, hi in s.band] + [
                (px(x), py(lo)) for x, lo, _ in reversed(s.band)
            ]
            outline = " ".join(f"{a:.1f},{b:.1f}" for a, b in edge)
            out.append(
                f'<polygon class="band" points="{outline}" fill="{s.color}" fill-opacity="0.1" '
                f'stroke="none"><title>{escape(s.label)}: 95% interval</title></polygon>'
            )
    for i, s in enumerate(series):
        points = [(px(x), py(y), x, y) for x, y in s.points if y is not None]
        dash = ' stroke-dasharray="5 4"' if s.dashed else ""
        dash = ' stroke-dasharray="2 3"' if s.thin and s.dashed else dash
        stroke = 1.2 if s.thin else 2.2
        if len(points) > 1:
            path = " ".join(f"{a:.1f},{b:.1f}" for a, b, _, _ in points)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{s.color}" '
                f'stroke-width="{stroke}"{dash}/>'
            )
        ranges = {x: (lo, hi) for x, lo, hi in s.band}
        for a, b, x, y in points:
            ci = f" (95% CI [{ranges[x][0]:.3f}, {ranges[x][1]:.3f}])" if x in ranges else ""
            out.append(
                f'<circle cx="{a:.1f}" cy="{b:.1f}" r="{2.5 if s.thin else 3.5}" fill="{s.color}">'
                f"<title>{escape(s.label)} at k={x:g}: {y:.3f}{ci}</title></circle>"
            )
        line = f'stroke="{s.color}" stroke-width="{stroke}"{dash}'
        out.append(_legend(width - right, top + 8 + i * 18, s.label, 16, line))
    return "".join(out) + "</svg>"


def box_plot(samples: Sequence[tuple[float, str, str]], *, title: str, unit: str = "s") -> str:
    """One horizontal box (quartiles, median, whiskers min..max) with every sample as a dot
    coloured by outcome. `samples` are (value, outcome, hover label)."""
    width, height, left, right, top = 460, 110, 16, 16, 24
    plot_w = width - left - right
    values = sorted(v for v, _, _ in samples)
    out = [_open(width, height, title)]
    if not values:
        out.append(
            f'<text x="{width / 2:.0f}" y="60" text-anchor="middle" fill="#777">'
            "no sample reached this phase</text></svg>"
        )
        return "".join(out)
    ticks = nice_ticks(values[-1], 5)
    scale = ticks[-1] or 1.0

    def px(v: float) -> float:
        return left + v / scale * plot_w

    mid, axis_y = top + 30, top + 62
    q1, q2, q3 = (percentile(values, q) or 0.0 for q in (0.25, 0.5, 0.75))
    out.append(
        f'<line x1="{px(values[0]):.1f}" x2="{px(values[-1]):.1f}" y1="{mid}" y2="{mid}" '
        f'stroke="#555"/>'
        f'<rect x="{px(q1):.1f}" y="{mid - 14}" width="{max(px(q3) - px(q1), 1):.1f}" '
        f'height="28" fill="#dfe8fb" stroke="#3b6fd8"><title>p25 {q1:.3f}{unit}, '
        f"median {q2:.3f}{unit}, p75 {q3:.3f}{unit}</title></rect>"
        f'<line x1="{px(q2):.1f}" x2="{px(q2):.1f}" y1="{mid - 14}" y2="{mid + 14}" '
        f'stroke="#1d3f8f" stroke-width="2"/>'
    )
    for i, (value, outcome, label) in enumerate(samples):
        jitter = ((i * 0.618034) % 1.0 - 0.5) * 22
        color = OUTCOME_COLORS.get(outcome, "#777")
        out.append(
            f'<circle cx="{px(value):.1f}" cy="{mid + jitter:.1f}" r="2.6" fill="{color}" '
            f'fill-opacity="0.75"><title>{escape(label)}: {value:.3f}{unit}</title></circle>'
        )
    out.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{axis_y}" y2="{axis_y}" stroke="#999"/>'
    )
    out.extend(
        f'<text x="{px(tick):.1f}" y="{axis_y + 14}" text-anchor="middle">'
        f"{short_number(tick)}{escape(unit)}</text>"
        for tick in ticks
    )
    return "".join(out) + "</svg>"


def bar_chart(
    items: Sequence[tuple[str, float]],
    *,
    title: str,
    fmt: Callable[[float], str],
    color: str = "#3b6fd8",
    x_max: float | None = None,
    intervals: Sequence[tuple[float, float] | None] = (),
) -> str:
    """Horizontal bars, one row per item, in the given order; labels are cut to fit.
    `intervals` (one per item, or None) draws each bar's 95% interval as a whisker."""
    row_h, top, label_w, value_w, width = 20, 26, 190, 80, 460
    height = top + row_h * max(len(items), 1) + 8
    plot_w = width - label_w - value_w
    scale = x_max if x_max else max((v for _, v in items), default=0.0) or 1.0
    out = [_open(width, height, title)]
    for i, (label, value) in enumerate(items):
        y = top + i * row_h
        shown = _cut(label, 30)
        bar = max(value / scale * plot_w, 0.0)
        out.append(
            f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(shown)}</text>'
            f'<rect x="{label_w}" y="{y + 3}" width="{bar:.1f}" height="{row_h - 6}" '
            f'fill="{color}"><title>{escape(label)}: {escape(fmt(value))}</title></rect>'
            f'<text x="{label_w + bar + 4:.1f}" y="{y + 14}">{escape(fmt(value))}</text>'
        )
        span = intervals[i] if i < len(intervals) else None
        if span is not None:
            lo, hi = (label_w + max(v / scale * plot_w, 0.0) for v in span)
            mid = y + row_h / 2
            out.append(
                f'<path class="whisker" d="M{lo:.1f},{mid - 4:.1f}v8M{lo:.1f},{mid:.1f}H{hi:.1f}'
                f'M{hi:.1f},{mid - 4:.1f}v8" stroke="#1d2330" stroke-width="1.2" fill="none">'
                f"<title>{escape(label)}: 95% CI [{fmt(span[0])}, {fmt(span[1])}]</title></path>"
            )
    return "".join(out) + "</svg>"


@dataclass(frozen=True)
class TrendPoint:
    """One run on a trend: its place in time order (x), its value, its 95% interval when the
    metric has one, and the hover text naming the run."""

    x: int
    value: float
    label: str
    low: float | None = None
    high: float | None = None


def trend_chart(
    series: Sequence[tuple[str, Sequence[TrendPoint]]],
    *,
    title: str,
    runs: int,
    fmt: Callable[[float], str],
    y_max: float | None = None,
) -> str:
    """A metric across `runs` runs in time order (x: 0 oldest .. runs-1 newest), one line per
    series (runs of one suite), each run a dot with its value - and its interval as a whisker -
    on hover. y runs from 0 to `y_max`, else to the largest value rounded up."""
    width, height, left, right, top, bottom = 900, 260, 52, 170, 26, 30
    plot_w, plot_h = width - left - right, height - top - bottom
    tallest = max((p.high or p.value for _, points in series for p in points), default=0.0)
    ticks = nice_ticks(y_max if y_max is not None else tallest, 4)
    scale = ticks[-1] or 1.0

    def px(x: float) -> float:
        return left + (plot_w / 2 if runs <= 1 else x / (runs - 1) * plot_w)

    def py(y: float) -> float:
        return top + plot_h - max(y, 0.0) / scale * plot_h

    out = [_open(width, height, title), _y_grid(ticks, py, left, plot_w)]
    axis_y = top + plot_h + 16
    out.append(
        f'<text x="{left}" y="{axis_y}">oldest</text>'
        f'<text x="{left + plot_w}" y="{axis_y}" text-anchor="end">newest</text>'
        f'<text x="{left + plot_w / 2:.0f}" y="{axis_y}" text-anchor="middle">'
        f"{runs} runs in time order</text>"
    )
    for i, (name, points) in enumerate(series):
        color = PALETTE[i % len(PALETTE)]
        if len(points) > 1:
            path = " ".join(f"{px(p.x):.1f},{py(p.value):.1f}" for p in points)
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="1.6"/>'
            )
        for p in points:
            ci = ""
            if p.low is not None and p.high is not None:
                ci = f" (95% CI [{fmt(p.low)}, {fmt(p.high)}])"
                out.append(
                    f'<line class="whisker" x1="{px(p.x):.1f}" x2="{px(p.x):.1f}" '
                    f'y1="{py(p.low):.1f}" y2="{py(p.high):.1f}" stroke="{color}" '
                    f'stroke-opacity="0.35" stroke-width="3"/>'
                )
            out.append(
                f'<circle cx="{px(p.x):.1f}" cy="{py(p.value):.1f}" r="3" fill="{color}">'
                f"<title>{escape(p.label)}: {escape(fmt(p.value))}{escape(ci)}</title></circle>"
            )
        out.append(
            _legend(width - right, top + 8 + i * 18, name, 20, f'stroke="{color}" stroke-width="2"')
        )
    return "".join(out) + "</svg>"
