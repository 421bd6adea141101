"""Workspace-wide reads besides sessions: long-term memories, and readable names for the
actor labels API tokens leave."""

from django.db.models import Q, QuerySet

from contextstore.models import ApiToken, Memory, Workspace


def memory_recall(
    *, workspace: Workspace, user_id: str | None = None, q: str | None = None, limit: int = 20
) -> QuerySet[Memory]:
    qs = Memory.objects.filter(workspace=workspace)
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if q:
        words = [w for w in q.split() if w]
        cond = Q()
        for word in words:
            cond |= Q(content__icontains=word) | Q(key__icontains=word)
        qs = qs.filter(cond)
    return qs.order_by("-updated_at", "-id")[:limit]


def actor_names(*, workspace: Workspace) -> dict[str, str]:
    """Readable names for the actor labels API tokens leave ("token:<prefix>"), so pages show
    who acted ("ingest-bot (API token)"), not a key prefix."""
    tokens = ApiToken.objects.filter(workspace=workspace).only("name", "prefix").order_by("-pk")[:500]
    return {f"token:{t.prefix}": f"{t.name or 'unnamed'} (API token)" for t in tokens}
