"""Sessions list (search, filters, keyset paging, auto-refresh) and the session page."""

from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_POST
from django.views.decorators.vary import vary_on_headers

from contextstore.forms import SessionFilterForm, format_cursor, parse_cursor
from contextstore.models import ReadAudit, Session, Workspace
from contextstore.ranges import positive_int
from contextstore.selectors.annotation import queue_choices
from contextstore.selectors.sessions import (
    SESSION_SORTS,
    session_runs,
    session_share_links,
    session_stats,
    session_threads,
    session_viewers,
    sessions_with_text,
    workspace_models,
    workspace_sessions,
)
from contextstore.services import retention
from contextstore.services.access_log import record_read
from contextstore.services.sessions import session_archive
from contextstore.services.sharing import EXPIRY_LABELS
from contextstore.templatetags.contextstore import TOKEN_TITLES
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    can_edit,
    current_workspace,
    get_session,
)
from contextstore.views.comments import comments_context, scores_context
from contextstore.views.monitoring import default_view_redirect
from contextstore.views.sharing import NEW_LINK

PAGE_SIZE = 50


def filtered_sessions(workspace: Workspace, form: SessionFilterForm) -> tuple[QuerySet[Session], Any]:
    """The sessions the list's filters (a valid or unbound form) keep, and the text search's
    hits: the list's rows, and what "Add these to a queue" adds."""
    data = form.cleaned_data if form.is_bound else {}
    filters = form.filters()
    q = data.get("q") or None
    # The search also looks through the events of the sessions the other filters keep.
    hits = sessions_with_text(sessions=workspace_sessions(workspace=workspace, **filters),
                              text=q) if q else None
    qs = workspace_sessions(workspace=workspace, q=q, text_hits=hits.sessions if hits else (),
                            **filters)
    return qs, hits


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def session_list(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if default := default_view_redirect(request, workspace, "sessions"):
        return default
    form = SessionFilterForm(request.GET or None)
    sort = request.GET.get("sort") or "-activity"
    if sort.lstrip("-") not in SESSION_SORTS:
        sort = "-activity"
    cursor = None
    hits = None
    data: dict[str, Any] = {}
    sessions: list[Session] = []
    next_cursor = None
    agents: list[str] = []
    models: list[str] = []
    valid = form.is_valid() if form.is_bound else True
    if workspace is not None:
        agents = list(
            Session.objects.filter(workspace=workspace).exclude(agent="")
            .order_by("agent").values_list("agent", flat=True).distinct()[:100]
        )
        models = workspace_models(workspace=workspace)
    if workspace is not None and valid:
        data = form.cleaned_data if form.is_bound else {}
        qs, hits = filtered_sessions(workspace, form)
        field, descending = _sort(sort)
        qs = qs.order_by(f"-{field}" if descending else field, "-id" if descending else "id")
        cursor = _parse_sort_cursor(field, request.GET.get("before"))
        if cursor is not None:
            value, pk = cursor
            beyond, tie = ("lt", "lt") if descending else ("gt", "gt")
            qs = qs.filter(Q(**{f"{field}__{beyond}": value}) | Q(**{field: value, f"id__{tie}": pk}))
        # One row more than shown tells whether there is a next page, without a COUNT.
        sessions = list(qs[: PAGE_SIZE + 1])
        if len(sessions) > PAGE_SIZE:
            sessions = sessions[:PAGE_SIZE]
            last = sessions[-1]
            next_cursor = _format_sort_cursor(getattr(last, field), last.pk)
        for session in sessions:
            session.text_hit = hits.sessions.get(session.pk) if hits else None  # type: ignore[attr-defined]
    params = request.GET.copy()
    params.pop("before", None)
    params.pop("ws", None)
    context = {
        "columns": _columns(sort), "sort": sort,
        "workspace": workspace,
        "form": form,
        "sessions": sessions,
        "agents": agents,
        "models": models,
        "problems": [] if valid else form.problems(),
        "next_cursor": next_cursor,
        "query": params,  # the filters the page's links keep ({% querystring query ... %})
        "paged": cursor is not None,
        "search": data.get("q") or "",
        "text_incomplete": hits is not None and not hits.complete,
    }
    template_name = "contextstore/session_list.html"
    if request.htmx:
        # "Load more" asks for the next rows only; search, filters and refresh for the table body.
        template_name += "#rows" if request.GET.get("before") and valid else "#results"
    # Filters that do not parse: the list says which and why, shows no rows, and answers 400
    # (the htmx config swaps 4xx; HX-Retarget tells app.js this answer was written for it).
    response = render(request, template_name, context, status=200 if valid else 400)
    if not valid:
        response["HX-Retarget"] = "#results"
        response["HX-Reswap"] = "outerHTML"
    return response


@login_required
@vary_on_headers("HX-Request")  # a page and its fragment share a URL
def session_detail(request: DashboardRequest, pk: int) -> HttpResponse:
    session = get_session(request, pk)
    before = parse_cursor(request.GET.get("runs_before"))
    runs, more = session_runs(session=session, before=before)
    context = {
        "session": session,
        "workspace": session.workspace,
        "runs": runs,
        "next_runs": format_cursor(*more) if more else None,
    }
    template_name = "contextstore/session_detail.html"
    if request.htmx and before is not None:
        return render(request, template_name + "#run-rows", context)  # "more runs"
    record_read(actor=actor_for(request), action=ReadAudit.Action.SESSION_VIEW, target=session,
                workspace_id=session.workspace_id, session_id=session.pk)
    threads = list(session_threads(session=session)[:200])
    context.update({
        "threads": _lineage(threads),
        "stats": session_stats(session=session),
        "can_edit": can_edit(request.user, session.workspace),
        "retention": (policy := retention.policy_of(session)),
        "expires_at": retention.session_expires_at(session, policy),
        "viewers": session_viewers(session=session),
        **comments_context(request, session),
        **scores_context(session),
        "share_links": session_share_links(session=session),
        "new_link": request.session.pop(NEW_LINK, None),
        "expiries": EXPIRY_LABELS, "now": timezone.now(),
        "queues": queue_choices(workspace_id=session.workspace_id),
    })
    if request.htmx:
        template_name += "#runs"
    return render(request, template_name, context)


@login_required
@require_POST
def session_archive_toggle(request: DashboardRequest, pk: int) -> HttpResponse:
    """Archive an open session or reopen an archived one (hides it from the default list)."""
    session = get_session(request, pk)
    if not can_edit(request.user, session.workspace):
        raise PermissionDenied("Viewers cannot change anything.")
    session_archive(session=session, actor=actor_for(request), archived=not session.archived)
    return redirect(reverse("contextstore:session", args=[session.pk]))


def _sort(sort: str) -> tuple[str, bool]:
    """"-events" -> ("event_count", descending); unknown names fall back to activity."""
    field = SESSION_SORTS.get(sort.lstrip("-"), "last_activity_at")
    return field, sort.startswith("-")


def _parse_sort_cursor(field: str, raw: str | None) -> tuple[Any, int] | None:
    """`<value>~<id>` for the sorted column: a time for activity, a number otherwise."""
    if field == "last_activity_at":
        return parse_cursor(raw)
    if not raw or "~" not in raw:
        return None
    value, _, pk = raw.rpartition("~")
    try:
        number = Decimal(value) if field == "cost_total" else int(value)
    except (InvalidOperation, ValueError):
        return None
    found = positive_int(pk)
    return (number, found) if found is not None else None


def _format_sort_cursor(value: Any, pk: int) -> str:
    return format_cursor(value, pk) if isinstance(value, datetime) else f"{value}~{pk}"


COLUMN_LABELS = (("threads", "Threads"), ("events", "Events"), ("tokens", "Stored tokens"), ("cost", "Cost"),
                 ("errors", "Errors"), ("activity", "Last activity"))


def _columns(sort: str) -> list[dict[str, str]]:
    """Header links: a click sorts by the column, largest first; a second click reverses."""
    out = []
    for key, label in COLUMN_LABELS:
        current = "descending" if sort == f"-{key}" else "ascending" if sort == key else ""
        following = key if current == "descending" else f"-{key}"
        out.append({"key": key, "label": label, "aria": current,
                    "title": TOKEN_TITLES["stored"] if key == "tokens" else "",
                    "following": following})
    return out


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
