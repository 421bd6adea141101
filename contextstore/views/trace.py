"""One node of a run's trace opened: a span's attributes and events, an event's data and the
events of its call, a run's fields (selectors/trace). The run page's tree fetches it when a
node is opened (htmx); without script its link opens it as a page."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from contextstore.selectors.trace import trace_node
from contextstore.views.access import DashboardRequest, get_thread


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def trace_node_view(request: DashboardRequest, pk: int, key: str) -> HttpResponse:
    thread = get_thread(request, pk)
    node = trace_node(thread=thread, key=key)
    if node is None:
        raise Http404("No such span, call or run in this thread.")
    template_name = "contextstore/trace_node.html"
    if request.htmx:
        template_name += "#node"
    return render(request, template_name, {
        "thread": thread, "session": thread.session, "workspace": thread.workspace,
        "node": node, "key": key})
