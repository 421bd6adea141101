"""Shared reads. Each returns a queryset (or plain data) and reads only what it returns."""

from collections.abc import Iterable

from django.db import DatabaseError, connection, transaction
from django.db.models import BigIntegerField, ExpressionWrapper, F, Q, QuerySet, Subquery

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

# Text search on a big thread asks the trigram index (event_content_trgm) first. Left to itself,
# the planner walks the thread's (thread, seq) index whenever its statistics predate the thread's
# rows (autovacuum off, a bulk load not yet analyzed): 100k rows filtered one by one for a rare
# word. The thread's own event_count says how big it is, so: on a thread of at least
# TEXT_INDEX_FIRST events, fetch the ids of all its matches through the index (the `+ 0` keeps
# the (thread, seq) index out of that query), under a short timeout; a rare word answers in
# milliseconds and the page is read by those ids. More than TEXT_INDEX_CAP matches (a common
# word) or the timeout: the ordinary query, whose walk ends after one page of common matches.
# Both read committed rows only (the GIN index is always current), so no committed event is
# ever missed.
TEXT_INDEX_FIRST = 10_000
TEXT_INDEX_CAP = 1_000
TEXT_INDEX_TIMEOUT_MS = 50


def _text_matches(thread: Thread, text: str) -> list[int] | None:
    """Ids of all the thread's events whose content contains `text`, or None: ask the ordinary
    query (SQLite, a small thread, inside another transaction, a common word)."""
    if (connection.vendor != "postgresql" or thread.event_count < TEXT_INDEX_FIRST
            or connection.in_atomic_block):  # SET LOCAL would outlive this query there
        return None
    fenced = ExpressionWrapper(F("thread_id") + 0, output_field=BigIntegerField())
    ids = (Event.objects.annotate(fence=fenced).filter(fence=thread.pk, content__icontains=text)
           .values_list("pk", flat=True)[:TEXT_INDEX_CAP + 1])
    try:
        with transaction.atomic():
            with connection.cursor() as cursor:
                cursor.execute(f"SET LOCAL statement_timeout = {TEXT_INDEX_TIMEOUT_MS}")
            found = list(ids)
    except DatabaseError:  # the timeout: a word too common for the index to pay
        return None
    return found if len(found) <= TEXT_INDEX_CAP else None


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
    found = _text_matches(thread, text) if text else None
    if found is not None:  # all the thread's matches, by id: no plan can walk the thread now
        qs = Event.objects.filter(pk__in=found).select_related("run")
    else:
        qs = Event.objects.filter(thread=thread).select_related("run")
        if text:
            qs = qs.filter(content__icontains=text)
    if status and status != "all":
        qs = qs.filter(status=status)
    if types:
        qs = qs.filter(type__in=list(types))
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


