"""Nooa's collapse: a range of the working context replaced by one Summary event, undoable."""

from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from contextstore.errors import Conflict, InvalidInput, PayloadTooLarge
from contextstore.models import Collapse, Event, Job, Session, Thread
from contextstore.services.common import Actor, audit, lock_thread
from contextstore.tokens import count_tokens


def collapse_create(
    *, thread: Thread, start_seq: int, end_seq: int, summary_text: str, actor: Actor,
    source: str = Collapse.Source.AGENT, provenance: dict[str, Any] | None = None,
    job: Job | None = None,
) -> Collapse:
    """Replace the active events positioned in [start_seq, end_seq] with one Summary event.

    The originals keep their rows, get status `collapsed` and point to the collapse; the summary
    stands at the first position it replaces. A range may contain earlier summaries (nesting).
    With a job, a second call for the same job returns the first collapse (retries are safe).
    """
    for name, value in (("start_seq", start_seq), ("end_seq", end_seq)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise InvalidInput(f"{name} must be a positive integer.", details={name: value})
    if start_seq > end_seq:
        raise InvalidInput("start_seq must not be after end_seq.",
                           details={"start_seq": start_seq, "end_seq": end_seq})
    if not isinstance(summary_text, str) or not summary_text.strip():
        raise InvalidInput("summary_text is required.", details={"summary_text": "required"})
    limit = settings.CONTEXTSTORE["MAX_EVENT_CONTENT_BYTES"]
    if len(summary_text.encode()) > limit:
        raise PayloadTooLarge(f"summary_text is larger than {limit} bytes.",
                              details={"summary_text": f"at most {limit} bytes"})
    if source not in Collapse.Source.values:
        raise InvalidInput(f"Unknown collapse source {source!r}.")

    with transaction.atomic():
        thread = lock_thread(thread)
        if job is not None:
            existing = Collapse.objects.filter(job=job).first()
            if existing is not None:
                return existing
        members = list(
            Event.objects.filter(thread=thread, status=Event.Status.ACTIVE,
                                 position__gte=start_seq, position__lte=end_seq)
            .order_by("position").only("pk", "position", "token_count", "visible")
        )
        if not members:
            raise InvalidInput(f"No active events between {start_seq} and {end_seq}.",
                               code="empty_range", details={"start_seq": start_seq, "end_seq": end_seq})
        visible = [m for m in members if m.visible]
        tokens_before = sum(m.token_count for m in visible)
        tokens_after = count_tokens(summary_text)
        now = timezone.now()
        seq = thread.last_seq + 1
        summary = Event.objects.create(
            thread=thread, seq=seq, position=members[0].position, type="Summary", role="system",
            content=summary_text, token_count=tokens_after, visible=True, occurred_at=now,
            data={"start_seq": members[0].position, "end_seq": members[-1].position,
                  "events": len(members)},
        )
        collapse = Collapse.objects.create(
            thread=thread, start_seq=members[0].position, end_seq=members[-1].position,
            summary_event=summary, source=source, actor=actor.label[:200],
            event_count=len(members), tokens_before=tokens_before, tokens_after=tokens_after,
            provenance=provenance or {}, job=job,
        )
        Event.objects.filter(pk__in=[m.pk for m in members]).update(
            status=Event.Status.COLLAPSED, collapse=collapse
        )
        Thread.objects.filter(pk=thread.pk).update(
            last_seq=seq, event_count=F("event_count") + 1,
            token_total=F("token_total") + tokens_after,
            active_event_count=F("active_event_count") + 1 - len(visible),
            active_tokens=F("active_tokens") + tokens_after - tokens_before,
            updated_at=now,
        )
        Session.objects.filter(pk=thread.session_id).update(
            event_count=F("event_count") + 1, token_total=F("token_total") + tokens_after,
            last_activity_at=now,
        )
        audit(actor=actor, action="collapse.create", target=collapse, workspace=thread.workspace,
              thread=thread.pk, start_seq=collapse.start_seq, end_seq=collapse.end_seq,
              events=len(members), tokens_before=tokens_before, tokens_after=tokens_after,
              source=source)
    return collapse


def collapse_undo(*, collapse: Collapse, actor: Actor) -> Collapse:
    """Bring a collapse's originals back; one level at a time (an outer collapse first)."""
    with transaction.atomic():
        thread = lock_thread(collapse.thread)
        collapse = Collapse.objects.select_related("summary_event").get(pk=collapse.pk)
        if collapse.undone_at is not None:
            raise Conflict("This collapse was already undone.", code="already_undone")
        summary = collapse.summary_event
        if summary.status == Event.Status.COLLAPSED:
            raise Conflict("This summary is inside a newer collapse; undo that one first.",
                           code="nested_collapse", details={"outer_collapse": summary.collapse_id})
        if summary.status != Event.Status.ACTIVE:
            raise Conflict("This summary is no longer in the working context (cleared).",
                           code="not_in_context")
        members = Event.objects.filter(collapse=collapse)
        tokens = list(members.filter(visible=True).values_list("token_count", flat=True))
        visible_count, visible_tokens = len(tokens), sum(tokens)
        members.update(status=Event.Status.ACTIVE, collapse=None)
        Event.objects.filter(pk=summary.pk).update(status=Event.Status.REVERTED)
        now = timezone.now()
        collapse.undone_at = now
        collapse.save(update_fields=["undone_at"])
        Thread.objects.filter(pk=thread.pk).update(
            active_event_count=F("active_event_count") - 1 + visible_count,
            active_tokens=F("active_tokens") - summary.token_count + visible_tokens,
            updated_at=now,
        )
        audit(actor=actor, action="collapse.undo", target=collapse, workspace=thread.workspace,
              thread=thread.pk, start_seq=collapse.start_seq, end_seq=collapse.end_seq)
    return collapse
