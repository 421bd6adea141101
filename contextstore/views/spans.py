"""A run's waterfall: its LLM calls and tool calls from the recorded events (any ingest path),
and for ingested traces its OpenTelemetry span tree with their timings."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render

from contextstore.ranges import positive_int
from contextstore.selectors.trace import run_tree
from contextstore.selectors.waterfall import run_waterfall as events_waterfall
from contextstore.views.access import DashboardRequest, get_thread


@login_required
def run_waterfall(request: DashboardRequest, pk: int, run_id: str) -> HttpResponse:
    thread = get_thread(request, pk)
    run = thread.runs.filter(run_id=run_id).first()
    if run is None:
        raise Http404("No such run on this thread.")
    offset = positive_int(request.GET.get("from"), zero=True) or 0  # the tree's page
    return render(request, "contextstore/run_spans.html", {
        "thread": thread, "session": thread.session, "workspace": thread.workspace,
        "run": run, "run_id": run_id,
        "tree": run_tree(thread=thread, run=run, offset=offset),
        "waterfall": events_waterfall(run=run)})
