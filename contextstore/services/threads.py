"""Whole-thread operations and their inverses: AgentScope's clearContext ↔ un-clear, peteos'
fork ↔ delete fork.

Ranges are working-context positions, both ends inclusive (see docs/api.md, "Ranges and undo").
"""

from datetime import datetime
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.models import Clear, Collapse, ContextBlock, Event, Job, Thread
from contextstore.ranges import check_range
from contextstore.selectors.exchanges import range_respecting
from contextstore.services import history
from contextstore.services.common import Actor, audit, lock_thread, no_operation_pending
from contextstore.services.document import document_write


def thread_clear_context(*, thread: Thread, actor: Actor) -> Clear:
    """AgentScope clearContext: the conversation and its summary leave the working context.

    State (tasks, permissions, plan, tool sub-state), memory and blocks stay; nothing is deleted:
    the events get status `cleared` and point to the returned Clear, which also keeps the
    summary it emptied, so `thread_unclear` can bring both back. The summary is emptied through
    the state service, so the clear is a revision of the agent's document too. Done inline, in
    one batch; a long one is a job of `clear_step`'s batches (services/operations.py).
    """
    with transaction.atomic():
        locked = lock_thread(thread)
        no_operation_pending(locked)
        progress: dict[str, Any] = {}
        clear_step(thread=locked, actor=actor, progress=progress, upto_seq=locked.last_seq)
    return Clear.objects.get(pk=progress["clear"])


def clear_step(*, thread: Thread, actor: Actor, progress: dict[str, Any], upto_seq: int,
               limit: int | None = None, job: Job | None = None) -> bool:
    """One batch of a clear of the active events up to `upto_seq`: at most `limit` events (None:
    all); True when the clear is done. The thread is locked; `progress` carries what the batches
    share (the first writes the Clear and empties the summary, so an undo finds them whatever
    happens next)."""
    if "clear" not in progress:
        clear = Clear.objects.create(thread=thread, actor=actor.label[:200], summary=thread.summary,
                                     event_count=0, tokens=0)
        # A clear of nothing (no summary, no active event) writes no revision; one that clears
        # something does, so a framework's save from before it is stale (sync's base_revision).
        if thread.summary or thread.active_event_count:
            document_write(thread=thread, actor=actor, reason="clear_context", values={"summary": ""})
        progress["clear"] = clear.pk
    clear = Clear.objects.get(pk=progress["clear"])
    if clear.undone_at is not None:
        raise Conflict("The clear was undone while it was being done; nothing more to clear.")
    members = Event.objects.filter(thread=thread, status=Event.Status.ACTIVE, seq__lte=upto_seq)
    count, left = history.events_move(thread=thread, events=members, now=timezone.now(),
                                      entering=False, limit=limit,
                                      status=Event.Status.CLEARED, cleared_by=clear)
    # The Clear counts what left the working context (visible events), as the confirmation
    # (the thread's active_event_count), its undo and the Clears list say; `done` counts rows.
    Clear.objects.filter(pk=clear.pk).update(event_count=F("event_count") + left.count,
                                             tokens=F("tokens") + left.tokens)
    progress["done"] = progress.get("done", 0) + count
    if limit is not None and count == limit:
        return False
    clear.refresh_from_db()
    progress["total"] = progress["done"]
    audit(actor=actor, action="thread.clear_context", target=thread, workspace=thread.workspace,
          clear=clear.pk, cleared=clear.event_count, summary_chars=len(clear.summary),
          **({"job": str(job.pk)} if job else {}))
    return True


def thread_unclear(*, clear: Clear, actor: Actor) -> Clear:
    """Undo one clear-context: its events come back into the working context at their own
    positions, and its summary comes back as a new revision.

    - Events appended after the clear stay where they are; the returning ones, being older,
      stand before them (the working context is ordered by position).
    - A cleared Summary comes back active, so its collapse can be undone again; the originals
      of a collapse were never cleared (a clear only takes active events) and stay collapsed.
    - The summary is written back only when the thread's summary is still empty (as the clear
      left it). A summary written since is newer and stays; the cleared one remains readable
      in the Clear record and in the revision history.
    - Clears are independent: each brings back only its own events, in any order.

    Done inline, in one batch; a long one is a job of `unclear_step`'s batches.
    """
    with transaction.atomic():
        thread = lock_thread(clear.thread)
        no_operation_pending(thread)
        progress: dict[str, Any] = {}
        unclear_step(thread=thread, actor=actor, progress=progress, clear_id=clear.pk)
    clear = Clear.objects.get(pk=clear.pk)
    clear.restored = progress["restored"]
    clear.summary_restored = progress["summary_restored"]
    return clear


def unclear_step(*, thread: Thread, actor: Actor, progress: dict[str, Any], clear_id: int,
                 limit: int | None = None, job: Job | None = None) -> bool:
    """One batch of an un-clear: at most `limit` events (None: all); True when it is done. The
    first marks the Clear undone and writes its summary back (only when the thread's summary is
    still empty)."""
    clear = Clear.objects.filter(pk=clear_id, thread=thread).first()
    if clear is None:
        raise InvalidInput("The clear is gone.")
    if "summary_restored" not in progress:
        if clear.undone_at is not None:
            raise Conflict("This clear was already undone.", code="already_undone")
        Clear.objects.filter(pk=clear.pk).update(undone_at=timezone.now())
        progress["summary_restored"] = bool(clear.summary) and thread.summary == ""
        if progress["summary_restored"]:
            document_write(thread=thread, actor=actor, reason=f"unclear {clear.pk}",
                           values={"summary": clear.summary})
        progress["clear"] = clear.pk
    members = Event.objects.filter(cleared_by=clear, status=Event.Status.CLEARED)
    count, entered = history.events_move(thread=thread, events=members, now=timezone.now(),
                                         entering=True, limit=limit,
                                         status=Event.Status.ACTIVE, cleared_by=None)
    progress["done"] = progress.get("done", 0) + count
    progress["restored"] = progress.get("restored", 0) + entered.count  # as the clear counted
    if limit is not None and count == limit:
        return False
    progress["total"] = progress["done"]
    audit(actor=actor, action="thread.unclear", target=thread, workspace=thread.workspace,
          clear=clear.pk, restored=progress["restored"], summary_restored=progress["summary_restored"],
          **({"job": str(job.pk)} if job else {}))
    return True


def thread_fork(
    *, thread: Thread, name: str, actor: Actor, start_position: int | None = None,
    end_position: int | None = None, system_prompt: str | None = None, widen: bool = False,
) -> Thread:
    """peteos fork: a new thread holding exactly the working context at positions
    [start_position, end_position] (inclusive; None = open end).

    Summaries in the range are copied with their collapses, and the collapsed originals are
    copied too (status collapsed, nested collapses all the way down), so each collapse can still
    be undone in the child. Cleared, collapsed-elsewhere and reverted events are not part of the
    working context and are not copied. The child's events are renumbered from 1: originals in
    position order, then the summaries in the order they were made, each standing at the
    position of the first event it replaces. Originals retention deleted are not there to copy:
    a collapse keeps its `expired_count` (undo is refused in the child too), and a summary whose
    originals all went is copied in position order as an ordinary row is.

    A range that would split a tool call from its results is refused (`splits_tool_exchange`),
    or with `widen` grown to the whole exchange (selectors/exchanges.py).

    The fork keeps the parent's state, memory, summary, blocks, tool definitions and (unless
    given a new one) system prompt, and records its lineage.
    """
    check_range(start_position, end_position, open_ends=True)

    with transaction.atomic():
        parent = lock_thread(thread)
        start_position, end_position = range_respecting(
            thread_id=parent.pk, start_position=start_position, end_position=end_position, widen=widen)
        working = Event.objects.filter(thread=parent, status=Event.Status.ACTIVE)
        if start_position is not None:
            working = working.filter(position__gte=start_position)
        if end_position is not None:
            working = working.filter(position__lte=end_position)
        top = list(working.order_by("position"))
        collapses, originals = _collapsed_under(top)
        try:
            with transaction.atomic():
                child = Thread.objects.create(
                    workspace_id=parent.workspace_id, session_id=parent.session_id, name=name,
                    document={
                        **parent.document,
                        "system_prompt": parent.system_prompt if system_prompt is None
                        else system_prompt,
                        "extra": {**parent.extra, "forked_from": {"thread": parent.pk,
                                                                   "last_seq": parent.last_seq}},
                    },
                    parent=parent, fork_start_position=start_position, fork_end_position=end_position,
                )
        except IntegrityError as exc:
            raise Conflict(f"This session already has a thread named {name!r}.",
                           code="name_taken", details={"name": name}) from exc
        history.session_thread_added(session_id=child.session_id)
        copies = _copy_events(child, top, collapses, originals, timezone.now())
        ContextBlock.objects.bulk_create([
            ContextBlock(thread=child, name=b.name, value=b.value, expr=b.expr,
                         placement=b.placement, order=b.order, version=1, token_count=b.token_count)
            for b in parent.blocks.all()
        ])
        document_write(thread=child, actor=actor, reason=f"fork of thread {parent.pk}")
        audit(actor=actor, action="thread.fork", target=child, workspace=parent.workspace,
              parent=parent.pk, start_position=start_position, end_position=end_position,
              events=len(copies), collapses=len(collapses))
    return child


def _collapsed_under(top: list[Event]) -> tuple[list[Collapse], dict[int, list[Event]]]:
    """The active collapses whose summaries are in `top` or nested under them, innermost last,
    and each collapse's originals."""
    collapses: list[Collapse] = []
    originals: dict[int, list[Event]] = {}
    summaries = [e.pk for e in top if e.type == "Summary"]
    while summaries:
        level = list(Collapse.objects.filter(summary_event_id__in=summaries, undone_at__isnull=True)
                     .select_related("summary_event"))
        members = list(Event.objects.filter(collapse__in=level, status=Event.Status.COLLAPSED)
                       .order_by("position"))
        for c in level:
            originals[c.pk] = [m for m in members if m.collapse_id == c.pk]
        collapses.extend(level)
        summaries = [m.pk for m in members if m.type == "Summary"]
    return collapses, originals


def _copy_events(child: Thread, top: list[Event], collapses: list[Collapse],
                 originals: dict[int, list[Event]], now: datetime) -> list[Event]:
    # A collapse whose originals retention deleted all has no first original to stand on: its
    # summary is copied where it stands, as an ordinary row is (its collapse still comes along,
    # expired, so undo is refused in the child as in the parent).
    summary_of = {c.summary_event_id: c for c in collapses if originals[c.pk]}
    plain = [e for e in top if e.pk not in summary_of]
    plain += [m for ms in originals.values() for m in ms if m.pk not in summary_of]
    plain.sort(key=lambda e: (e.position, e.seq))
    sources = list(plain)
    places: list[history.Place] = [(None, e.status) for e in plain]  # each at its new seq
    position_of = {e.pk: seq for seq, e in enumerate(plain, 1)}
    # Summaries after every original, inner ones (made earlier) first, as in the parent; each
    # stands where the first event it replaces stands.
    for collapse in sorted(summary_of.values(), key=lambda c: c.summary_event.seq):
        summary = collapse.summary_event
        position_of[summary.pk] = position_of[originals[collapse.pk][0].pk]
        sources.append(summary)
        places.append((position_of[summary.pk], summary.status))
    added = history.events_add(thread=child, specs=[history.spec_of(e) for e in sources], now=now,
                               places=places)
    copies = {source.pk: copy for source, copy in zip(sources, added, strict=True)}
    for collapse in collapses:
        members = originals[collapse.pk]
        summary = copies[collapse.summary_event_id]
        data = summary.data if isinstance(summary.data, dict) else {}
        positions = [copies[m.pk].position for m in members] or [summary.position]
        summary_data = {**data, "start_position": min(positions), "end_position": max(positions)}
        Event.objects.filter(pk=summary.pk).update(data=summary_data)
        copy = Collapse.objects.create(
            thread=child, start_position=min(positions), end_position=max(positions),
            summary_event=summary, source=collapse.source, actor=collapse.actor,
            event_count=collapse.event_count, tokens_before=collapse.tokens_before,
            tokens_after=collapse.tokens_after, expired_count=collapse.expired_count,
            provenance={**collapse.provenance, "forked_from_collapse": collapse.pk},
        )
        Event.objects.filter(pk__in=[copies[m.pk].pk for m in members]).update(collapse=copy)
    return list(copies.values())


def thread_delete_fork(*, thread: Thread, actor: Actor) -> Thread | None:
    """Delete a forked thread with everything it holds; the inverse of fork.

    Only forks can be deleted this way (a session's own threads go with the session). The
    parent is untouched and keeps every original the fork copied; what the fork added after
    forking (its own events, state writes, runs) is deleted with it, permanently. The audit
    log keeps who deleted which fork, of which parent, and how many events it held.
    Returns the parent (None if the parent itself was deleted).
    """
    with transaction.atomic():
        thread = lock_thread(thread, history_only=True)
        if thread.parent_id is None:
            raise Conflict("Only a forked thread can be deleted; this thread is not a fork.",
                           code="not_a_fork")
        # Deleting takes FOR UPDATE, which also holds off rows about to reference the thread
        # (a render record's foreign-key check), which lock_thread's FOR NO KEY UPDATE lets in.
        list(Thread.objects.select_for_update(of=("self",)).filter(pk=thread.pk).values_list("pk"))
        now = timezone.now()
        history.thread_removed(thread=thread, now=now)
        audit(actor=actor, action="thread.delete_fork", target=thread, workspace=thread.workspace,
              name=thread.name, parent=thread.parent_id, events=thread.event_count,
              start_position=thread.fork_start_position, end_position=thread.fork_end_position)
        parent = Thread.objects.filter(pk=thread.parent_id).first()
        # Collapses protect their summary events; drop them first so the cascade can run.
        Collapse.objects.filter(thread=thread).delete()
        thread.delete()
    return parent
