"""Score configurations and annotation queues read: a name's config (the score doors check
against it), a workspace's queues with their progress, a queue's items."""

from django.db.models import Count, Q, QuerySet

from contextstore.errors import Conflict, NotFound
from contextstore.models import AnnotationItem, AnnotationQueue, ScoreConfig


def score_config_named(*, workspace_id: int, name: object) -> ScoreConfig | None:
    """The configuration of a score name in the workspace (archived ones too: a score given
    under an archived name still means what it meant), or None."""
    if not isinstance(name, str) or not name.strip():
        return None
    return ScoreConfig.objects.filter(workspace_id=workspace_id, name=name.strip()).first()


def workspace_queues(*, workspace_id: int) -> QuerySet[AnnotationQueue]:
    """The workspace's queues with `total`, `completed` and `pending` counted."""
    return (AnnotationQueue.objects.filter(workspace_id=workspace_id)
            .annotate(total=Count("items"),
                      completed=Count("items", filter=Q(items__status=AnnotationItem.Status.COMPLETED)))
            .order_by("name"))


def queue_progress(*, queue: AnnotationQueue) -> dict[str, int]:
    counts = dict(AnnotationItem.objects.filter(queue=queue).values_list("status")
                  .annotate(n=Count("id")).values_list("status", "n"))
    completed = counts.get(AnnotationItem.Status.COMPLETED, 0)
    pending = counts.get(AnnotationItem.Status.PENDING, 0)
    total = completed + pending
    return {"total": total, "completed": completed, "pending": pending,
            "percent": round(100 * completed / total) if total else 0}


def queue_items(*, queue: AnnotationQueue, status: str | None = None) -> QuerySet[AnnotationItem]:
    """The queue's items in the order they are handed out (completed ones by when)."""
    items = AnnotationItem.objects.filter(queue=queue).select_related(
        "session", "thread", "completed_by", "leased_by")
    if status:
        items = items.filter(status=status)
    return items.order_by("rank", "id")


def queue_configs_for(*, workspace_id: int, ids: list[int]) -> list[ScoreConfig]:
    """The score configs a new queue asks for, by id: the workspace's (else NotFound) and
    unarchived (else Conflict)."""
    found = {c.pk: c for c in ScoreConfig.objects.filter(workspace_id=workspace_id, pk__in=ids)}
    missing = [i for i in ids if i not in found]
    if missing:
        raise NotFound(f"No score configuration {missing[0]} in this workspace.")
    archived = [found[i].name for i in ids if found[i].archived]
    if archived:
        raise Conflict(f"The score configuration {archived[0]!r} is archived.",
                       details={"score_config_ids": "archived"})
    return list(dict.fromkeys(found[i] for i in ids))


def queue_choices(*, workspace_id: int) -> QuerySet[AnnotationQueue]:
    """The queues an "Add to queue" form offers (session page, call card, session list): lazy,
    so a page that shows no such form runs no query for it."""
    return AnnotationQueue.objects.filter(workspace_id=workspace_id).only("pk", "name").order_by("name")[:200]
