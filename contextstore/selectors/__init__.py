"""Shared reads. Each returns a queryset (or plain data) and reads only what it returns."""

from collections.abc import Iterable

from django.db.models import Q, QuerySet, Subquery

from contextstore.models import (
    ContextBlock,
    ContextBlockVersion,
    Event,
    Memory,
    Run,
    Session,
    StateRevision,
    Thread,
    Workspace,
)


def thread_events(
    *, thread: Thread, types: Iterable[str] | None = None, text: str | None = None,
    regex: str | None = None, run_id: str | None = None, call_id: str | None = None,
    step: str | None = None, after_seq: int | None = None, before_seq: int | None = None,
    status: str | None = "active", visible: bool | None = None, limit: int | None = None,
    current_call: bool = False,
) -> QuerySet[Event]:
    """Events of a thread matching all the given filters, oldest first.

    `limit` keeps the most recent matches (Nooa's events.query); `status` is one status,
    "all", or None for all; `current_call` narrows to the call id of the newest event that has one.
    """
    qs = Event.objects.filter(thread=thread).select_related("run")
    if status and status != "all":
        qs = qs.filter(status=status)
    if types:
        qs = qs.filter(type__in=list(types))
    if text:
        qs = qs.filter(content__icontains=text)
    if regex:
        qs = qs.filter(content__iregex=regex)
    if run_id:
        qs = qs.filter(run__run_id=run_id)
    if current_call:
        newest = (
            Event.objects.filter(thread=thread).exclude(call_id="").order_by("-seq")
            .values_list("call_id", flat=True).first()
        )
        qs = qs.filter(call_id=newest) if newest else qs.none()
    if call_id:
        qs = qs.filter(call_id=call_id)
    if step:
        qs = qs.filter(step=step)
    if after_seq is not None:
        qs = qs.filter(seq__gt=after_seq)
    if before_seq is not None:
        qs = qs.filter(seq__lt=before_seq)
    if visible is not None:
        qs = qs.filter(visible=visible)
    if limit is not None:
        newest_pks = qs.order_by("-seq").values("pk")[:limit]
        qs = Event.objects.filter(pk__in=Subquery(newest_pks)).select_related("run")
    return qs.order_by("seq")


def working_context_tail(
    *, thread: Thread, max_tokens: int | None = None, count: int | None = None,
    strip_thinking: bool = False,
) -> list[Event]:
    """The newest model-visible active events, oldest first: the last `count`, or the longest
    run from the newest whose tokens fit `max_tokens`.

    Walks the partial (thread, position) index backward reading only (position, tokens), then
    loads just the events that fit, so the cost follows the budget, not the history.
    """
    qs = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, visible=True)
    if count is not None:
        return list(qs.order_by("-position")[: max(count, 0)])[::-1]
    budget = max(max_tokens or 0, 0)
    average = max(thread.active_tokens // max(thread.active_event_count, 1), 1)
    chunk = min(max(budget // average + 16, 32), 4096)
    used, newest, oldest, before = 0, None, None, None
    while True:
        page_qs = qs if before is None else qs.filter(position__lt=before)
        rows = list(page_qs.order_by("-position").values_list(
            "position", "token_count", "thinking_tokens")[:chunk])
        for position, tokens, thinking in rows:
            cost = tokens - (thinking if strip_thinking else 0)
            if used + cost > budget:
                rows = []  # stop: the window is contiguous from the newest event
                break
            used += cost
            newest = position if newest is None else newest
            oldest = position
        if len(rows) < chunk:
            break
        before = rows[-1][0]
        chunk = min(chunk * 4, 4096)
    if oldest is None:
        return []
    # Bounded above too, so events appended meanwhile cannot push the window over budget.
    return list(qs.filter(position__gte=oldest, position__lte=newest).order_by("position"))


def thread_blocks(*, thread: Thread) -> QuerySet[ContextBlock]:
    return ContextBlock.objects.filter(thread=thread).order_by("placement", "order", "name")


def block_versions(*, thread: Thread, name: str | None = None) -> QuerySet[ContextBlockVersion]:
    """Kept block versions, newest first; all names when name is None."""
    qs = ContextBlockVersion.objects.filter(thread=thread)
    if name is not None:
        qs = qs.filter(name=name)
    return qs.order_by("-id")


def workspace_sessions(
    *, workspace: Workspace, q: str | None = None, user_id: str | None = None,
    agent: str | None = None, archived: bool | None = None,
) -> QuerySet[Session]:
    qs = Session.objects.filter(workspace=workspace)
    if q:
        qs = qs.filter(
            Q(key__icontains=q) | Q(user_id__icontains=q) | Q(agent__icontains=q) | Q(title__icontains=q)
        )
    if user_id is not None:
        qs = qs.filter(user_id=user_id)
    if agent:
        qs = qs.filter(agent=agent)
    if archived is not None:
        qs = qs.filter(archived=archived)
    return qs.order_by("-last_activity_at", "-id")


def session_threads(*, session: Session) -> QuerySet[Thread]:
    return Thread.objects.filter(session=session).select_related("parent").order_by("created_at", "id")


def thread_runs(*, thread: Thread) -> QuerySet[Run]:
    return Run.objects.filter(thread=thread).order_by("started_at", "id")


def thread_revisions(*, thread: Thread) -> QuerySet[StateRevision]:
    """A thread's revisions without their stored JSON (rebuild documents with
    selectors.document.revision_documents)."""
    return StateRevision.objects.filter(thread=thread).defer("document", "patch").order_by("revision")


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


