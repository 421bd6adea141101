"""Reads of the long-term store for the dashboard's Store pages (services/store.py writes)."""

from django.db.models import Count, Q, QuerySet
from django.utils import timezone

from contextstore.models import StoreItem, StoreItemVersion, Workspace
from contextstore.models.store import namespace_path, path_labels

PAGE = 100


def store_namespaces(*, workspace: Workspace, prefix: list[str], limit: int = PAGE) -> list[dict]:
    """The namespaces under `prefix` that hold items (live or deleted), with live counts."""
    items = StoreItem.objects.filter(workspace=workspace)
    if prefix:
        low = namespace_path(prefix)
        items = items.filter(path__gte=low, path__lt=low[:-1] + "\x20")
    now = timezone.now()
    live = Q(deleted_at__isnull=True) & (Q(expires_at__isnull=True) | Q(expires_at__gt=now))
    rows = items.order_by("path").values("path").annotate(
        live=Count("pk", filter=live), total=Count("pk"))[:limit]
    return [{"namespace": path_labels(r["path"]), "path": r["path"], "live": r["live"],
             "total": r["total"]} for r in rows]


def store_items(*, workspace: Workspace, namespace: list[str], deleted: bool = False,
                limit: int = PAGE) -> QuerySet[StoreItem]:
    """The items of exactly one namespace, newest first (deleted ones too when asked)."""
    items = StoreItem.objects.filter(workspace=workspace, path=namespace_path(namespace))
    if not deleted:
        items = items.filter(deleted_at__isnull=True)
    return items.order_by("-updated_at", "-pk")[:limit]


def store_item_of(*, workspaces: QuerySet[Workspace], pk: int) -> StoreItem | None:
    return StoreItem.objects.select_related("workspace").filter(pk=pk, workspace__in=workspaces).first()


def store_item_versions(*, item: StoreItem) -> QuerySet[StoreItemVersion]:
    return StoreItemVersion.objects.filter(item=item).order_by("-version")
