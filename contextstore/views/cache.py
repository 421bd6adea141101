"""Prompt-cache analysis pages: a session's (a panel on its page, loaded after it) and the
workspace's. Reads live in contextstore.selectors.cache."""

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpResponse, HttpResponseBadRequest
from django.shortcuts import render
from django.views.decorators.vary import vary_on_headers

from contextstore.selectors.cache import session_cache, session_cache_breaks, workspace_cache
from contextstore.selectors.trends import cache_totals
from contextstore.views.access import DashboardRequest, current_workspace, get_session


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def session_cache_view(request: DashboardRequest, pk: int) -> HttpResponse:
    """The session's cache summary: its own page, or (htmx) the panel on the session page."""
    session = get_session(request, pk)
    context = {"session": session, "workspace": session.workspace,
               "summary": session_cache(session=session),
               "totals": cache_totals(workspace=session.workspace, session=session)}
    template_name = "contextstore/cache.html"
    if request.htmx:
        template_name += "#cache-panel"
    return render(request, template_name, context)


@login_required
def workspace_cache_view(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if workspace is None:
        raise Http404("No workspace.")
    context = {"workspace": workspace,
               "summary": workspace_cache(workspace=workspace), "totals": cache_totals(workspace=workspace)}
    return render(request, "contextstore/cache.html", context)


@login_required
def session_cache_breaks_view(request: DashboardRequest, pk: int) -> HttpResponse:
    """Every cache break of the session the worker has compared, a page at a time."""
    session = get_session(request, pk)
    raw = request.GET.get("page", "1")
    if not raw.isdigit() or int(raw) < 1:
        return HttpResponseBadRequest("page must be a positive whole number.")
    context = {"session": session, "workspace": session.workspace,
               "listing": session_cache_breaks(session=session, page=int(raw))}
    return render(request, "contextstore/cache_breaks.html", context)
