"""Who may see and change what in the dashboard.

A person sees the workspaces they are a member of (superusers see all). Another workspace's
object is a 404, never a 403; a viewer who tries to change something gets a 403.
"""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import User
from django.core.exceptions import BadRequest, PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST
from django_htmx.middleware import HtmxDetails

from contextstore.errors import DomainError
from contextstore.models import Membership, ReadAudit, Session, Thread, Workspace
from contextstore.ranges import positive_int
from contextstore.redaction import use_workspace
from contextstore.services.access_log import record_read
from contextstore.services.common import Actor

SESSION_KEY = "contextstore.workspace"


class DashboardRequest(HttpRequest):
    """A request as the dashboard's views get it (a type only): django-htmx's middleware has set
    `htmx`, and every one of them requires a signed-in user."""

    htmx: HtmxDetails
    user: User


def query_int(raw: str | None) -> int | None:
    """A number from a query string or a form (ranges.positive_int; 0 allowed): None when absent
    or empty; anything else a number is not ("²", "-1", "1e3", past 2**62) is a 400."""
    raw = (raw or "").strip()
    if not raw:
        return None
    value = positive_int(raw, zero=True)
    if value is None:
        raise BadRequest(f"{raw[:20]!r} is not a whole number.")
    return value


def visible_workspaces(user) -> QuerySet[Workspace]:
    if user.is_superuser:
        return Workspace.objects.order_by("slug")
    return Workspace.objects.filter(memberships__user=user).order_by("slug")


def dashboard_context(request: HttpRequest) -> dict[str, Any]:
    """What every dashboard page's context holds (a context processor, settings.TEMPLATES): the
    workspaces the signed-in person sees, for the top bar's switcher. A lazy queryset: a page
    that never shows the switcher (the admin, a fragment) runs no query for it."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {}
    return {"workspaces": visible_workspaces(user)}


def can_edit(user, workspace: Workspace) -> bool:
    if user.is_superuser:
        return True
    membership = Membership.objects.filter(workspace=workspace, user=user).only("role").first()
    return membership is not None and membership.can_edit


def current_workspace(request: DashboardRequest) -> Workspace | None:
    """The workspace chosen with ?ws=slug (remembered in the session), else the first one."""
    workspaces = visible_workspaces(request.user)
    slug = request.GET.get("ws") or request.session.get(SESSION_KEY)
    workspace = workspaces.filter(slug=slug).first() if slug else None
    if workspace is None:
        if request.GET.get("ws"):
            raise Http404("No such workspace.")
        workspace = workspaces.first()
    if workspace is not None and request.session.get(SESSION_KEY) != workspace.slug:
        request.session[SESSION_KEY] = workspace.slug
    if workspace is not None:
        use_workspace(workspace)  # what this request stores is redacted by its rules
    return workspace


def _check_member(request: DashboardRequest, workspace_id: int) -> None:
    user = request.user
    if user.is_superuser:
        return
    if not Membership.objects.filter(workspace_id=workspace_id, user=user).exists():
        raise Http404("Not found.")


def get_session(request: DashboardRequest, pk: int) -> Session:
    session = Session.objects.select_related("workspace").filter(pk=pk).first()
    if session is None:
        raise Http404("No such session.")
    _check_member(request, session.workspace_id)
    use_workspace(session.workspace)
    return session


def get_thread(request: DashboardRequest, pk: int) -> Thread:
    thread = (
        Thread.objects.select_related("session", "workspace", "parent").filter(pk=pk).first()
    )
    if thread is None:
        raise Http404("No such thread.")
    _check_member(request, thread.workspace_id)
    use_workspace(thread.workspace)
    return thread


def actor_for(request: DashboardRequest) -> Actor:
    return Actor.for_user(request.user, request.META.get("REMOTE_ADDR"))


def note_read(request: DashboardRequest, action: ReadAudit.Action, thread: Thread) -> None:
    """Audit a person's read of a thread (at most once an hour: services/access_log)."""
    record_read(actor=actor_for(request), action=action, target=thread,
                workspace_id=thread.workspace_id, session_id=thread.session_id)


def error_response(request: DashboardRequest, message: str, status: int) -> HttpResponse:
    """A readable error: in place of the flash area for htmx, a small page otherwise."""
    response = render(request, "contextstore/error.html#flash",
                      {"message": message, "status": status}, status=status) if request.htmx \
        else render(request, "contextstore/error.html", {"message": message, "status": status},
                    status=status)
    if request.htmx:
        response["HX-Retarget"] = "#flash"
        response["HX-Reswap"] = "innerHTML"
    return response


def after_action(request: DashboardRequest, url: str) -> HttpResponse:
    """Post/redirect/get: htmx follows with a full navigation, plain forms with a redirect."""
    if request.htmx:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = url
        return response
    return redirect(url)


def thread_action(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """POST-only, logged-in editors of the thread's workspace; domain errors become messages.

    The view receives the thread (already scoped and checked) instead of its id.
    """

    @login_required
    @require_POST
    @wraps(view)
    def wrapper(request: DashboardRequest, pk: int, *args: Any, **kwargs: Any) -> HttpResponse:
        thread = get_thread(request, pk)
        if not can_edit(request.user, thread.workspace):
            raise PermissionDenied("Viewers cannot change anything.")
        try:
            return view(request, thread, *args, **kwargs)
        except DomainError as exc:
            return error_response(request, exc.message, exc.status)

    return wrapper
