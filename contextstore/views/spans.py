"""A run's OpenTelemetry span tree with its timings (a waterfall), for ingested traces."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render

from contextstore.selectors.spans import run_spans
from contextstore.views.access import DashboardRequest, get_thread, visible_workspaces


@login_required
def run_waterfall(request: DashboardRequest, pk: int, run_id: str) -> HttpResponse:
    thread = get_thread(request, pk)
    if not thread.runs.filter(run_id=run_id).exists():
        raise Http404("No such run on this thread.")
    rows = run_spans(thread=thread, run_id=run_id)
    return render(request, "contextstore/run_spans.html", {
        "thread": thread, "session": thread.session, "workspace": thread.workspace,
        "workspaces": visible_workspaces(request.user), "run_id": run_id, "rows": rows})
