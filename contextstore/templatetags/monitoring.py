"""The saved-views menu of a list page and the header's firing-alerts banner."""

from typing import Any

from django import template

from contextstore import viewspec
from contextstore.selectors.monitoring import firing_rules, saved_views_visible

register = template.Library()


@register.inclusion_tag("contextstore/_saved_views.html", takes_context=True)
def saved_views_menu(context: template.Context, page: str) -> dict[str, Any]:
    """The views of `page` the person sees, the one applied (?view=) and what of its filters the
    page no longer takes, and the current filters to save (app.js refreshes them on submit)."""
    request, workspace = context["request"], context.get("workspace")
    if workspace is None:
        return {"workspace": None}
    views = list(saved_views_visible(workspace=workspace, user=request.user, page=page))
    current = next((v for v in views if str(v.pk) == request.GET.get("view")), None)
    problems = viewspec.check(page, current.query)[1] if current is not None else []
    return {"workspace": workspace, "page": page, "views": views, "current": current, "problems": problems,
            "query": viewspec.normalise(request.GET.urlencode()), "user": request.user,
            "csrf_token": context.get("csrf_token")}


@register.inclusion_tag("contextstore/_alert_banner.html", takes_context=True)
def firing_alerts(context: template.Context) -> dict[str, Any]:
    workspace = context.get("workspace")
    if workspace is None or not hasattr(workspace, "pk"):
        return {"rules": []}
    fields = ("id", "name", "metric", "comparison", "threshold", "window_minutes", "last_value")
    rules = list(firing_rules(workspace=workspace).only(*fields)[:5])
    return {"rules": rules[:4], "more": len(rules) > 4}
