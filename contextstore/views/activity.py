"""A thread's activity log: who collapsed, cleared, forked, restored, edited what
(contextstore.selectors.activity), newest first, a page at a time."""

from django.contrib.auth.decorators import login_required
from django.http import HttpResponse
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from contextstore.selectors.activity import thread_activity
from contextstore.views.access import DashboardRequest, get_thread, query_int


@login_required
@vary_on_headers("HX-Request")
def thread_activity_view(request: DashboardRequest, pk: int) -> HttpResponse:
    thread = get_thread(request, pk)
    before = query_int(request.GET.get("before"))
    entries, more = thread_activity(thread=thread, before=before)
    context = {"thread": thread, "session": thread.session, "workspace": thread.workspace,
               "entries": entries, "more": more}
    template_name = "contextstore/thread_activity.html"
    if request.htmx and before is not None:
        template_name += "#entries"
    return render(request, template_name, context)
