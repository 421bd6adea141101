"""The workspace's trends page: cost, tokens, errors, prompt-cache hit rate and p50/p95 call
latency per day, per model or per agent, as SVG line charts each with its data table. Reads in
contextstore.selectors.trends; geometry in contextstore.charts."""

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render

from contextstore.charts import line_chart
from contextstore.selectors.trends import GROUPS, RANGES, Cell, Trends, workspace_trends
from contextstore.usage import cost_text
from contextstore.views.access import DashboardRequest, current_workspace, error_response
from contextstore.views.monitoring import default_view_redirect


def _ms(v: float) -> str:
    return f"{v / 1000:g} s" if v >= 1000 else f"{v:g} ms"


def _shown(value: float | None, fmt: Callable[[float], str]) -> str:
    return "—" if value is None else fmt(value)


# (id, title, what a cell gives, tick format, cell format)
Format = Callable[[float], str]
METRICS: list[tuple[str, str, Callable[[Cell], float | None], Format, Format]] = [
    ("cost", "Cost (USD)", lambda c: float(c.cost), cost_text, cost_text),
    ("tokens", "Input + output tokens", lambda c: c.tokens, lambda v: f"{v:,.0f}", lambda v: f"{v:,.0f}"),
    ("errors", "Errors", lambda c: c.errors, lambda v: f"{v:g}", lambda v: f"{v:,.0f}"),
    ("hit-rate", "Prompt-cache hit rate (%)", lambda c: c.hit_rate, lambda v: f"{v:g}%", lambda v: f"{v:g}%"),
    ("p50", "p50 call latency", lambda c: c.p50, _ms, lambda v: f"{v:,.0f} ms"),
    ("p95", "p95 call latency", lambda c: c.p95, _ms, lambda v: f"{v:,.0f} ms"),
]


def trend_charts(trends: Trends) -> list[dict[str, Any]]:
    labels = [d.strftime("%b %-d") for d in trends.days]
    charts = []
    for key, title, value, tick, cell in METRICS:
        series = [(name, [value(trends.cell(day, name)) for day in trends.days]) for name in trends.keys]
        rows = [(trends.days[i].isoformat(), [_shown(vs[i], cell) for _, vs in series])
                for i in range(len(trends.days))]
        chart = line_chart(x_labels=labels, series=series, y_format=tick, whole=key in ("tokens", "errors"))
        charts.append({"id": key, "title": title, "chart": chart, "rows": rows})
    return charts


@login_required
def workspace_trends_view(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if workspace is None:
        raise Http404("No workspace.")
    if default := default_view_redirect(request, workspace, "trends"):
        return default
    days, group = request.GET.get("days", "30"), request.GET.get("group", "model")
    if days not in {str(d) for d in RANGES} or group not in GROUPS:
        return error_response(request, "Choose a range of 7, 30 or 90 days and a grouping by model or agent.",
                              400)
    trends = workspace_trends(workspace=workspace, days=int(days), group=group)
    context = {"workspace": workspace, "trends": trends,
               "charts": trend_charts(trends), "days": int(days), "group": group, "ranges": RANGES,
               "groups": GROUPS,
               "totals": [(k, trends.totals.get(k) or Cell()) for k in trends.keys]}
    return render(request, "contextstore/trends.html", context)
