"""Reads behind the thread page's side panel and its range export; each is capped, none grows
with history (views/threads.py lays them out)."""

from django.db.models import QuerySet

from contextstore.models import (
    Clear,
    Collapse,
    ContextBlock,
    Event,
    Memory,
    ProviderState,
    Run,
    StateRevision,
    Thread,
)


def recent_runs(*, thread: Thread, limit: int = 20) -> list[Run]:
    """The latest runs, oldest first."""
    return list(Run.objects.filter(thread=thread).order_by("-started_at", "-id")[:limit])[::-1]


def thread_blocks(*, thread: Thread) -> list[ContextBlock]:
    return list(thread.blocks.order_by("placement", "order", "name"))


def recent_revisions(*, thread: Thread, limit: int = 20) -> list[StateRevision]:
    return list(StateRevision.objects.filter(thread=thread).order_by("-revision")
                .only("revision", "reason", "actor", "created_at")[:limit])


def provider_states(*, thread: Thread, limit: int = 20) -> list[ProviderState]:
    return list(ProviderState.objects.filter(thread=thread).order_by("provider")[:limit])


def recent_memories(*, thread: Thread, limit: int = 10) -> list[Memory]:
    """The long-term memories of the thread's user in its workspace, newest first."""
    return list(Memory.objects.filter(workspace_id=thread.workspace_id, user_id=thread.session.user_id)
                .order_by("-updated_at", "-id")[:limit])


def recent_clears(*, thread: Thread, limit: int = 10) -> list[Clear]:
    return list(Clear.objects.filter(thread=thread).order_by("-pk")[:limit])


def collapse_of(*, thread: Thread, collapse_id: int) -> Collapse | None:
    return Collapse.objects.filter(thread=thread, pk=collapse_id).first()


def range_events(*, thread: Thread, start: int, end: int, limit: int = 10_000) -> QuerySet[Event]:
    """Every event (any status) at positions start..end, both ends included, in seq order."""
    return (thread.events.select_related("run").filter(position__gte=start, position__lte=end)
            .order_by("seq")[:limit])
