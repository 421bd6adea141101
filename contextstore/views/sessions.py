"""Sessions list (search, filters, keyset paging, auto-refresh) and the session page."""

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextstore import selectors
from contextstore.forms import SessionFilterForm, format_cursor, parse_cursor
from contextstore.models import Run, Session
from contextstore.services.sessions import session_archive
from contextstore.views.access import (
    actor_for,
    can_edit,
    current_workspace,
    get_session,
    visible_workspaces,
)

PAGE_SIZE = 50


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def session_list(request: HttpRequest) -> HttpResponse:
    workspace = current_workspace(request)
    form = SessionFilterForm(request.GET or None)
    sessions: list[Session] = []
    next_cursor = None
    agents: list[str] = []
    if workspace is not None:
        data = form.cleaned_data if form.is_valid() else {}
        archived = {"": False, "yes": True, "all": None}.get(data.get("archived") or "", False)
        qs = selectors.workspace_sessions(
            workspace=workspace, q=data.get("q") or None, agent=data.get("agent") or None,
            user_id=data.get("user") or None, archived=archived,
        )
        if data.get("errors"):
            qs = qs.filter(error_count__gt=0)
        since = form.active_since() if data else None
        if since is not None:
            qs = qs.filter(last_activity_at__gte=since)
        cursor = parse_cursor(request.GET.get("before"))
        if cursor is not None:
            when, pk = cursor
            qs = qs.filter(Q(last_activity_at__lt=when) | Q(last_activity_at=when, id__lt=pk))
        # One row more than shown tells whether there is a next page, without a COUNT.
        sessions = list(qs[: PAGE_SIZE + 1])
        if len(sessions) > PAGE_SIZE:
            sessions = sessions[:PAGE_SIZE]
            last = sessions[-1]
            next_cursor = format_cursor(last.last_activity_at, last.pk)
        agents = list(
            Session.objects.filter(workspace=workspace).exclude(agent="")
            .order_by("agent").values_list("agent", flat=True).distinct()[:100]
        )
    params = request.GET.copy()
    params.pop("before", None)
    params.pop("ws", None)
    context = {
        "workspace": workspace,
        "workspaces": visible_workspaces(request.user),
        "form": form,
        "sessions": sessions,
        "agents": agents,
        "next_cursor": next_cursor,
        "query": params.urlencode(),
        "paged": cursor is not None if workspace is not None else False,
    }
    template_name = "contextstore/session_list.html"
    if request.htmx:
        # "Load more" asks for the next rows only; search, filters and refresh for the table body.
        template_name += "#rows" if request.GET.get("before") else "#results"
    return render(request, template_name, context)


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def session_detail(request: HttpRequest, pk: int) -> HttpResponse:
    session = get_session(request, pk)
    threads = list(selectors.session_threads(session=session)[:200])
    runs = list(
        Run.objects.filter(thread__session=session).select_related("thread")
        .order_by("-started_at", "-id")[:50]
    )
    context = {
        "session": session,
        "workspace": session.workspace,
        "workspaces": visible_workspaces(request.user),
        "threads": _lineage(threads),
        "runs": runs,
        "can_edit": can_edit(request.user, session.workspace),
    }
    template_name = "contextstore/session_detail.html"
    if request.htmx:
        template_name += "#runs"
    return render(request, template_name, context)


@login_required
@require_POST
def session_archive_toggle(request: HttpRequest, pk: int) -> HttpResponse:
    """Archive an open session or reopen an archived one (hides it from the default list)."""
    session = get_session(request, pk)
    if not can_edit(request.user, session.workspace):
        raise PermissionDenied("Viewers cannot change anything.")
    session_archive(session=session, actor=actor_for(request), archived=not session.archived)
    return redirect(reverse("contextstore:session", args=[session.pk]))


def _lineage(threads: list) -> list[tuple[object, int]]:
    """Threads in fork order: each fork right under its parent, with its depth for indenting."""
    children: dict[int | None, list] = {}
    ids = {t.pk for t in threads}
    for t in threads:
        parent = t.parent_id if t.parent_id in ids else None
        children.setdefault(parent, []).append(t)
    ordered: list[tuple[object, int]] = []

    def walk(parent: int | None, depth: int) -> None:
        for t in children.get(parent, []):
            ordered.append((t, depth))
            walk(t.pk, depth + 1)

    walk(None, 0)
    return ordered
