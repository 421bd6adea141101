"""Saved views (the menu on the list pages; save, open, rename, share, default, delete) and the
alerts page (rules, their state and history; made, switched, checked and deleted by editors).
Writes in services/saved_views.py and services/alerts.py; the saved query's door is
contextstore.viewspec, a rule's is the API's input serializer (one input definition)."""

from urllib.parse import urlencode, urlsplit

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST
from rest_framework.exceptions import NotFound

from contextstore import viewspec
from contextstore.alertspec import FIELDS, AlertRuleInSerializer, AlertRulePatchSerializer, rule_scope
from contextstore.errors import DomainError
from contextstore.models import AlertRule, SavedView, Workspace
from contextstore.selectors.monitoring import alert_events, saved_view_default, saved_views_visible
from contextstore.services import alerts, saved_views
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    can_edit,
    current_workspace,
    error_response,
)

SECRET_KEY = "contextstore.alert-secret"  # the session's one-time note of a new rule's secret
HISTORY = 100  # events the alerts page lists


def open_url(view: SavedView) -> str:
    """The page with the view's filters that it still takes (viewspec.check), naming the view."""
    query, _ = viewspec.check(view.page, view.query)
    return reverse(viewspec.PAGES[view.page].url_name) + "?" + "&".join(
        part for part in (query, urlencode({"view": view.pk})) if part)


def default_view_redirect(request: DashboardRequest, workspace: Workspace | None,
                          page: str) -> HttpResponse | None:
    """A page asked without a query string opens the person's default view of it, if any
    (`?view=0` is the page without it). Never for htmx (the list's refresh asks without one)."""
    if workspace is None or request.GET or request.htmx:
        return None
    view = saved_view_default(workspace=workspace, user=request.user, page=page)
    return redirect(open_url(view)) if view is not None else None


def _view(request: DashboardRequest, pk: int) -> SavedView:
    workspace = current_workspace(request)
    view = (saved_views_visible(workspace=workspace, user=request.user).filter(pk=pk).first()
            if workspace is not None else None)
    if view is None:
        raise Http404("No such saved view.")
    return view


@login_required
@require_POST
def saved_view_save(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if workspace is None:
        raise Http404("No workspace.")
    page, name = request.POST.get("page", ""), request.POST.get("name", "").strip()
    if page not in viewspec.PAGES:
        return error_response(request, "Saved views are kept for the sessions, trends and store pages.", 400)
    if not name or len(name) > 100:
        return error_response(request, "Give the view a name of at most 100 characters.", 400)
    query = viewspec.normalise(request.POST.get("query", "").lstrip("?"))
    if len(query) > viewspec.MAX_QUERY:
        return error_response(request, "These filters are too long to save.", 400)
    try:
        view = saved_views.saved_view_create(
            workspace=workspace, owner=request.user, page=page, name=name, query=query,
            shared=request.POST.get("shared") == "on", is_default=request.POST.get("default") == "on",
            actor=actor_for(request))
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    return redirect(open_url(view))


@login_required
def saved_view_open(request: DashboardRequest, pk: int) -> HttpResponse:
    return redirect(open_url(_view(request, pk)))


@login_required
@require_POST
def saved_view_update(request: DashboardRequest, pk: int) -> HttpResponse:
    """Rename, share or unshare, make or stop being the default: the fields given."""
    view = _view(request, pk)
    name = request.POST.get("name")
    if name is not None and (not name.strip() or len(name.strip()) > 100):
        return error_response(request, "Give the view a name of at most 100 characters.", 400)
    flags = {key: request.POST[key] == "on" for key in ("shared", "is_default") if key in request.POST}
    try:
        saved_views.saved_view_update(view=view, user=request.user, actor=actor_for(request),
                                      name=name.strip() if name is not None else None, **flags)
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    return redirect(open_url(view))


@login_required
@require_POST
def saved_view_delete(request: DashboardRequest, pk: int) -> HttpResponse:
    view = _view(request, pk)
    try:
        saved_views.saved_view_delete(view=view, user=request.user, actor=actor_for(request))
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    return redirect(reverse(viewspec.PAGES[view.page].url_name) + "?view=0")


# ------------------------------------------------------------------ alerts


def _workspace(request: DashboardRequest, *, edit: bool = False) -> Workspace:
    workspace = current_workspace(request)
    if workspace is None:
        raise Http404("No workspace.")
    if edit and not can_edit(request.user, workspace):
        raise PermissionDenied("Viewers cannot change alert rules.")
    return workspace


def _rule(request: DashboardRequest, pk: int) -> AlertRule:
    workspace = _workspace(request, edit=True)
    rule = AlertRule.objects.filter(workspace=workspace, pk=pk).select_related("workspace").first()
    if rule is None:
        raise Http404("No such alert rule.")
    return rule


@login_required
def alerts_page(request: DashboardRequest) -> HttpResponse:
    workspace = _workspace(request)
    rules = list(AlertRule.objects.filter(workspace=workspace).select_related("saved_view"))
    for rule in rules:
        rule.webhook_host = urlsplit(rule.webhook_url).hostname if rule.webhook_url else ""  # type: ignore[attr-defined]
    created = request.session.pop(SECRET_KEY, None)
    context = {
        "workspace": workspace, "rules": rules, "events": alert_events(workspace=workspace)[:HISTORY],
        "can_edit": can_edit(request.user, workspace), "created": created,
        "metrics": AlertRule.Metric.choices, "comparisons": AlertRule.Comparison.choices,
        "windows": AlertRule.WINDOWS,
        "views": saved_views_visible(workspace=workspace, user=request.user, page=SavedView.Page.SESSIONS),
    }
    return render(request, "contextstore/alerts.html", context)


def _problems(errors: dict) -> str:
    return " ".join(f"{name.replace('_', ' ').capitalize()}: {' '.join(map(str, msgs))}"
                    for name, msgs in errors.items())


@login_required
@require_POST
def alert_rule_create(request: DashboardRequest) -> HttpResponse:
    workspace = _workspace(request, edit=True)
    raw = {k: request.POST.get(k, "") for k in FIELDS if request.POST.get(k)}
    if "saved_view" in raw and not raw["saved_view"].isdigit():
        raw.pop("saved_view")
    form = AlertRuleInSerializer(data=raw)
    if not form.is_valid():
        return error_response(request, _problems(form.errors), 400)
    try:
        data = rule_scope(workspace, request.user, dict(form.validated_data))
    except NotFound as exc:  # a saved view this person does not see
        return error_response(request, str(exc.detail), 404)
    rule, secret = alerts.alert_rule_create(workspace=workspace, actor=actor_for(request),
                                            created_by=request.user, **data)
    request.session[SECRET_KEY] = {"rule": rule.pk, "name": rule.name, "secret": secret,
                                   "webhook": bool(rule.webhook_url)}
    return redirect(reverse("contextstore:alerts") + f"#rule-{rule.pk}")


@login_required
@require_POST
def alert_rule_update(request: DashboardRequest, pk: int) -> HttpResponse:
    """Changes the fields given (the rule's edit form: name, condition, window)."""
    rule = _rule(request, pk)
    form = AlertRulePatchSerializer(data={k: request.POST.get(k, "") for k in FIELDS if request.POST.get(k)})
    if not form.is_valid():
        return error_response(request, _problems(form.errors), 400)
    try:
        data = rule_scope(rule.workspace, request.user, dict(form.validated_data))
    except NotFound as exc:
        return error_response(request, str(exc.detail), 404)
    alerts.alert_rule_update(rule=rule, actor=actor_for(request), **data)
    return redirect(reverse("contextstore:alerts") + f"#rule-{rule.pk}")


@login_required
@require_POST
def alert_rule_toggle(request: DashboardRequest, pk: int) -> HttpResponse:
    rule = _rule(request, pk)
    alerts.alert_rule_update(rule=rule, actor=actor_for(request), enabled=not rule.enabled)
    return redirect(reverse("contextstore:alerts") + f"#rule-{rule.pk}")


@login_required
@require_POST
def alert_rule_check(request: DashboardRequest, pk: int) -> HttpResponse:
    """Checks the rule now (one bounded read, as beat's); a delivery is queued for the worker."""
    rule = _rule(request, pk)
    alerts.alert_rule_evaluate(rule=rule)
    return redirect(reverse("contextstore:alerts") + f"#rule-{rule.pk}")


@login_required
@require_POST
def alert_rule_delete(request: DashboardRequest, pk: int) -> HttpResponse:
    alerts.alert_rule_delete(rule=_rule(request, pk), actor=actor_for(request))
    return redirect("contextstore:alerts")
