"""The dashboard's Store pages: the long-term store's namespaces and items, an item's value,
its edit, its versions and their undo (services/store.py)."""

import json
from typing import Any
from urllib.parse import urlencode

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST

from contextstore.errors import DomainError, InvalidInput
from contextstore.jsonstrict import StrictJSONDecoder
from contextstore.models import StoreItem
from contextstore.redaction import use_workspace
from contextstore.selectors.store import (
    store_item_of,
    store_item_versions,
    store_items,
    store_namespaces,
)
from contextstore.services.store import store_item_edit, store_item_restore, store_item_undo
from contextstore.views.access import (
    DashboardRequest,
    actor_for,
    after_action,
    can_edit,
    current_workspace,
    error_response,
    query_int,
    visible_workspaces,
)
from contextstore.views.monitoring import default_view_redirect


def _labels(request: DashboardRequest) -> list[str]:
    return [label for label in request.GET.getlist("ns") if label]


def _ns_query(labels: list[str]) -> str:
    return urlencode([("ns", label) for label in labels])


@login_required
def store_view(request: DashboardRequest) -> HttpResponse:
    workspace = current_workspace(request)
    if default := default_view_redirect(request, workspace, "store"):
        return default
    labels = _labels(request)
    show_deleted = request.GET.get("deleted") == "1"
    namespaces = store_namespaces(workspace=workspace, prefix=labels) if workspace else []
    items = list(store_items(workspace=workspace, namespace=labels, deleted=show_deleted)) \
        if workspace and labels else []
    crumbs = [{"label": label, "query": _ns_query(labels[:i + 1])} for i, label in enumerate(labels)]
    return render(request, "contextstore/store.html", {
        "workspace": workspace, "labels": labels, "crumbs": crumbs, "show_deleted": show_deleted,
        "namespaces": [{**ns, "query": _ns_query(ns["namespace"])} for ns in namespaces],
        "items": items, "ns_query": _ns_query(labels)})


def _item(request: DashboardRequest, pk: int) -> StoreItem:
    item = store_item_of(workspaces=visible_workspaces(request.user), pk=pk)
    if item is None:
        raise Http404("No such item.")
    use_workspace(item.workspace)
    return item


@login_required
def store_item_view(request: DashboardRequest, pk: int) -> HttpResponse:
    item = _item(request, pk)
    versions = list(store_item_versions(item=item)[:200])
    for v in versions:  # shown as JSON (escaped by the template), cut to a line
        v.value_text = json.dumps(v.value, ensure_ascii=False) if v.value is not None else None  # type: ignore[attr-defined]
    return render(request, "contextstore/store_item.html", {
        "item": item, "workspace": item.workspace, "versions": versions,
        "can_edit": can_edit(request.user, item.workspace),
        "value_text": json.dumps(item.value, indent=2, ensure_ascii=False) if item.value is not None else "",
        "ns_query": _ns_query(item.namespace),
        "crumbs": [{"label": label, "query": _ns_query(item.namespace[:i + 1])}
                   for i, label in enumerate(item.namespace)]})


@login_required
@require_POST
def store_item_change(request: DashboardRequest, pk: int, op: str) -> HttpResponse:
    item = _item(request, pk)
    if not can_edit(request.user, item.workspace):
        raise PermissionDenied("Viewers cannot change anything.")
    try:
        if op == "edit":
            try:
                value: Any = json.loads(request.POST.get("value", ""), cls=StrictJSONDecoder)
            except ValueError as exc:
                raise InvalidInput(f"The value is not valid JSON: {exc}") from None
            if not isinstance(value, dict):
                raise InvalidInput("The value must be a JSON object.", details={"value": "must be an object"})
            store_item_edit(item=item, value=value, actor=actor_for(request))
        elif op == "undo":
            store_item_undo(item=item, actor=actor_for(request))
        else:
            version = query_int(request.POST.get("version"))
            if version is None:
                raise InvalidInput("Choose a version to restore.")
            store_item_restore(item=item, version=version, actor=actor_for(request))
    except DomainError as exc:
        return error_response(request, exc.message, exc.status)
    return after_action(request, reverse("contextstore:store-item", args=[item.pk]))

