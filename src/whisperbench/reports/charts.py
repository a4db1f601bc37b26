"""Self-contained SVG charts for the HTML report: a scatter with labelled points, grouped horizontal bars, and
intervals (a point with its error bar) — each with axis ticks, an axis label naming the figure and its unit, and
colours from CSS classes (``.c0`` … ``.c5``, ``.axis``, ``.ref``) so that the page's stylesheet makes them readable in
print and in dark mode. No network, no script.

>>> ticks(0.0, 7.3)
[0.0, 2.0, 4.0, 6.0, 8.0]
>>> ticks(0.8, 1.3)
[0.8, 0.9, 1.0, 1.1, 1.2, 1.3]
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

#: the CSS every chart needs (the report's stylesheet includes it): series colours with enough contrast on white
#: and on a dark background, text in the page's colour
CHART_STYLE = """
svg.chart{max-width:100%;height:auto;overflow:visible}svg.chart text{font-size:11px;fill:currentColor}
svg.chart .axis line,svg.chart .axis path{stroke:#888}svg.chart .grid{stroke:#8884}
svg.chart .c0{fill:#3a6ea5;stroke:#3a6ea5}svg.chart .c1{fill:#d9822b;stroke:#d9822b}
svg.chart .c2{fill:#3d9970;stroke:#3d9970}svg.chart .c3{fill:#b04a8a;stroke:#b04a8a}
svg.chart .c4{fill:#7a6fd0;stroke:#7a6fd0}svg.chart .c5{fill:#8c7a3c;stroke:#8c7a3c}
svg.chart .ref{fill:#999;stroke:#999}svg.chart .err{stroke-width:1.5;fill:none}
svg.chart text.label{font-weight:600}
"""
SERIES = 6  # colour classes c0 … c5


def _e(value: object) -> str:
    return html.escape(str(value))


def ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round tick values covering ``low`` … ``high`` (about ``count`` of them: steps of 1, 2 or 5 × 10^k)."""
    if not high > low:
        high = low + 1.0
    raw = (high - low) / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.floor(low / step + 1e-9) * step
    out = []
    value = first
    while value < high + step * 0.999:
        out.append(float(round(value, 10)))
        value += step
    return out


def _fmt(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.2g}"


@dataclass(frozen=True)
class Point:
    """One run in a scatter: its ``label`` beside the dot, ``x`` and ``y``, whether it is a ``reference`` (drawn
    apart), its ``series`` (colour: e.g. its dataset) and the ``title`` a pointer shows."""

    label: str
    x: float
    y: float
    reference: bool = False
    series: int = 0
    title: str = ""


class _Frame:
    """A plot area of ``width`` × ``height`` px with its margins, mapping data to pixels on both axes."""

    def __init__(self, width: int, height: int, x_range: tuple[float, float], y_range: tuple[float, float], left=56):
        self.width, self.height, self.left, self.right, self.top, self.bottom = width, height, left, 16, 14, 40
        self.x_ticks, self.y_ticks = ticks(*x_range), ticks(*y_range)
        self.x0, self.x1 = self.x_ticks[0], self.x_ticks[-1]
        self.y0, self.y1 = self.y_ticks[0], self.y_ticks[-1]

    def x(self, value: float) -> float:
        return self.left + (self.width - self.left - self.right) * (value - self.x0) / (self.x1 - self.x0)

    def y(self, value: float) -> float:
        return (
            self.height - self.bottom - (self.height - self.top - self.bottom) * (value - self.y0) / (self.y1 - self.y0)
        )

    def axes(self, x_label: str, y_label: str) -> str:
        bottom, left = self.height - self.bottom, self.left
        parts = ['<g class="axis">', f'<line x1="{left}" y1="{bottom}" x2="{self.width - self.right}" y2="{bottom}"/>']
        parts.append(f'<line x1="{left}" y1="{self.top}" x2="{left}" y2="{bottom}"/>')
        parts.append(_x_marks(self, self.top, bottom))
        for t in self.y_ticks:
            y = self.y(t)
            parts.append(
                f'<line class="grid" x1="{left}" y1="{y:.1f}" x2="{self.width - self.right}" y2="{y:.1f}"/>'
                f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end">{_fmt(t)}</text>'
            )
        parts.append(
            _x_label(self, self.height, x_label) + '<text class="y-label" transform="rotate(-90)" '
            f'x="{-(self.top + bottom) / 2:.0f}" y="12" text-anchor="middle">{_e(y_label)}</text></g>'
        )
        return "".join(parts)


def _spread(wanted: list[float], gap: float, low: float, high: float) -> list[float]:
    """Label positions near ``wanted`` (any order) at least ``gap`` apart, inside ``low`` … ``high``."""
    order = sorted(range(len(wanted)), key=lambda i: wanted[i])
    placed = [0.0] * len(wanted)
    last = low - gap
    for i in order:
        last = max(wanted[i], last + gap)
        placed[i] = last
    overflow = last - high
    if overflow > 0:  # pushed past the bottom: shift everything up, keeping the gaps
        for i in order[::-1]:
            placed[i] = min(placed[i], high)
            high = placed[i] - gap
    return placed


def scatter(
    points: Sequence[Point], x_label: str, y_label: str, css: str, caption: str, width: int = 760, height: int = 360
) -> str:
    """A scatter of ``points`` with each label written beside its dot (labels moved apart where they would
    collide, a thin leader line to the dot), the reference as a grey diamond; ``css``: the svg's extra class."""
    if not points:
        return ""
    xs, ys = [p.x for p in points], [p.y for p in points]
    frame = _Frame(width, height, (min(0.0, min(xs)), max(xs) * 1.08), (min(0.0, min(ys)), max(ys) * 1.1 or 1.0))
    dots, labels = [], []
    wanted = [frame.y(p.y) for p in points]
    placed = _spread(wanted, 13.0, frame.top + 4, frame.height - frame.bottom - 2)
    for p, y_text in zip(points, placed):
        x, y = frame.x(p.x), frame.y(p.y)
        tip = f"<title>{_e(p.title or p.label)}</title>"
        if p.reference:
            dots.append(f'<path class="ref" d="M{x:.1f},{y - 6:.1f}l6,6l-6,6l-6,-6z">{tip}</path>')
        else:
            dots.append(f'<circle class="c{p.series % SERIES}" cx="{x:.1f}" cy="{y:.1f}" r="4">{tip}</circle>')
        right = x < width * 0.7  # labels left of the dot near the right edge
        x_text = x + 9 if right else x - 9
        if abs(y_text - y) > 3:
            labels.append(f'<line class="grid" x1="{x:.1f}" y1="{y:.1f}" x2="{x_text:.1f}" y2="{y_text - 4:.1f}"/>')
        labels.append(
            f'<text x="{x_text:.1f}" y="{y_text:.1f}" text-anchor="{"start" if right else "end"}">'
            f"{_e(p.label)}{' (reference)' if p.reference else ''}</text>"
        )
    return _svg(css, caption, width, height, frame.axes(x_label, y_label) + "".join(dots) + "".join(labels))


@dataclass(frozen=True)
class Bar:
    """One bar of a grouped bar chart: its ``group`` (e.g. a language), ``label`` (e.g. an implementation),
    ``value``, ``series`` (colour) and whether it is the ``reference``."""

    group: str
    label: str
    value: float
    series: int = 0
    reference: bool = False


def grouped_bars(bars: Sequence[Bar], x_label: str, css: str, caption: str, width: int = 760) -> str:
    """Horizontal bars grouped under a heading each (groups in first-seen order), the value written at each bar's
    end, a value axis with ticks along the bottom labelled ``x_label``."""
    if not bars:
        return ""
    groups: dict[str, list[Bar]] = {}
    for bar in bars:
        groups.setdefault(bar.group, []).append(bar)
    row, head, label_w = 16, 18, 230
    height = 14 + sum(head + row * len(items) for items in groups.values()) + 40
    frame = _Frame(width, height, (0.0, max(max(b.value for b in bars), 1e-9) * 1.05), (0.0, 1.0), left=label_w)
    parts, y = [], 14.0
    for group, items in groups.items():
        parts.append(f'<text class="label" x="4" y="{y + 12:.0f}">{_e(group)}</text>')
        y += head
        for bar in items:
            end = frame.x(bar.value)
            cls = "ref" if bar.reference else f"c{bar.series % SERIES}"
            name = _e(bar.label) + (" (reference)" if bar.reference else "")
            parts.append(
                f'<text x="{label_w - 6}" y="{y + 11:.0f}" text-anchor="end">{name}</text>'
                f'<rect class="{cls}" x="{label_w}" y="{y + 2:.0f}" width="{max(end - label_w, 0.5):.1f}" '
                f'height="{row - 4}"><title>{_e(bar.group)}, {name}: {bar.value:.2f}</title></rect>'
                f'<text x="{end + 4:.1f}" y="{y + 11:.0f}">{bar.value:.1f}</text>'
            )
            y += row
    axis = _x_axis(frame, height, x_label)
    return _svg(css, caption, width, height, axis + "".join(parts))


def _x_axis(frame: _Frame, height: int, x_label: str) -> str:
    """The bottom value axis alone (bar and interval charts): ticks, grid lines and the axis label."""
    bottom = height - frame.bottom
    return (
        f'<g class="axis"><line x1="{frame.left}" y1="{bottom}" x2="{frame.width - frame.right}" y2="{bottom}"/>'
        + _x_marks(frame, 8, bottom)
        + _x_label(frame, height, x_label)
        + "</g>"
    )


def _x_marks(frame: _Frame, top: float, bottom: float) -> str:
    """The value axis's ticks: a grid line from ``top`` to ``bottom`` and the value under it, per tick."""
    return "".join(
        f'<line class="grid" x1="{frame.x(t):.1f}" y1="{top}" x2="{frame.x(t):.1f}" y2="{bottom}"/>'
        f'<text x="{frame.x(t):.1f}" y="{bottom + 14}" text-anchor="middle">{_fmt(t)}</text>'
        for t in frame.x_ticks
    )


def _x_label(frame: _Frame, height: float, label: str) -> str:
    """The value axis's label, centred under the plot."""
    return (
        f'<text class="x-label" x="{(frame.left + frame.width - frame.right) / 2:.0f}" y="{height - 6}" '
        f'text-anchor="middle">{_e(label)}</text>'
    )


@dataclass(frozen=True)
class Interval:
    """One row of an interval chart: its ``label``, the ``value`` (a dot) and its interval ``low`` … ``high`` (an
    error bar; None: none), ``series`` (colour)."""

    label: str
    value: float
    low: float | None = None
    high: float | None = None
    series: int = 0


def intervals(
    rows: Sequence[Interval], x_label: str, css: str, caption: str, marker: float | None = None, width: int = 760
) -> str:
    """One row per item: a dot at its value with its interval as an error bar; ``marker``: a dashed vertical line
    (e.g. ×1, the reference's speed)."""
    if not rows:
        return ""
    row, label_w = 22, 300
    height = 14 + row * len(rows) + 40
    values = [v for r in rows for v in (r.value, r.low, r.high) if v is not None] + (
        [marker] if marker is not None else []
    )
    frame = _Frame(width, height, (min(0.0, min(values)), max(values) * 1.05), (0.0, 1.0), left=label_w)
    parts = []
    for i, r in enumerate(rows):
        y = 14 + i * row + row / 2
        cls = f"c{r.series % SERIES}"
        if r.low is not None and r.high is not None:
            lo, hi = frame.x(r.low), frame.x(r.high)
            parts.append(
                f'<path class="err {cls}" d="M{lo:.1f},{y - 5:.1f}v10M{lo:.1f},{y:.1f}H{hi:.1f}M{hi:.1f},'
                f'{y - 5:.1f}v10"/>'
            )
        interval = f" [{r.low:.3g}, {r.high:.3g}]" if r.low is not None and r.high is not None else ""
        parts.append(
            f'<text x="{label_w - 6}" y="{y + 4:.1f}" text-anchor="end">{_e(r.label)}</text>'
            f'<circle class="{cls}" cx="{frame.x(r.value):.1f}" cy="{y:.1f}" r="4"><title>{_e(r.label)}: '
            f"{r.value:.3g}{interval}</title></circle>"
        )
    if marker is not None:
        x = frame.x(marker)
        parts.append(
            f'<line class="ref" stroke-width="2" stroke-dasharray="5 3" x1="{x:.1f}" y1="8" x2="{x:.1f}" '
            f'y2="{height - frame.bottom}"/><text x="{x + 4:.1f}" y="10">reference ×{_fmt(marker)}</text>'
        )
    return _svg(css, caption, width, height, _x_axis(frame, height, x_label) + "".join(parts))


def _svg(css: str, caption: str, width: int, height: int, body: str) -> str:
    return (
        f'<figure><figcaption>{_e(caption)}</figcaption><svg class="chart {_e(css)}" viewBox="0 0 {width} {height}" '
        f'width="{width}" height="{height}" role="img" aria-label="{_e(caption)}" xmlns="http://www.w3.org/2000/svg">'
        f"{body}</svg></figure>"
    )
