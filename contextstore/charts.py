"""Line charts drawn on the server as inline SVG (pure; no database): the geometry only, numbers
and the labels' text. The template (contextstore/_chart.html) writes the elements and escapes
every label; nothing here is markup, so a series name cannot become any.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

WIDTH, HEIGHT = 640, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 12, 40  # the plot's margins: tick labels and axis titles
X_TICKS = 7  # day labels at most on the x axis


@dataclass(frozen=True)
class Line:
    index: int  # the series' colour (CSS class s<index>)
    name: str
    path: str  # SVG path data: numbers, M and L only
    dots: list[tuple[float, float]]


@dataclass(frozen=True)
class Chart:
    width: int
    height: int
    left: int
    right: int  # x of the plot's right edge
    top: int
    bottom: int  # y of the x axis
    x_ticks: list[tuple[float, str, str]]  # x, label, text-anchor (the last one ends at its tick)
    y_ticks: list[tuple[float, str]]
    lines: list[Line]
    empty: bool  # no value at all in any series


def nice_step(span: float, ticks: int = 4) -> float:
    """A 1, 2 or 5 times a power of ten step that cuts `span` into about `ticks` parts."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= raw))


def line_chart(*, x_labels: Sequence[str], series: Sequence[tuple[str, Sequence[float | None]]],
               y_format: Callable[[float], str] = lambda v: f"{v:g}", whole: bool = False) -> Chart:
    """One line per series over the x labels (a None value breaks its line); y from 0 to a
    round maximum, with its ticks (`whole`: counts, no tick between two whole numbers)."""
    values = [v for _, vs in series for v in vs if v is not None]
    top_value = max(values, default=0.0)
    step = max(nice_step(top_value), 1.0) if whole else nice_step(top_value)
    y_max = step * max(math.ceil(top_value / step), 1)
    right, bottom = WIDTH - RIGHT, HEIGHT - BOTTOM
    n = len(x_labels)

    def x(i: int) -> float:
        return round(LEFT + (right - LEFT) * (i / (n - 1) if n > 1 else 0.5), 1)

    def y(v: float) -> float:
        return round(bottom - (bottom - TOP) * v / y_max, 1)

    lines = []
    for index, (name, vs) in enumerate(series):
        path, dots, pen = [], [], "M"
        for i, v in enumerate(vs):
            if v is None:
                pen = "M"
                continue
            path.append(f"{pen}{x(i)} {y(v)}")
            dots.append((x(i), y(v)))
            pen = "L"
        lines.append(Line(index=index, name=name, path=" ".join(path), dots=dots))
    every = max(math.ceil(n / X_TICKS), 1)
    x_ticks = [(x(i), x_labels[i], "end" if i == n - 1 and n > 1 else "middle") for i in range(0, n, every)]
    y_ticks = [(y(step * k), y_format(step * k)) for k in range(round(y_max / step) + 1)]
    return Chart(width=WIDTH, height=HEIGHT, left=LEFT, right=right, top=TOP, bottom=bottom,
                 x_ticks=x_ticks, y_ticks=y_ticks, lines=lines, empty=not values)
