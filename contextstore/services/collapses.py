"""Nooa's collapse: a range of the working context replaced by one Summary event, undoable."""

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import Count, F, Max, Min
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput
from contextstore.eventspec import event_spec
from contextstore.models import Collapse, Event, Job, Thread
from contextstore.redaction import redact_events, use_workspace
from contextstore.selectors.exchanges import range_respecting
from contextstore.services import history
from contextstore.services.common import Actor, audit, lock_thread, no_operation_pending


def collapse_create(
    *, thread: Thread, start_position: int, end_position: int, summary_text: str, actor: Actor,
    source: str = Collapse.Source.AGENT, provenance: dict[str, Any] | None = None,
    job: Job | None = None, widen: bool = False,
) -> Collapse:
    """Replace the active events at positions [start_position, end_position] (inclusive) with
    one Summary event.

    The originals keep their rows, get status `collapsed` and point to the collapse; the summary
    stands at the first position it replaces. A range may contain earlier summaries (nesting).
    A range that would split a tool call from its results is refused (`splits_tool_exchange`),
    or with `widen` grown to the whole exchange (selectors/exchanges.py).
    With a job, a second call for the same job returns the first collapse (retries are safe).
    The range and the text are collapsespec.check_collapse's (the doors': the API, the
    dashboard's form, the summarizer worker).
    """

    with transaction.atomic():
        thread = lock_thread(thread, history_only=True)
        no_operation_pending(thread)
        if job is not None:
            existing = Collapse.objects.filter(job=job).first()
            if existing is not None:
                return existing
        start_position, end_position = whole_exchanges(thread, start_position, end_position, widen)
        progress: dict[str, Any] = {}
        collapse_step(thread=thread, actor=actor, progress=progress, start_position=start_position,
                      end_position=end_position, summary_text=summary_text, source=source,
                      provenance=provenance, job=job)
    return Collapse.objects.get(pk=progress["collapse"])


def collapse_step(
    *, thread: Thread, actor: Actor, progress: dict[str, Any], start_position: int,
    end_position: int, summary_text: str, source: str = Collapse.Source.PERSON,
    provenance: dict[str, Any] | None = None, limit: int | None = None, job: Job | None = None,
) -> bool:
    """One batch of a collapse: at most `limit` events (None: all); True when it is done. The
    thread is locked; the first batch writes the Summary event (at the range's first position)
    and the Collapse, so its undo brings back whatever was moved."""
    if "collapse" not in progress:
        span = Event.objects.filter(
            thread=thread, status=Event.Status.ACTIVE, position__gte=start_position,
            position__lte=end_position,
        ).aggregate(first=Min("position"), last=Max("position"), count=Count("pk"))
        if not span["count"]:
            raise InvalidInput(f"No active events between positions {start_position} and "
                               f"{end_position}.", code="empty_range",
                               details={"start_position": start_position, "end_position": end_position})
        summary = summary_event(thread, summary_text, span["first"], span["last"], span["count"],
                                timezone.now())
        collapse = Collapse.objects.create(
            thread=thread, start_position=span["first"], end_position=span["last"],
            summary_event=summary, source=source, actor=actor.label[:200], event_count=0,
            tokens_before=0, tokens_after=summary.token_count, provenance=provenance or {}, job=job)
        progress.update(collapse=collapse.pk, summary=summary.pk, total=span["count"])
    collapse = Collapse.objects.get(pk=progress["collapse"])
    if collapse.undone_at is not None:
        raise Conflict("The collapse was undone while it was being done.")
    # Counted and moved by the database (a set-based UPDATE), not row by row in Python.
    members = Event.objects.filter(
        thread=thread, status=Event.Status.ACTIVE, position__gte=collapse.start_position,
        position__lte=collapse.end_position).exclude(pk=progress["summary"])
    count, left = history.events_move(thread=thread, events=members, now=timezone.now(),
                                      entering=False, limit=limit,
                                      status=Event.Status.COLLAPSED, collapse=collapse)
    Collapse.objects.filter(pk=collapse.pk).update(event_count=F("event_count") + count,
                                                   tokens_before=F("tokens_before") + left.tokens)
    progress["done"] = progress.get("done", 0) + count
    if limit is not None and count == limit:
        return False
    collapse.refresh_from_db()
    audit(actor=actor, action="collapse.create", target=collapse, workspace=thread.workspace,
          thread=thread.pk, start_position=collapse.start_position,
          end_position=collapse.end_position, events=collapse.event_count,
          tokens_before=collapse.tokens_before, tokens_after=collapse.tokens_after,
          source=collapse.source, **({"job": str(job.pk)} if job else {}))
    return True


def whole_exchanges(thread: Thread, start_position: int, end_position: int,
                    widen: bool) -> tuple[int, int]:
    """A closed range that splits no tool exchange: as given, widened, or refused."""
    start, end = range_respecting(thread_id=thread.pk, start_position=start_position,
                                  end_position=end_position, widen=widen)
    assert start is not None and end is not None  # a closed range stays closed
    return start, end


def summary_event(thread: Thread, text: str, first: int, last: int, events: int,
                  now: datetime) -> Event:
    """The Summary event of a collapse of `events` events at [first, last], standing at `first`
    (redacted as any stored text). The thread is locked."""
    [raw] = redact_events(use_workspace(thread.workspace), [{
        "type": "Summary", "role": "system", "content": text,
        "data": {"start_position": first, "end_position": last, "events": events}}])
    [summary] = history.events_add(thread=thread, specs=[event_spec(raw, "summary")], now=now,
                                   places=[(first, Event.Status.ACTIVE)])
    return summary


def collapse_undo(*, collapse: Collapse, actor: Actor) -> Collapse:
    """Bring a collapse's originals back; one level at a time (an outer collapse first)."""
    with transaction.atomic():
        thread = lock_thread(collapse.thread, history_only=True)
        no_operation_pending(thread)
        collapse = Collapse.objects.select_related("summary_event").get(pk=collapse.pk)
        if collapse.undone_at is not None:
            raise Conflict("This collapse was already undone.", code="already_undone")
        summary = collapse.summary_event
        if summary.status == Event.Status.COLLAPSED:
            raise Conflict("This summary is inside a newer collapse; undo that one first.",
                           code="nested_collapse", details={"outer_collapse": summary.collapse_id})
        if summary.status != Event.Status.ACTIVE:
            raise Conflict("This summary is no longer in the working context (cleared); "
                           "un-clear first.", code="not_in_context")
        if collapse.expired_count:
            raise Conflict("Retention deleted this collapse's originals; the summary stays.",
                           code="originals_expired", details={"expired": collapse.expired_count})
        members = Event.objects.filter(collapse=collapse)
        entered = history.Moved.counted(members)
        members.update(status=Event.Status.ACTIVE, collapse=None)
        Event.objects.filter(pk=summary.pk).update(status=Event.Status.REVERTED)
        now = timezone.now()
        collapse.undone_at = now
        collapse.save(update_fields=["undone_at"])
        history.working_context_changed(thread=thread, now=now, entered=entered,
                                        left=history.Moved.of([summary]))
        audit(actor=actor, action="collapse.undo", target=collapse, workspace=thread.workspace,
              thread=thread.pk, start_position=collapse.start_position,
              end_position=collapse.end_position)
    return collapse
